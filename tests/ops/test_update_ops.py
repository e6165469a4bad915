"""The optimizer update ops: ``sg.nd`` calls with ``out=`` and states updated in place, graph use
(states written after every forward, inference included), mixed precision, bad input, the GPU
kernels run on the host, and MXNet 1.9.1 live on the same inputs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.attrs import parse_attrs
from symgraph.core.base import AttrError, ShapeError
from symgraph.core.registry import RunCtx, get_op

from . import update_ref as R
from .cases_update import MP, SINGLE

STATE_GEN = {"n": (0.5, 1.5), "var": (0.5, 1.5), "v": (0.5, 1.5), "d": (0.5, 1.5),
             "g": (-0.3, 0.3), "r1": (0.5, 2.0), "r2": (0.5, 2.0)}


def _inputs(names: tuple, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = lambda n: (1,) if n in ("r1", "r2") else (4, 3)  # noqa: E731
    return [rng.uniform(*STATE_GEN.get(n, (-1.0, 1.0)), size=shape(n)) for n in names]


def _parsed(op: str, attrs: dict):
    return parse_attrs(get_op(op).params, attrs, op)


def _reference(op: str):
    if op in MP:
        return R.master(SINGLE[MP[op][0]][0]), SINGLE[MP[op][0]][2]
    return SINGLE[op][0], SINGLE[op][2]


ALL_SINGLE = list(SINGLE) + list(MP)


@pytest.mark.parametrize("op", ALL_SINGLE)
def test_nd_updates_states_in_place_and_writes_out(op: str) -> None:
    ref, attrs = _reference(op)
    names = get_op(op).input_names(_parsed(op, attrs))
    xs = _inputs(names)
    arrays = [sg.nd.array(x, dtype=np.float32) for x in xs]
    written = [names.index(n) for n in get_op(op).aux_names(_parsed(op, attrs))]
    want = ref(*[x.astype(np.float32).astype(np.float64) for x in xs], **attrs)
    got = getattr(sg.nd, op)(*arrays, out=arrays[0], **attrs)
    assert got is arrays[0]
    np.testing.assert_allclose(arrays[0].asnumpy(), want[0], rtol=1e-5, atol=1e-6)
    for k, i in enumerate(written):  # the states, in place, in input order
        np.testing.assert_allclose(arrays[i].asnumpy(), want[1 + k], rtol=1e-5, atol=1e-6,
                                   err_msg=names[i])


def test_without_out_the_weight_is_kept_and_states_move() -> None:
    w, g, mom = sg.nd.ones((3,)), sg.nd.array([1.0, 2.0, 3.0]), sg.nd.zeros((3,))
    new = sg.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(new.asnumpy(), [0.9, 0.8, 0.7], rtol=1e-6)
    np.testing.assert_array_equal(w.asnumpy(), np.ones(3))
    np.testing.assert_allclose(mom.asnumpy(), [-0.1, -0.2, -0.3], rtol=1e-6)


def test_state_made_lazily_and_read_before_the_update() -> None:
    mom = sg.nd.zeros((2,)) + 1.0  # pending until needed
    before = mom * 2.0  # pending work reading the old state
    sg.nd.sgd_mom_update(sg.nd.ones((2,)), sg.nd.ones((2,)), mom, lr=0.5, momentum=1.0)
    np.testing.assert_allclose(before.asnumpy(), [2.0, 2.0])  # computed from the old value
    np.testing.assert_allclose(mom.asnumpy(), [0.5, 0.5])


def test_symbol_graph_writes_states_after_every_forward() -> None:
    S = sg.sym
    out = S.adam_update(S.var("w"), S.var("g"), S.var("m"), S.var("v"), lr=0.01) * 2.0
    assert out.list_arguments() == ["w", "g"]
    assert out.list_auxiliary_states() == ["m", "v"]
    w, g, m, v = _inputs(("w", "g", "m", "var"), seed=3)
    exe = out.bind(sg.cpu(), {"w": sg.nd.array(w), "g": sg.nd.array(g)},
                   aux_states={"m": sg.nd.array(m), "v": sg.nd.array(v)})
    for _ in range(2):  # inference forward: the states still advance (MXNet's mutate inputs)
        want_w, m, v = R.adam(w, g, m, v, lr=0.01)
        got = exe.forward(is_train=False)[0].asnumpy()
        np.testing.assert_allclose(got, 2.0 * want_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(exe.aux_dict["m"].asnumpy(), m, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(exe.aux_dict["v"].asnumpy(), v, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(exe.arg_dict["w"].asnumpy(), w.astype(np.float32))


def test_mixed_precision_keeps_float32_master_and_states() -> None:
    w32 = np.linspace(-1, 1, 6).astype(np.float32)
    g = np.linspace(0.5, -0.5, 6)
    weight, grad = sg.nd.array(w32, dtype=np.float16), sg.nd.array(g, dtype=np.float16)
    mom, master = sg.nd.zeros((6,)), sg.nd.array(w32)
    sg.nd.mp_sgd_mom_update(weight, grad, mom, master, out=weight, lr=0.1, momentum=0.9)
    want, want_mom = R.sgd_mom(w32.astype(np.float64), g.astype(np.float16).astype(np.float64),
                               np.zeros(6), lr=0.1, momentum=0.9)
    assert weight.dtype == np.float16 and master.dtype == np.float32
    np.testing.assert_allclose(master.asnumpy(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(mom.asnumpy(), want_mom, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(weight.asnumpy(), want.astype(np.float16), rtol=1e-3)


def test_multi_sgd_and_preloaded_agree() -> None:
    ws = [np.linspace(-1, 1, n) for n in (3, 5)]
    gs = [np.linspace(1, -1, n) for n in (3, 5)]
    plain = [sg.nd.array(w) for w in ws]
    pre = [sg.nd.array(w) for w in ws]
    data = [a for w, g in zip(plain, gs) for a in (w, sg.nd.array(g))]
    sg.nd.multi_sgd_update(*data, out=plain, lrs=(0.1, 0.2), wds=(0.0, 0.5), num_weights=2)
    data = [a for w, g in zip(pre, gs) for a in (w, sg.nd.array(g))]
    sg.nd.preloaded_multi_sgd_update(*data, sg.nd.array([0.1, 0.2]), sg.nd.array([0.0, 0.5]),
                                     out=pre, num_weights=2)
    for k, (w, g) in enumerate(zip(ws, gs)):
        want = R.sgd(w, g, lr=(0.1, 0.2)[k], wd=(0.0, 0.5)[k])[0]
        np.testing.assert_allclose(plain[k].asnumpy(), want, rtol=1e-6)
        np.testing.assert_allclose(pre[k].asnumpy(), want, rtol=1e-6)


def test_bad_input_is_refused_naming_the_op_and_leaves_data_alone() -> None:
    w, g, mom = sg.nd.ones((3,)), sg.nd.ones((4,)), sg.nd.zeros((3,))
    with pytest.raises(ShapeError, match=r"sgd_mom_update.*\(3,\).*\(4,\)"):
        sg.nd.sgd_mom_update(w, g, mom, out=w, lr=0.1)
    np.testing.assert_array_equal(w.asnumpy(), np.ones(3))
    np.testing.assert_array_equal(mom.asnumpy(), np.zeros(3))
    with pytest.raises(AttrError, match="lrs has 1 values for num_weights=2"):
        sg.nd.multi_sgd_update(w, w, w, w, lrs=(0.1,), wds=(0.0, 0.0), num_weights=2)
    with pytest.raises(AttrError, match="lr"):
        sg.nd.sgd_update(w, w)  # lr is required, as in MXNet


def test_reset_arrays_and_checks() -> None:
    a, b = sg.nd.ones((2, 3)), sg.nd.array([1.0, np.inf])
    assert float(sg.nd.all_finite(b).asnumpy()[0]) == 0.0
    assert float(sg.nd.multi_all_finite(a, a, num_arrays=2).asnumpy()[0]) == 1.0
    np.testing.assert_allclose(sg.nd.multi_sum_sq(a, a * 2.0, num_arrays=2).asnumpy(),
                               [6.0, 24.0])
    sg.nd.reset_arrays(a, b, num_arrays=2)
    np.testing.assert_array_equal(a.asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(b.asnumpy(), np.zeros(2))


# -- the GPU kernels, compiled and run on the host ---------------------------------------------

def _steps_of(sym, shapes: dict, dtypes: dict) -> list:
    exe = sym.simple_bind(sg.cpu(), type_dict=dtypes, **shapes)
    sch = exe._infer.schedule if hasattr(exe, "_infer") else exe._train.schedule
    return [(st, sch) for st in sch.steps if get_op(st.node.op).lowering is not None]


HOST_GRAPHS = {
    "adam": (lambda S: S.adam_update(S.var("w"), S.var("g"), S.var("m"), S.var("v"), lr=0.1,
                                     clip_gradient=0.5, wd=0.1),
             {"w": (5, 3), "g": (5, 3), "m": (5, 3), "v": (5, 3)}, {}),
    "mp_nag": (lambda S: S.mp_nag_mom_update(S.var("w"), S.var("g"), S.var("m"), S.var("w32"),
                                             lr=0.1, momentum=0.9),
               {"w": (7,), "g": (7,), "m": (7,), "w32": (7,)},
               {"w": np.float16, "g": np.float16}),
    "preloaded": (lambda S: S.preloaded_multi_sgd_mom_update(
        *[S.var(n) for n in ("w0", "g0", "m0", "w1", "g1", "m1", "lrs", "wds")],
        momentum=0.9, num_weights=2),
        {"w0": (3,), "g0": (3,), "m0": (3,), "w1": (2, 2), "g1": (2, 2), "m1": (2, 2),
         "lrs": (2,), "wds": (2,)}, {}),
    "lamb2": (lambda S: S.lamb_update_phase2(S.var("w"), S.var("g"), S.var("r1"), S.var("r2"),
                                             lr=0.1, upper_bound=0.7),
              {"w": (4,), "g": (4,), "r1": (1,), "r2": (1,)}, {}),
    "sum_sq": (lambda S: S.multi_sum_sq(S.var("a"), S.var("b"), num_arrays=2),
               {"a": (3, 4), "b": (5,)}, {}),
    "finite": (lambda S: S.multi_all_finite(S.var("a"), S.var("b"), num_arrays=2),
               {"a": (3, 4), "b": (5,)}, {}),
    "reset": (lambda S: S.reset_arrays(S.var("a"), S.var("b"), num_arrays=2),
              {"a": (3,), "b": (2,)}, {}),
}


@pytest.mark.parametrize("name", list(HOST_GRAPHS))
def test_gpu_kernels_on_host_match_numpy(name: str, tmp_path: Path) -> None:
    from ..cuda.host_run import host_compiler, run_on_host
    if host_compiler() is None:
        pytest.skip("g++ not on PATH")
    build, shapes, dtypes = HOST_GRAPHS[name]
    steps = [(st, sch) for st, sch in _steps_of(build(sg.sym), shapes, dtypes)
             if get_op(st.node.op).always_mutates or get_op(st.node.op).pattern == "reduce"]
    assert steps
    rng = np.random.default_rng(1)
    for st, sch in steps:
        xs = [rng.uniform(0.2, 1.0, size=sch.shapes[s]).astype(sch.dtypes[s])
              for s in st.inputs]
        want = get_op(st.node.op).compute(st.node.attrs, xs, RunCtx())
        got = run_on_host(st, sch.shapes, sch.dtypes, xs, tmp_path)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w, g.dtype).reshape(g.shape), rtol=2e-3,
                                       atol=1e-5, err_msg=name)


# -- MXNet 1.9.1 live ----------------------------------------------------------------------------

MX_SCRIPT = r"""
import json, sys
import numpy as np, mxnet as mx
cases = json.load(sys.stdin)
out = {}
for op, names, xs, attrs, written in cases:
    arrays = [mx.nd.array(np.array(x, np.float32)) for x in xs]
    res = getattr(mx.nd, op)(*arrays, **attrs)
    res = res if isinstance(res, list) else [res]
    out[op] = [r.asnumpy().tolist() for r in res] + [arrays[i].asnumpy().tolist() for i in written]
print(json.dumps(out))
"""


@pytest.mark.mxnet
def test_single_tensor_updates_match_mxnet() -> None:
    from ..mxnet_live import mxnet_json
    cases, mine = [], {}
    for op in ALL_SINGLE:
        _, attrs = _reference(op)
        names = get_op(op).input_names(_parsed(op, attrs))
        xs = [x.astype(np.float32) for x in _inputs(names, seed=7)]
        written = [names.index(n) for n in get_op(op).aux_names(_parsed(op, attrs))]
        cases.append((op, names, [x.tolist() for x in xs], attrs, written))
        arrays = [sg.nd.array(x) for x in xs]
        res = getattr(sg.nd, op)(*arrays, **attrs)
        mine[op] = [res.asnumpy()] + [arrays[i].asnumpy() for i in written]
    theirs = mxnet_json(MX_SCRIPT, cases)
    for op in ALL_SINGLE:
        for k, (a, b) in enumerate(zip(mine[op], theirs[op])):
            np.testing.assert_allclose(a, np.asarray(b, np.float32), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{op} output {k}")
