"""The compiled CPU backend's layers through oneDNN (``onednn.py``): float32 2-D convolutions
(forward, with the bias and optionally a ReLU applied as it writes; data and weight gradients)
and the pooling windows the unrolled kernels of ``layers.py`` do not take (padded, average,
global). Each function has its op's numpy reference's signature ``(attrs, inputs, ctx) ->
outputs``; ``layers.layer_compute`` picks them where the ``why_not`` functions here return ''.

Example::

    >>> import numpy as np
    >>> from symgraph.core.attrs import parse_attrs
    >>> from symgraph.core.registry import get_op
    >>> a = parse_attrs(get_op("Pooling").params, {"kernel": (3, 3), "stride": (2, 2),
    ...                                            "pad": (1, 1)}, "")
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> if not onednn.why_not():  # the onednn-cpu-gomp wheel is installed
    ...     assert dnnl_pool(a, [x], None)[0].ravel().tolist() == [5.0, 7.0, 13.0, 15.0]
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...compiler.ops.conv import channel_last, conv_window, to_last
from ...compiler.ops.pool import pool_window
from ...core.attrs import Attrs
from ...core.registry import RunCtx, get_op
from ..backend.threads import cpu_threads
from . import onednn

Compute = Callable[[Attrs, list, Optional[RunCtx]], list]

IM2COL: dict[str, Compute] = {}
"""The backend's own convolution calls by ``call`` (``layers.py`` fills it: it imports this
module), for a process where oneDNN can no longer run."""
REFERENCE = {"forward": "Convolution", "data": "_backward_Convolution_data",
             "filter": "_backward_Convolution_weight"}
"""The op whose numpy reference computes each call (channels-last data, where oneDNN can no
longer run: im2col's kernels are channels first)."""


def _without_dnnl(call: str, a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """``call`` where oneDNN cannot run any more (a forked child: ``onednn.library``)."""
    if channel_last(a):
        return get_op(REFERENCE[call]).compute(a, xs, ctx)
    return IM2COL[call](a, xs, ctx)


def _dnnl_call(call: str, g: Any, bias: bool, arrays: dict, relu: bool = False) -> None:
    """Run oneDNN's ``call`` of window ``g`` on ``arrays``."""
    onednn.set_threads(cpu_threads())
    onednn.primitive(call, g.input_shape, g.weight_shape, g.output_shape, g.stride, g.pad,
                     g.dilate, bias, relu, g.channel_last)(arrays)


def stored_shape(shape: tuple, g: Any) -> tuple:
    """A channels-first ``shape`` as window ``g``'s arrays hold it."""
    return to_last(shape) if g.channel_last else shape


def dnnl_forward(a: Attrs, xs: list, ctx: Optional[RunCtx], relu: bool = False) -> list:
    """:func:`conv_forward` through oneDNN (float32); ``relu``: then max(y, 0), applied as
    oneDNN writes the output (the separate pass cost the seed CNN's conv2 0.8 ms of 5.6).
    Where oneDNN cannot run any more (a forked child: ``onednn.library``), im2col's (channels
    last: the numpy reference's)."""
    if onednn.library() is None:
        y = _without_dnnl("forward", a, xs, ctx)[0]
        return [np.maximum(y, 0, out=y) if relu else y]
    x, w = np.ascontiguousarray(xs[0]), np.ascontiguousarray(xs[1])
    g = conv_window(a, x.shape)
    y = np.empty(stored_shape(g.output_shape, g), x.dtype)
    arrays = {"src": x, "weights": w, "dst": y}
    if len(xs) > 2:
        arrays["bias"] = np.ascontiguousarray(xs[2])
    _dnnl_call("forward", g, len(xs) > 2, arrays, relu)
    return [y]


def dnnl_forward_relu(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """:func:`dnnl_forward` followed by max(y, 0) in the same pass."""
    return dnnl_forward(a, xs, ctx, relu=True)


def dnnl_data(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """:func:`conv_data` through oneDNN (float32; :func:`_without_dnnl` where it cannot run)."""
    if onednn.library() is None:
        return _without_dnnl("data", a, xs, ctx)
    dy, w, shape = np.ascontiguousarray(xs[0]), np.ascontiguousarray(xs[1]), xs[2].shape
    g = conv_window(a, shape)
    dx = np.empty(shape, dy.dtype)
    _dnnl_call("data", g, False, {"diff_dst": dy, "weights": w, "diff_src": dx})
    return [dx]


def dnnl_weight(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """:func:`conv_weight` through oneDNN (float32; :func:`_without_dnnl` where it cannot
    run)."""
    if onednn.library() is None:
        return _without_dnnl("filter", a, xs, ctx)
    dy, x = np.ascontiguousarray(xs[0]), np.ascontiguousarray(xs[1])
    g = conv_window(a, x.shape)
    dw = np.empty(stored_shape(g.weight_shape, g), dy.dtype)
    _dnnl_call("filter", g, False, {"diff_dst": dy, "src": x, "diff_weights": dw})
    return [dw]


def _dnnl_pool_kind(g: Any) -> str:
    """oneDNN's pooling algorithm for window ``g`` (``pool_window``), or '' where it has none
    that counts as MXNet does."""
    if g.kind == "max":
        return "max"
    if g.kind != "avg":
        return ""
    if not g.include_pad:
        return "avg_exclude"
    # MXNet's divisor counts the cells inside the padded input, oneDNN's the whole kernel:
    # the same where no window reaches past the padding ('full' convention's last window)
    return "avg" if g.after == g.pad else ""


def dnnl_pool(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """Max or average pooling (2-D, NCHW or NHWC, float32, any padding) through oneDNN (the
    numpy reference where oneDNN cannot run)."""
    if onednn.library() is None:
        return get_op("Pooling").compute(a, xs, ctx)
    x = np.ascontiguousarray(xs[0])
    g = pool_window(a, x.shape)
    x_shape, y_shape = (g.n, g.c) + tuple(g.spatial), (g.n, g.c) + tuple(g.out)
    y = np.empty(stored_shape(y_shape, g), x.dtype)
    onednn.set_threads(cpu_threads())
    onednn.pooling(_dnnl_pool_kind(g), x_shape, y_shape, g.kernel, g.stride, g.pad,
                   g.channel_last)({"src": x, "dst": y})
    return [y]


DNNL = {"forward": dnnl_forward, "data": dnnl_data, "filter": dnnl_weight}


def absorbs_relu(head: Optional[Compute], exprs: Sequence[Any], n_inputs: int) -> bool:
    """Whether a fused group of head ``head`` (its compute function), formulas ``exprs`` and
    ``n_inputs`` inputs in all is oneDNN's forward and then ``max(head, 0)`` alone, which
    :func:`dnnl_forward_relu` computes in one pass."""
    if head is not dnnl_forward or len(exprs) != 1:
        return False
    e = exprs[0]
    return (e.op == "max" and len(e.args) == 2 and e.args[0].op == "input"
            and int(e.args[0].value) == 0 and e.args[1].op == "const"
            and float(e.args[1].value) == 0.0 and n_inputs == 0)


def why_not_conv(a: Attrs, call: str, shapes: Sequence[tuple], dtypes: Sequence[np.dtype]
                 ) -> str:
    """Why a 2-D convolution that compiles cannot run through oneDNN ('' when it can)."""
    if any(np.dtype(d) != np.float32 for d in dtypes):
        return "oneDNN's convolutions here are float32"
    data = tuple(shapes[1] if call == "filter" else shapes[2] if call == "data" else shapes[0])
    g = conv_window(a, data)
    if 0 in g.input_shape or 0 in g.output_shape:
        return "an empty array (im2col's loops run none)"
    if call == "filter" and g.ckk < g.filters and not g.channel_last:
        # im2col's per-sample GEMMs (_weight_by_samples): the seed CNN's conv1 (9 column
        # rows, 32 filters) took 0.64 ms there against oneDNN's 1.15 at batch 64
        return "fewer column rows than filters (im2col's per-sample weight gradient)"
    return onednn.why_not()


def pool_fits(attrs: Attrs, shapes: Sequence[tuple], dtypes: Sequence[np.dtype]) -> bool:
    """Whether a Pooling node of these attributes, data shape and dtype runs :func:`dnnl_pool`
    (2-D NCHW or NHWC float32 max or average, not empty)."""
    if onednn.why_not() or any(np.dtype(d) != np.float32 for d in dtypes) \
            or len(shapes[0]) != 4:
        return False
    g = pool_window(attrs, tuple(shapes[0]))
    return bool(_dnnl_pool_kind(g)) and 0 not in shapes[0] and 0 not in g.out

