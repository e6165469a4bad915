"""float16 and bfloat16 on the GPU against the CPU float32 reference (run on a GPU).

Every test graph (registry cases and models) runs a training forward and backward on the GPU
with every argument, aux state, gradient and head gradient in the narrow dtype; the reference is
the numpy backend in float32 on the same narrow-rounded values. Outputs and gradients must agree
within ``narrow.TOLERANCE`` (documented there). Each failure names the graph, the output or
gradient and the dtype. Also: the GPU programs of those graphs hold no host step but the
documented stopgaps that float32 has too (graphs.HOST_FALLBACK), replays give
the same numbers, and the narrow MLP's GEMMs run as GemmEx. The samplers' registry cases are
certain whatever the generator (degenerate parameters, or a property of every draw; checked by
tests/test_random_ops.py), so they are compared like every other op although the GPU draws
other numbers than numpy; the laws themselves are checked by test_random_gpu.py.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda.actions import Gemm, Host, flat_actions

from .graphs import HOST_FALLBACK, mlp, mlp_inputs
from .narrow import NARROW, assert_close, narrow_graphs, rounded

pytestmark = pytest.mark.gpu
GRAPHS = narrow_graphs()
CASES = [(d, *g) for d in sorted(NARROW) for g in GRAPHS]
MAX_POOL_SHARE = 0.1  # of a max-pooling graph's gradient elements that ties may move


def _arrays(values: dict, ctx: Any, dtype: Any) -> dict:
    return {k: sg.nd.array(v, ctx, dtype) for k, v in values.items()}


def _run(sym: Any, ctx: Any, args: dict, aux: dict, dtype: Any, narrow: str, heads_seed: int,
         repeats: int = 1) -> tuple[list, dict, Any]:
    """Training forward + backward (``repeats`` times: eager, captured, replayed) with fixed
    head gradients rounded to ``narrow``; values are already rounded, arrays are made in
    ``dtype`` (the narrow one, or float32 for the reference)."""
    names = sym.list_arguments()
    grads = {k: sg.nd.zeros(args[k].shape, ctx, dtype) for k in names}
    exe = sym.bind(ctx, _arrays(args, ctx, dtype), args_grad=grads, grad_req="write",
                   aux_states=_arrays(aux, ctx, dtype) or None)
    for _ in range(repeats):
        for k, a in exe.aux_dict.items():  # every repeat from the same states: ops that write
            a[:] = np.asarray(aux[k], dtype)  # theirs (update ops' moments) would drift apart
        outs = exe.forward(is_train=True)
        rng = np.random.default_rng(heads_seed)
        heads = [np.asarray(rounded(rng.normal(size=o.shape), narrow), dtype) for o in outs]
        exe.backward(heads)
    return [o.asnumpy() for o in outs], {k: g.asnumpy() for k, g in grads.items()}, exe


@pytest.mark.parametrize("dtype,name,sym,args,aux", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_narrow_gpu_matches_float32_cpu(dtype: str, name: str, sym, args, aux) -> None:
    args = {k: rounded(v, dtype) for k, v in args.items()}
    aux = {k: rounded(v, dtype) for k, v in aux.items()}
    # The reference's head gradients are rounded the same way (seeded, same shapes).
    want_outs, want_grads, _ = _run(sym, sg.cpu(), args, aux, np.float32, dtype, 7)
    got_outs, got_grads, exe = _run(sym, sg.gpu(0), args, aux, NARROW[dtype], dtype, 7,
                                    repeats=3)
    # No host step that float32 would not have: only the documented stopgaps, which run on the
    # host in every dtype (tests/cuda/test_codegen_compile.py checks the float32 programs).
    hosts = [f"{a.step.node.name} ({a.step.node.op})" for stage in (exe._train,)
             for acts in stage.program.actions for a in flat_actions(acts)
             if isinstance(a, Host) and a.step.node.op not in HOST_FALLBACK]
    assert not hosts, f"{name} in {dtype}: host steps {hosts}"
    # Outputs take the dtype the graph infers from narrow inputs: ops with a dtype attribute
    # (Cast, one_hot, argsort, norm(out_dtype)...) and integer outputs keep theirs.
    _, out_types, _ = sym.infer_type(**{k: NARROW[dtype] for k in {**args, **aux}})
    for i, (g, w, t) in enumerate(zip(got_outs, want_outs, out_types)):
        assert g.dtype == t, f"{name} output {i}: dtype {g.dtype}, want {t}"
        assert_close(g, w, dtype, f"{name} output {i}")
    # Narrow rounding ties values that a max pool tells apart in float32, and the gradient goes
    # to another element of the window: elements upstream of a max pool differ whatever the
    # backend (the numpy backend in float16 differs from float32 at 25 of seed_cnn's 3136
    # data-gradient elements, and from the GPU at 149: they break ties differently; after a
    # bfloat16 sigmoid, 20 of _conv_act_pool's 75 differ from float32 on the CPU and the GPU
    # alike). So a max-pooling graph's gradients may differ at up to MAX_POOL_SHARE of the
    # elements from float32, or else from the numpy backend run in the same narrow dtype. A
    # wrong kernel breaks most elements, not a few.
    pools = _max_pools(sym)
    narrow_cpu = None
    for k in want_grads:
        what = f"{name} gradient of {k}"
        if not pools:
            assert_close(got_grads[k], want_grads[k], dtype, what)
            continue
        try:
            assert_close(got_grads[k], want_grads[k], dtype, what, MAX_POOL_SHARE)
        except AssertionError as against_float32:
            if narrow_cpu is None:
                narrow_cpu = _run(sym, sg.cpu(), args, aux, NARROW[dtype], dtype, 7)[1]
            try:
                assert_close(got_grads[k], narrow_cpu[k], dtype,
                             f"{what} (against the CPU run in {dtype})", MAX_POOL_SHARE)
            except AssertionError as against_narrow:
                raise AssertionError(f"{against_float32}; {against_narrow}") from None


def _max_pools(sym: Any) -> bool:
    """Whether ``sym`` holds a max pooling: Pooling with MXNet's default pool_type, or the fused
    ``_conv_act_pool`` (always max)."""
    nodes = json.loads(sym.tojson())["nodes"]
    return any(n["op"] == "_conv_act_pool" or n["op"] == "Pooling"
               and n.get("attrs", {}).get("pool_type", "max") == "max" for n in nodes)


@pytest.mark.parametrize("dtype", sorted(NARROW))
def test_narrow_mlp_uses_gemm_ex_and_trains(dtype: str) -> None:
    """The MLP in a narrow dtype: every GEMM is narrow (GemmEx on the tensor cores), and a few
    SGD steps on one batch lower the loss, as in float32."""
    args = {k: rounded(v, dtype) for k, v in mlp_inputs(np.random.default_rng(1), 64).items()}
    ctx, dt = sg.gpu(0), NARROW[dtype]
    grads = {k: sg.nd.zeros(v.shape, ctx, dt) for k, v in args.items() if k != "softmax_label"}
    exe = mlp().bind(ctx, _arrays(args, ctx, dt), args_grad=grads)
    gemms = [a for acts in exe._train.program.actions for a in flat_actions(acts)
             if isinstance(a, Gemm)]
    assert gemms and {a.dtype for a in gemms} == {dtype}, [a.dtype for a in gemms]
    label = args["softmax_label"].astype(int)
    losses = []
    for _ in range(20):
        prob = exe.forward(is_train=True)[0].asnumpy().astype(np.float32)
        losses.append(-np.log(np.maximum(prob[np.arange(len(label)), label], 1e-6)).mean())
        exe.backward()
        for k, g in grads.items():
            w = exe.arg_dict[k]
            w[:] = (w.asnumpy().astype(np.float32) - 0.1 * g.asnumpy().astype(np.float32))
    assert losses[-1] < 0.7 * losses[0], f"{dtype}: loss {losses[0]:.3f} -> {losses[-1]:.3f}"


@pytest.mark.parametrize("dtype", sorted(NARROW))
def test_fused_update_of_narrow_weights(dtype: str) -> None:
    """The fused GPU update (Module.fit's) on narrow weights and gradients with float32 states:
    three SGD-momentum steps equal the CPU updater's float32 steps within the dtype's
    tolerance (a narrow weight read as float32 bits would be garbage)."""
    from symgraph.runtime.cuda.optimizer import FusedUpdater
    rng = np.random.default_rng(2)
    shapes = [(64, 33), (33,)]
    weights = [rounded(rng.normal(size=s), dtype) for s in shapes]
    grads = [rounded(rng.normal(size=s), dtype) for s in shapes]
    make = lambda: sg.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-3)  # noqa: E731
    cpu = sg.optimizer.Updater(make())
    gpu_up = FusedUpdater(make(), 0)
    cw = [sg.nd.array(w, sg.cpu(), np.float32) for w in weights]
    gw = [sg.nd.array(w, sg.gpu(0), NARROW[dtype]) for w in weights]
    for _ in range(3):
        cpu.update_multi([0, 1], [sg.nd.array(g, sg.cpu(), np.float32) for g in grads], cw)
        gpu_up.update_multi([0, 1], [sg.nd.array(g, sg.gpu(0), NARROW[dtype]) for g in grads],
                            gw)
    for k in range(2):
        got = gw[k].asnumpy()
        assert got.dtype == NARROW[dtype]
        assert_close(got, cw[k].asnumpy(), dtype, f"fused SGD update of weight {k}")
