"""One geometry object per window node, from the op to the kernel templates and cuDNN (no GPU).

The op's shape rule makes a node's window (``ops/geometry.py``) once per (attrs, data shape);
the numpy reference, the lowering, the C templates and cuDNN's descriptors get that object.
Checked here: how many windows a bind and a lowering make, that the templates and ``ConvCall``
hold the very object the op made, that output sizes agree with MXNet 1.9.1 and with the
textbook formula, and that cuDNN's descriptors carry the shapes the numpy run produces.
"""
from __future__ import annotations

import ctypes
import json
import subprocess
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import symgraph as sg
from symgraph.runtime.cuda import cudnn, lowering_conv, lowering_pool
from symgraph.runtime.cuda.actions import ConvCall, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.compiler.ops.conv import conv_window
from symgraph.compiler.ops.conv_act_pool import cap_window
from symgraph.compiler.ops.deconv import deconv_window
from symgraph.compiler.ops.pool import pool_window

S = sg.sym
MXNET_PYTHON = Path("/tmp/mxvenv/bin/python")
CACHES = (conv_window, deconv_window, pool_window, cap_window)


def _net() -> Any:
    """1-D, 2-D (grouped, dilated) and 3-D convolutions, a Deconvolution with target_shape,
    and max / avg pooling, in one training graph."""
    x1, x2, x3 = S.var("x1"), S.var("x2"), S.var("x3")
    a = S.Convolution(x1, kernel=(3,), stride=(2,), pad=(1,), num_filter=4, name="c1")
    b = S.Convolution(x2, kernel=(3, 3), dilate=(2, 1), pad=(1, 1), num_filter=4,
                      num_group=2, name="c2")
    b = S.Pooling(b, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p2")
    b = S.Deconvolution(b, kernel=(3, 3), stride=(2, 2), target_shape=(4, 8), num_filter=2,
                        name="d2")
    b = S.Pooling(b, kernel=(3, 2), stride=(1, 2), pad=(1, 0), pool_type="avg", name="q2")
    c = S.Convolution(x3, kernel=(2, 2, 2), num_filter=3, no_bias=True, name="c3")
    return S.Group([S.MakeLoss(S.sum(a)), S.MakeLoss(S.sum(b)), S.MakeLoss(S.sum(c))])


SHAPES = {"x1": (2, 3, 9), "x2": (2, 4, 7, 8), "x3": (1, 2, 4, 3, 5)}


def _lowered() -> tuple[Any, list]:
    exe = _net().simple_bind(sg.cpu(), **SHAPES)
    acts = [a for sch in (exe._infer.schedule, exe._train.schedule)
            for step in lower_schedule(sch, 132).actions for a in flat_actions(step)]
    return exe, acts


def test_one_window_per_node() -> None:
    """A bind, a training step on the CPU and lowering both programs for the GPU make each
    layer's window once (the gradient ops of a layer share its attrs and data shape)."""
    for fn in CACHES:
        fn.cache_clear()
    exe, acts = _lowered()
    exe.forward(is_train=True)
    exe.backward()
    assert conv_window.cache_info().misses == 3   # c1, c2, c3
    assert deconv_window.cache_info().misses == 1  # d2
    assert pool_window.cache_info().misses == 2    # p2, q2
    assert conv_window.cache_info().hits > 3 and pool_window.cache_info().hits > 2


def test_templates_and_cudnn_get_the_op_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The object a kernel template renders from and a ConvCall carries is the op's own."""
    seen: list = []

    def spy(module: Any, name: str) -> None:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda g, *a, **k: seen.append(g) or real(g, *a, **k))
    for name in ("render_im2col", "render_col2im"):
        spy(lowering_conv, name)
    for name in ("render_pool", "render_pool_backward", "render_pool_backward_tiles"):
        spy(lowering_pool, name)
    _, acts = _lowered()
    calls = [a.geometry for a in acts if isinstance(a, ConvCall)]
    windows = {id(conv_window(n.attrs, s)) for n, s in _conv_nodes()}
    windows |= {id(deconv_window(n.attrs, s)[0]) for n, s in _conv_nodes(deconv=True)}
    pools = {id(pool_window(n.attrs, s)) for n, s in _pool_nodes()}
    assert len(calls) == 4 + 4 * 3  # inference: 4 forward calls; training: 3 per layer
    assert {id(g) for g in calls} == windows
    assert seen and {id(g) for g in seen} <= windows | pools
    assert pools <= {id(g) for g in seen}


def _conv_nodes(deconv: bool = False) -> list:
    """(node, data shape) of the forward convolution-like layers of :func:`_net`."""
    exe = _net().simple_bind(sg.cpu(), **SHAPES)
    shapes = exe._train.schedule
    out = []
    for step in shapes.steps:
        node = step.node
        if node.op == ("Deconvolution" if deconv else "Convolution"):
            out.append((node, tuple(shapes.shapes[step.inputs[0]])))
    return out


def _pool_nodes() -> list:
    exe = _net().simple_bind(sg.cpu(), **SHAPES)
    sch = exe._train.schedule
    return [(st.node, tuple(sch.shapes[st.inputs[0]])) for st in sch.steps
            if st.node.op == "Pooling"]


CONV_CASES = [  # data, kernel, stride, pad, dilate, num_filter, num_group
    ((2, 3, 11), (3,), (2,), (1,), (2,), 4, 1),
    ((1, 4, 9, 10), (3, 2), (2, 3), (1, 0), (1, 2), 6, 2),
    ((1, 2, 5, 6, 7), (2, 3, 2), (1, 2, 3), (0, 1, 1), (2, 1, 1), 3, 1),
]
DECONV_CASES = [  # data, kernel, stride, pad, adj, target_shape, num_filter
    ((2, 3, 5, 4), (3, 3), (2, 2), (1, 0), (1, 0), (), 4),
    ((1, 2, 5, 6), (3, 4), (2, 3), (0, 0), (), (10, 17), 3),
    ((1, 2, 7), (4,), (3,), (2,), (2,), (), 2),
]
POOL_CASES = [  # data, kernel, stride, pad, convention, global
    ((2, 3, 9, 10), (3, 3), (2, 2), (1, 1), "full", False),
    ((2, 3, 9, 10), (3, 2), (2, 3), (0, 1), "valid", False),
    ((1, 2, 7), (3,), (2,), (1,), "full", False),
    ((1, 2, 5, 6, 7), (2, 2, 3), (2, 1, 2), (0, 1, 1), "valid", False),
    ((2, 3, 5, 6), (1, 1), (1, 1), (0, 0), "valid", True),
]


def _conv_attrs(case: tuple) -> dict:
    _, kernel, stride, pad, dilate, nf, groups = case
    return dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=nf,
                num_group=groups)


def _deconv_attrs(case: tuple) -> dict:
    _, kernel, stride, pad, adj, target, nf = case
    return dict(kernel=kernel, stride=stride, pad=pad, adj=adj or (0,) * len(kernel),
                target_shape=target, num_filter=nf)


def _pool_attrs(case: tuple) -> dict:
    _, kernel, stride, pad, conv, glob = case
    return dict(kernel=kernel, stride=stride, pad=pad, pooling_convention=conv,
                global_pool=glob, pool_type="max")


def _node_attrs(op: str, attrs: dict) -> Any:
    """The parsed attrs of an ``op`` node built by sg.sym with ``attrs``."""
    sym = getattr(S, op)(S.var("x"), name="n", **attrs)
    return sym.outputs_[0].node.attrs


MXNET_SCRIPT = r"""
import json, sys, mxnet as mx
cases = json.loads(sys.stdin.read())
out = []
for op, data, attrs in cases:
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}
    if op == "Deconvolution" and not attrs.get("target_shape"):
        attrs.pop("target_shape", None)
    sym = getattr(mx.sym, op)(mx.sym.var("x"), name="n", **attrs)
    _, shapes, _ = sym.infer_shape(x=tuple(data))
    out.append(list(shapes[0]))
print(json.dumps(out))
"""


def _mxnet_shapes(cases: list) -> list:
    res = subprocess.run([str(MXNET_PYTHON), "-c", MXNET_SCRIPT], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=300, check=True)
    return [tuple(s) for s in json.loads(res.stdout.strip().splitlines()[-1])]


def _our_shapes() -> tuple[list, list]:
    """(cases for MXNet, the output shapes symgraph's windows give for them)."""
    cases, ours = [], []
    for case in CONV_CASES:
        a = _conv_attrs(case)
        g = conv_window(_node_attrs("Convolution", a), case[0])
        cases.append(("Convolution", case[0], a))
        ours.append((g.n, g.filters) + g.out)
    for case in DECONV_CASES:
        a = _deconv_attrs(case)
        g, _ = deconv_window(_node_attrs("Deconvolution", a), case[0])
        cases.append(("Deconvolution", case[0], a))
        ours.append((g.n, g.c) + g.spatial)  # the deconvolution's output: its conv's input
    for case in POOL_CASES:
        a = _pool_attrs(case)
        g = pool_window(_node_attrs("Pooling", a), case[0])
        cases.append(("Pooling", case[0], a))
        ours.append((g.n, g.c) + g.out)
    return cases, ours


@pytest.mark.skipif(not MXNET_PYTHON.exists(), reason="MXNet 1.9.1 venv not present")
def test_window_sizes_match_mxnet() -> None:
    cases, ours = _our_shapes()
    assert ours == _mxnet_shapes(cases)


def test_conv_window_follows_the_textbook_formula() -> None:
    """out = floor((in + 2 pad - dilate (kernel - 1) - 1) / stride) + 1 per axis, and the
    per-axis (depth, height, width) view the templates read pads 1-D and 2-D with unit axes."""
    for case in CONV_CASES:
        data, kernel, stride, pad, dilate, nf, groups = case
        g = conv_window(_node_attrs("Convolution", _conv_attrs(case)), data)
        want = tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                     for i, k, s, p, d in zip(data[2:], kernel, stride, pad, dilate))
        assert g.out == want and (g.n, g.c, g.filters, g.groups) == (data[0], data[1], nf,
                                                                     groups)
        lead = 3 - len(kernel)
        assert (g.d, g.h, g.w) == (1,) * lead + data[2:]
        assert (g.kd, g.kh, g.kw) == (1,) * lead + kernel
        assert (g.pd, g.ph, g.pw) == (0,) * lead + pad
        assert (g.od, g.oh, g.ow) == (1,) * lead + want


class _FakeCudnn:
    """A stand-in for libcudnn: records descriptor settings; every Find reports one working
    algorithm; every call succeeds."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> int:
            self.calls.append((name, args))
            if name.startswith("cudnnFind") or name.endswith("Algorithm_v7"):
                args[-2]._obj.value = 1  # returned algorithm count; perf[0].status is 0
            return 0
        fn = mock.MagicMock(side_effect=call)
        setattr(self, name, fn)
        return fn

    def dims(self, name: str) -> list[list[int]]:
        """The int arrays given to each ``name`` call (dimensions, pads, strides...)."""
        return [[list(a) for a in args if isinstance(a, ctypes.Array)]
                for n, args in self.calls if n == name]


def test_cudnn_descriptors_carry_the_numpy_shapes(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Any) -> None:
    """Each convolution's cuDNN plan is set up from its ConvCall's window alone; its tensor,
    filter and convolution descriptors hold the shapes of the arrays the numpy run makes
    (1-D layers with a unit height, as cuDNN needs 4-D descriptors)."""
    exe, acts = _lowered()
    exe.forward(is_train=True)
    exe.backward()
    lift = {3: lambda s: s[:2] + (1,) + s[2:]}
    shape = {k: lift.get(len(v.shape), lambda s: s)(tuple(v.shape))
             for k, v in exe.arg_dict.items()}
    y = {n: lift.get(len(o.shape), lambda s: s)(tuple(o.shape))
         for n, o in zip(("c1", "c3"), _layer_outputs(exe))}
    want = {  # (x, y, w) descriptor dims and (pad, stride, dilate) of each fwd/data/filter call
        "c1": ([shape["x1"], y["c1"], shape["c1_weight"]], [[0, 1], [1, 2], [1, 1]]),
        "c3": ([shape["x3"], y["c3"], shape["c3_weight"]], [[0, 0, 0], [1, 1, 1], [1, 1, 1]]),
        # d2's convolution: input = d2's output (2, 2, 4, 8), output = d2's data (2, 4, 2, 4);
        # target_shape (4, 8): natural (5, 9), total (1, 1), pad ceil(total / 2) = (1, 1)
        "d2": ([(2, 2, 4, 8), (2, 4, 2, 4), shape["d2_weight"]], [[1, 1], [2, 2], [1, 1]]),
        "c2": ([shape["x2"], (2, 4, 5, 8), shape["c2_weight"]], [[1, 1], [1, 1], [2, 1]]),
    }
    found = {}
    monkeypatch.setattr(cudnn, "identity", lambda device_id: {"device": "fake"})
    monkeypatch.setattr(cudnn.tune_cache, "shared", lambda: cudnn.tune_cache.TuneCache(tmp_path))
    for g in {a.geometry for a in acts if isinstance(a, ConvCall)}:
        lib = _FakeCudnn()
        monkeypatch.setattr(cudnn, "_LIB", lib)
        monkeypatch.setattr(cudnn, "_HANDLES", {})
        plan = cudnn.ConvPlan(99, g, "float32")
        assert set(plan.choice) == {"fwd", "data", "filter"}
        tensors = [d[0] for d in lib.dims("cudnnSetTensorNdDescriptor")]
        (filt,), (conv,) = lib.dims("cudnnSetFilterNdDescriptor"), \
            lib.dims("cudnnSetConvolutionNdDescriptor")
        key = (tuple(tensors[0]), tuple(tensors[1]), tuple(filt[0]))
        found[key] = conv
    assert found == {tuple(map(tuple, dims)): conv for dims, conv in want.values()}


def _layer_outputs(exe: Any) -> list:
    """c1 and c3's outputs (their MakeLoss heads sum them; run the layers alone)."""
    out = []
    for name, data in (("c1", "x1"), ("c3", "x3")):
        sym = _net().get_internals()[f"{name}_output"]
        args = {k: v for k, v in exe.arg_dict.items() if k in sym.list_arguments()}
        out.append(sym.bind(sg.cpu(), args).forward()[0].asnumpy())
    return out
