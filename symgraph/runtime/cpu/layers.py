"""Compiled convolution and max pooling for the compiled CPU backend: numba window kernels
(``render_window.py``) around BLAS GEMMs that write into the final layout.

Each function here has its op's numpy reference's signature ``(attrs, inputs, ctx) ->
outputs``; :func:`layer_compute` picks one from the op's lowering data (family, and for
convolutions the ``call``: forward, data or filter) when the node fits, else says why not:

* convolution (2-D, channels first, one group): forward is im2col into per-sample
  ``(C*kh*kw + 1, OH*OW)`` blocks (the last row ones: the bias is a column of the weights)
  and one batched GEMM writing NCHW directly; the data gradient is ``W^T @ dy[n]`` per sample
  into the same blocks, then col2im straight into the NCHW gradient (the numpy reference
  transposes ``dy`` first and accumulates through a padded channel-first copy); the weight
  gradient is one GEMM per batch chunk over ``(C*kh*kw, samples*OH*OW)`` columns (im2col
  writes them in that layout), or, when the columns are smaller than ``dy``, per-sample GEMMs
  summed. Columns live in a reused buffer of about a core's L2 cache per batch chunk.
* max pooling (2-D, windows inside the input) forward and backward: one pass over each
  plane with the window unrolled (the numpy reference makes a pass per kernel offset, and
  its backward a compare and a mask per offset).

Where oneDNN is installed, float32 convolutions and the pooling windows these kernels do not
take (padded, average) run through it instead (``layers_onednn.py``); :func:`layer_compute`
chooses.

Work is split over the backend's threads by samples or planes (``pool.run_split``); the GEMMs
use BLAS's threads, which the program sets to the same budget.

Example::

    >>> import numpy as np
    >>> from symgraph.core.attrs import parse_attrs
    >>> from symgraph.core.registry import get_op
    >>> a = parse_attrs(get_op("Pooling").params, {"kernel": (2, 2), "stride": (2, 2)}, "")
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> max_pool(a, [x], None)[0].ravel().tolist()
    [5.0, 7.0, 13.0, 15.0]
"""
from __future__ import annotations

import threading
from functools import lru_cache
from math import prod
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...compiler.ops.conv import channel_last, conv_window
from ...compiler.ops.pool import pool_window
from ...core.attrs import Attrs
from ...core.registry import OpDef, RunCtx
from ..cuda.actions import lowering_of
from .group import compute_dtype
from .kernels import load
from .layers_onednn import DNNL, IM2COL, dnnl_pool, pool_fits, stored_shape, why_not_conv
from .norm import batch_norm, why_not_batch_norm
from .pool import run_split
from .render_window import (padded_plane, render_col2im, render_im2col,
                            render_pool_backward, render_pool_forward, why_not_window)

Compute = Callable[[Attrs, list, Optional[RunCtx]], list]

CHUNK_ELEMENTS = 1 << 18
"""Column elements per batch chunk (1 MiB of float32, about a core's L2 cache): the GEMM
reads the columns while they are still in cache (the seed CNN's conv2 took 5 % less than
with 8 MiB chunks), and they stay one reused buffer however large the batch."""


def _chunks(n: int, per_sample: int) -> list[tuple[int, int]]:
    """(start, count) of batch chunks holding about CHUNK_ELEMENTS column elements each."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_sample))
    return [(s, min(step, n - s)) for s in range(0, n, step)]


def _largest(parts: list[tuple[int, int]]) -> int:
    """Samples in the largest chunk (0 for an empty batch)."""
    return max((m for _, m in parts), default=0)


def _geometry(g: Any) -> tuple[int, ...]:
    """(kh, kw, sh, sw, ph, pw, dh, dw): what a window kernel is rendered for."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = g.kernel, g.stride, g.pad, g.dilate
    return (kh, kw, sh, sw, ph, pw, dh, dw)


@lru_cache(maxsize=256)
def _window_kernel(kind: str, geometry: tuple, dtype: str) -> Callable:
    """The loaded window kernel ``kind`` (im2col or col2im) of one geometry."""
    if kind == "col2im":
        return load(render_col2im(geometry, dtype))
    return load(render_im2col(geometry, dtype))


def _pads(g: Any, x_shape: tuple, m: int, dtype: np.dtype, zeroed: bool) -> np.ndarray:
    """``m`` padded planes (``render_window.padded_plane``) for a window kernel: one per
    sample, so threads on different samples share none."""
    rows, cols = padded_plane(_geometry(g), x_shape[2:], tuple(g.out))
    out = scratch("pads", m * rows * cols, dtype).reshape(m, rows, cols)
    if zeroed:
        out.fill(0)
    return out


def _im2col(g: Any, x: np.ndarray, cols: np.ndarray, rows_first: bool, ones: bool) -> None:
    """``render_im2col``'s kernel over the samples of ``x`` into the flat buffer ``cols``:
    per-sample ``(R, OH, OW)`` blocks, or ``rows_first`` ``(R, samples, OH, OW)``; ``ones``:
    with the row of ones last (R = C*kh*kw + 1)."""
    m, out = x.shape[0], tuple(g.out)
    rows = x.shape[1] * prod(g.kernel) + (1 if ones else 0)
    view = cols.reshape(((rows, m) if rows_first else (m, rows)) + out)
    run_split(_window_kernel("im2col", _geometry(g), x.dtype.name), m, cols.size,
              [x, view, _pads(g, x.shape, m, x.dtype, True), rows_first, ones])


def _pointwise(g: Any) -> bool:
    """A 1x1, stride-1, unpadded convolution: its columns are the data itself."""
    return g.kernel == (1, 1) and g.stride == (1, 1) and g.pad == (0, 0)


_SCRATCH = threading.local()


def scratch(key: str, size: int, dtype: np.dtype) -> np.ndarray:
    """A flat buffer of at least ``size`` elements, kept per thread and ``key`` between
    calls, so a convolution does not allocate (and, past glibc's mmap threshold, page-fault)
    its columns again on every step. Only this module's functions use it, and none returns
    it."""
    held = _SCRATCH.__dict__.setdefault("buffers", {})
    buf = held.get((key, dtype))
    if buf is None or buf.size < size:
        buf = held[(key, dtype)] = np.empty(size, dtype)
    return buf[:size]


def conv_forward(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """Convolution (NCHW data, O,C,kh,kw weights, optional bias). The bias is a column of
    the weights times a row of ones in the columns: a separate pass adding it over the output
    took as long as the seed CNN's whole conv1 (0.6 ms at batch 64)."""
    x, w = np.ascontiguousarray(xs[0]), xs[1]
    g = conv_window(a, x.shape)
    n, o, p = x.shape[0], w.shape[0], prod(g.out)
    y = np.empty((n, o) + tuple(g.out), x.dtype)
    if _pointwise(g) and len(xs) == 2:
        np.matmul(w.reshape(o, -1).astype(x.dtype, copy=False), x.reshape(n, -1, p),
                  out=y.reshape(n, o, p))
        return [y]
    ck = w[0].size + 1
    w2 = np.empty((o, ck), x.dtype)
    w2[:, :-1] = w.reshape(o, -1)
    w2[:, -1] = xs[2] if len(xs) > 2 else 0  # (one kernel whether or not there is a bias)
    parts = _chunks(n, ck * p)
    flat = scratch("cols", _largest(parts) * ck * p, x.dtype)
    for s, m in parts:
        cols = flat[:m * ck * p]
        _im2col(g, x[s:s + m], cols, False, True)
        np.matmul(w2, cols.reshape(m, ck, p), out=y[s:s + m].reshape(m, o, p))
    return [y]


def conv_data(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """Gradient of the convolution with respect to its data (``data`` gives the shape)."""
    dy, w, x = np.ascontiguousarray(xs[0]), xs[1], xs[2]
    g = conv_window(a, x.shape)
    n, o, p = dy.shape[0], w.shape[0], prod(g.out)
    ck = w[0].size
    wt = np.ascontiguousarray(w.reshape(o, ck).T, dy.dtype)
    dx = np.empty(x.shape, dy.dtype)
    if _pointwise(g):
        np.matmul(wt, dy.reshape(n, o, p), out=dx.reshape(n, ck, p))
        return [dx]
    parts = _chunks(n, ck * p)
    flat = scratch("cols", _largest(parts) * ck * p, dy.dtype)
    for s, m in parts:
        cols = flat[:m * ck * p].reshape((m, ck) + tuple(g.out))
        np.matmul(wt, dy[s:s + m].reshape(m, o, p), out=cols.reshape(m, ck, p))
        run_split(_window_kernel("col2im", _geometry(g), dy.dtype.name), m, m * ck * p,
                  [cols, dx[s:s + m], _pads(g, x.shape, m, dy.dtype, False)])
    return [dx]


def conv_weight(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """Gradient of the convolution with respect to its weights."""
    dy, x = np.ascontiguousarray(xs[0]), np.ascontiguousarray(xs[1])
    g = conv_window(a, x.shape)
    o, c, ck = dy.shape[1], x.shape[1], x.shape[1] * prod(g.kernel)
    dw = (_weight_by_samples if ck < o else _weight_one_gemm)(dy, x, g)
    return [dw.reshape((o, c) + tuple(g.kernel))]


def _weight_one_gemm(dy: np.ndarray, x: np.ndarray, g: Any) -> np.ndarray:
    """``dW^T = cols @ dy^T`` over a chunk's samples at once, with ``dy`` transposed to
    ``(O, samples, pixels)`` (transposed: the GEMM ran 10 % faster this way round)."""
    n, o, p = dy.shape[0], dy.shape[1], prod(g.out)
    ck = x.shape[1] * prod(g.kernel)
    dwt = np.zeros((ck, o), dy.dtype)  # (zeros: an empty batch has no chunk)
    parts = _chunks(n, ck * p)
    flat = scratch("cols", _largest(parts) * ck * p, dy.dtype)
    flat_dy = scratch("ograd", _largest(parts) * o * p, dy.dtype)
    part = np.empty((ck, o), dy.dtype) if len(parts) > 1 else dwt
    for k, (s, m) in enumerate(parts):
        cols = flat[:ck * m * p]  # (C*kh*kw, samples, pixels): one GEMM operand
        _im2col(g, x[s:s + m], cols, True, False)
        dyt = flat_dy[:o * m * p].reshape(o, m, p)
        np.copyto(dyt, dy[s:s + m].reshape(m, o, p).transpose(1, 0, 2))
        np.matmul(cols.reshape(ck, m * p), dyt.reshape(o, m * p).T,
                  out=dwt if k == 0 else part)
        if k:
            dwt += part
    return np.ascontiguousarray(dwt.T)


def _weight_by_samples(dy: np.ndarray, x: np.ndarray, g: Any) -> np.ndarray:
    """``dW = sum_s dy[s] @ cols[s]^T``: for columns smaller than ``dy`` (few input
    channels: the seed CNN's conv1 has 9 rows for 32 filters), where transposing ``dy`` cost
    more than the GEMM (2.2 ms against 0.65 ms at batch 64)."""
    n, o, p = dy.shape[0], dy.shape[1], prod(g.out)
    ck = x.shape[1] * prod(g.kernel) + 1  # the forward's columns: its kernel, no other
    dw = np.zeros((o, ck), dy.dtype)
    parts = _chunks(n, ck * p)
    flat = scratch("cols", _largest(parts) * ck * p, dy.dtype)
    for s, m in parts:
        cols = flat[:m * ck * p]
        _im2col(g, x[s:s + m], cols, False, True)
        dw += np.matmul(dy[s:s + m].reshape(m, o, p), cols.reshape(m, ck, p).transpose(
            0, 2, 1)).sum(axis=0)
    return dw[:, :-1]  # (the last column, against the ones, is the bias gradient)


@lru_cache(maxsize=256)
def _pool_kernel(kernel: tuple, stride: tuple, dtype: str, backward: bool, cover: bool,
                 last: bool, mask: bool = False) -> Callable:
    """The loaded max-pooling kernel of one window geometry (``render_window``)."""
    if backward:
        return load(render_pool_backward(kernel, stride, dtype, cover, last, mask))
    return load(render_pool_forward(kernel, stride, dtype, last))


def _outer(v: np.ndarray, last: bool) -> np.ndarray:
    """``v`` as the kernels' outer axis of planes (NCHW: ``N*C`` planes of H x W) or, with the
    channels last, of samples (NHWC as it is)."""
    return v if last else v.reshape((v.shape[0] * v.shape[1],) + v.shape[2:])


def max_pool(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """Max pooling over the two spatial axes (NCHW or NHWC)."""
    x = np.ascontiguousarray(xs[0])
    g = pool_window(a, x.shape)
    last = g.channel_last
    y = np.empty(stored_shape((g.n, g.c) + tuple(g.out), g), x.dtype)
    kernel = _pool_kernel(g.kernel, g.stride, x.dtype.name, False, False, last)
    xo, yo = _outer(x, last), _outer(y, last)
    run_split(kernel, len(xo), x.size, [xo, yo])
    return [y]


def max_pool_grad(a: Attrs, xs: list, ctx: Optional[RunCtx], mask: bool = False) -> list:
    """Gradient of max pooling with respect to its data: ``(dy, x, y) -> dx``; ``mask``: times
    ``x > 0`` (the ReLU whose output ``x`` is) in the same pass."""
    dy, x, y = (np.ascontiguousarray(v) for v in xs[:3])
    g = pool_window(a, x.shape)
    last = g.channel_last
    cover = g.kernel == g.stride and all(
        o * k == n for o, k, n in zip(g.out, g.kernel, g.spatial))
    dx = np.empty(x.shape, dy.dtype) if cover or not last else np.zeros(x.shape, dy.dtype)
    kernel = _pool_kernel(g.kernel, g.stride, dy.dtype.name, True, cover, last, mask)
    views = [_outer(v, last) for v in (dy, x, y, dx)]
    run_split(kernel, len(views[0]), x.size, views)
    return [dx]


def max_pool_grad_relu(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """:func:`max_pool_grad` times ``x > 0`` in one pass (a fused group that
    :func:`absorbs_relu_mask`)."""
    return max_pool_grad(a, xs, ctx, mask=True)


def absorbs_relu_mask(head: Optional[Compute], exprs: Sequence[Any], inputs: Sequence[int],
                      n_head: int) -> bool:
    """Whether a fused group of head ``head`` (its compute), formulas ``exprs`` and input
    slots ``inputs`` (the head's ``n_head`` first) is max pooling's gradient times ``x > 0``
    of the pooled ``x`` itself (a ReLU's gradient from its output), which
    :func:`max_pool_grad_relu` computes in one pass."""
    if head is not max_pool_grad or len(exprs) != 1 or len(inputs) != n_head + 1:
        return False
    e = exprs[0]
    if e.op != "mul" or len(e.args) != 2:
        return False
    grad, test = e.args if e.args[0].op == "input" else e.args[::-1]
    return (grad.op == "input" and int(grad.value) == 0 and test.op == "gt"
            and test.args[0].op == "input" and int(test.args[0].value) == 1
            and test.args[1].op == "const" and float(test.args[1].value) == 0.0
            and inputs[n_head] == inputs[1])


def _why_not_conv(a: Attrs, shapes: Sequence[tuple]) -> str:
    if len(a["kernel"]) != 2:
        return f"{len(a['kernel'])}-D convolution (compiled: 2-D)"
    if a["num_group"] != 1:
        return f"num_group={a['num_group']} (compiled: 1)"
    return ""


def _why_not_pool(a: Attrs, shapes: Sequence[tuple]) -> str:
    if a["pool_type"] != "max":
        return f"pool_type={a['pool_type']!r} (compiled: max)"
    data = tuple(shapes[0] if len(shapes) == 1 else shapes[1])  # (ograd, data, output)
    if len(data) != 4:
        return f"{len(data) - 2}-D pooling (compiled: 2-D)"
    g = pool_window(a, data)
    return why_not_window(g.kernel, g.stride, g.pad, g.spatial, g.out)


IM2COL.update(forward=conv_forward, data=conv_data, filter=conv_weight)

# (lowering family, its "call" parameter) -> (why a node cannot compile, compute function)
LAYERS: dict[tuple[str, Optional[str]], tuple[Callable[[Attrs, Sequence[tuple]], str],
                                               Compute]] = {
    ("convolution", "forward"): (_why_not_conv, conv_forward),
    ("convolution", "data"): (_why_not_conv, conv_data),
    ("convolution", "filter"): (_why_not_conv, conv_weight),
    ("pooling", None): (_why_not_pool, max_pool),
    ("pooling_backward", None): (_why_not_pool, max_pool_grad),
    ("batch_norm", None): (why_not_batch_norm, batch_norm),
}


def layer_compute(family: str, params: dict, attrs: Attrs, shapes: Sequence[tuple],
                  dtypes: Sequence[np.dtype]) -> tuple[Optional[Compute], str]:
    """The compiled compute function of a node of lowering ``(family, params)``, attributes
    ``attrs``, input shapes ``shapes`` and dtypes ``dtypes``, or None and why it runs the
    numpy reference."""
    found = LAYERS.get((family, params.get("call")))
    if params.get("transposed"):  # Deconvolution's calls: data and weights swap roles
        return None, f"transposed {family!r} (compiled: Convolution's calls)"
    if found is None:
        return None, f"no compiled {family!r} kernels"
    kinds = sorted({np.dtype(d).name for d in dtypes})
    if len(kinds) != 1 or compute_dtype(np.dtype(kinds[0])) is None:
        return None, f"dtypes {kinds} (compiled: one of float32, float64, float16/bfloat16)"
    why = found[0](attrs, shapes)
    if why and family == "pooling" and pool_fits(attrs, shapes, dtypes):
        return dnnl_pool, ""  # (the unrolled max kernels, where they fit, are faster)
    if why:
        return None, why
    call = params.get("call")
    if family == "convolution":
        why = why_not_conv(attrs, call, shapes, dtypes)
        if not why:
            return DNNL[call], ""
        if channel_last(attrs):  # im2col's kernels are channels first
            return None, f"layout {attrs['layout']} (compiled: through oneDNN, and {why})"
    return found[1], ""


def op_layer(op: OpDef, attrs: Attrs, shapes: Sequence[tuple], dtypes: Sequence[np.dtype]
             ) -> tuple[Optional[Compute], str]:
    """:func:`layer_compute` of a node of op ``op``."""
    family, params = lowering_of(op)
    return layer_compute(family, params, attrs, shapes, dtypes)
