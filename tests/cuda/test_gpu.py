"""GPU against the numpy backend: every op (registry cases) and test graph, forward outputs and
gradients within 1e-4 relative in float32; graph replay; grad_req='add'; device arrays."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.test_utils import assert_almost_equal

from .graphs import FLOAT64_CASES, MODELS, all_graphs, mlp, mlp_inputs, seed_cnn, seed_cnn_inputs

pytestmark = pytest.mark.gpu
GRAPHS = [g for g in all_graphs() if g[0] not in FLOAT64_CASES]
# Inference schedules of some registry cases and of every model (pooling heads with epilogues
# fuse only there: a training graph's max-pool backward reads the pooled output).
INFER = GRAPHS[:40] + [g for g in GRAPHS if g[0] in MODELS]
F32 = np.float32


def _run(sym, ctx, args: dict, aux: dict, head_seed: int, repeats: int = 1,
         req: str = "write") -> tuple[list, dict]:
    """Forward (training) + backward with fixed random head gradients, ``repeats`` times."""
    names = sym.list_arguments()
    arrays = {k: sg.nd.array(v, ctx, F32) for k, v in args.items()}
    grads = {k: sg.nd.zeros(args[k].shape, ctx, F32) for k in names}
    auxs = {k: sg.nd.array(v, ctx, F32) for k, v in aux.items()} or None
    exe = sym.bind(ctx, arrays, args_grad=grads, grad_req=req, aux_states=auxs)
    for _ in range(repeats):
        for k, a in exe.aux_dict.items():  # every repeat from the same states: ops that write
            a[:] = np.asarray(aux[k], F32)  # theirs (update ops' moments) would drift apart
        outs = exe.forward(is_train=True)
        rng = np.random.default_rng(head_seed)
        exe.backward([rng.normal(size=o.shape).astype(F32) for o in outs])
    return [o.asnumpy() for o in outs], {k: g.asnumpy() for k, g in grads.items()}


def _close(got, want, what: str) -> None:
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    assert_almost_equal(got, want, rtol=1e-4, atol=1e-5 * scale, names=(f"gpu {what}", "cpu"))


@pytest.mark.parametrize("name,sym,args,aux", GRAPHS, ids=[g[0] for g in GRAPHS])
def test_gpu_matches_numpy_backend(name, sym, args, aux) -> None:
    cpu_outs, cpu_grads = _run(sym, sg.cpu(), args, aux, 7)
    # 3 repeats: eager, captured, replayed graph; each must give the same numbers.
    gpu_outs, gpu_grads = _run(sym, sg.gpu(0), args, aux, 7, repeats=3)
    for i, (g, c) in enumerate(zip(gpu_outs, cpu_outs)):
        _close(g, c, f"{name} output {i}")
    for k in cpu_grads:
        _close(gpu_grads[k], cpu_grads[k], f"{name} grad {k}")


@pytest.mark.parametrize("name,sym,args,aux", INFER, ids=[g[0] for g in INFER])
def test_gpu_inference_forward(name, sym, args, aux) -> None:
    outs = []
    for ctx in (sg.cpu(), sg.gpu(0)):
        exe = sym.bind(ctx, {k: sg.nd.array(v, ctx, F32) for k, v in args.items()},
                       aux_states={k: sg.nd.array(v, ctx, F32) for k, v in aux.items()} or None)
        for _ in range(3):
            res = [o.asnumpy() for o in exe.forward(is_train=False)]
        outs.append(res)
    for g, c in zip(outs[1], outs[0]):
        _close(g, c, f"{name} inference")


@pytest.mark.parametrize("graphs", ["1", "0"])
def test_replay_sees_new_data(graphs: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Training loop: data written into the bound arrays between steps reaches the graph."""
    monkeypatch.setenv("SYMGRAPH_CUDA_GRAPHS", graphs)
    rng = np.random.default_rng(3)
    params = mlp_inputs(rng)
    execs = {}
    for ctx in (sg.cpu(), sg.gpu(0)):
        execs[ctx.device_type] = mlp().simple_bind(ctx, data=(16, 20))
        execs[ctx.device_type].copy_params_from(
            {k: sg.nd.array(v, sg.cpu(), F32) for k, v in params.items() if k != "data"})
    for step in range(4):
        batch = rng.normal(size=(16, 20)).astype(F32)
        label = rng.integers(0, 10, size=16).astype(F32)
        res = {}
        for dev, exe in execs.items():
            out = exe.forward(is_train=True, data=batch, softmax_label=label)[0].asnumpy()
            exe.backward()
            res[dev] = (out, exe.grad_dict["fc1_weight"].asnumpy())
        _close(res["gpu"][0], res["cpu"][0], f"step {step} output")
        _close(res["gpu"][1], res["cpu"][1], f"step {step} fc1 grad")


def test_grad_req_add_accumulates() -> None:
    args = mlp_inputs(np.random.default_rng(5))
    _, once = _run(mlp(), sg.gpu(0), args, {}, 1, repeats=1, req="add")
    _, thrice = _run(mlp(), sg.gpu(0), args, {}, 1, repeats=3, req="add")
    for k in once:
        _close(thrice[k], 3 * once[k], f"add {k}")


def test_device_ndarray_roundtrip_and_errors() -> None:
    a = np.arange(12, dtype=F32).reshape(3, 4)
    x = sg.nd.array(a, sg.gpu(0))
    assert x.context == sg.gpu(0) and x.shape == (3, 4)
    np.testing.assert_array_equal(x.asnumpy(), a)
    x[:] = 2.5
    np.testing.assert_array_equal(x.asnumpy(), np.full((3, 4), 2.5, F32))
    x[1] = np.arange(4)
    assert x.asnumpy()[1].tolist() == [0, 1, 2, 3] and x.asnumpy()[0, 0] == 2.5
    with pytest.raises(sg.base.BindError):
        x[:] = np.ones((5, 5))
    assert x.asnumpy()[0, 0] == 2.5  # untouched after the error


def test_shares_process_with_torch() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.arange(6, dtype=torch.float32, device="cuda") * 2
    args = mlp_inputs(np.random.default_rng(2))
    _run(mlp(), sg.gpu(0), args, {}, 1)
    assert (t.cpu().numpy() == np.arange(6) * 2).all()
    torch.cuda.synchronize()


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axis", [(0, 2, 3), (1,), None, (3,)])
def test_large_reductions(kind: str, axis) -> None:
    """Few outputs over many elements (the two-stage path) and the other strategies."""
    x = np.random.default_rng(4).normal(size=(64, 32, 20, 20)).astype(F32)
    sym = getattr(sg.sym, kind)(sg.sym.var("x"), axis=axis)
    exe = sym.bind(sg.gpu(0), {"x": sg.nd.array(x, sg.gpu(0))})
    want = getattr(np, {"sum": "sum", "mean": "mean", "max": "max", "min": "min"}[kind])(
        x.astype(np.float64), axis=axis)
    for _ in range(3):
        got = exe.forward()[0].asnumpy()
    assert_almost_equal(got, want, rtol=1e-4, atol=1e-4, names=("gpu", "float64"))


@pytest.mark.parametrize("cudnn", ["1", "0"])
def test_seed_cnn_cudnn_and_im2col_paths(cudnn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed CNN through cuDNN and through the im2col + cuBLAS fallback."""
    monkeypatch.setenv("SYMGRAPH_CUDNN", cudnn)
    args = seed_cnn_inputs(np.random.default_rng(9), batch=8)
    cpu_outs, cpu_grads = _run(seed_cnn(), sg.cpu(), args, {}, 3)
    gpu_outs, gpu_grads = _run(seed_cnn(), sg.gpu(0), args, {}, 3, repeats=3)
    _close(gpu_outs[0], cpu_outs[0], "cnn output")
    for k in cpu_grads:
        _close(gpu_grads[k], cpu_grads[k], f"cnn grad {k}")
