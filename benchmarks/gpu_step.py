"""GPU benchmark: the seed CNN's training step, a fused elementwise kernel's bandwidth,
and compile time with a cold and a warm kernel cache.

    PYTHONPATH=. python3 benchmarks/gpu_step.py [--batches 64 256 1024] [--steps 100]

Step = forward(is_train=True) + backward(), timed with CUDA events on the legacy stream (which
orders after symgraph's stream), median of ``--steps`` steps after warm-up, beside PyTorch eager
and PyTorch with forward+backward captured in one CUDA graph (same model, same process, TF32 off
everywhere, cudnn.benchmark on for PyTorch). Bandwidth counts bytes read + written.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgraph as sg  # noqa: E402
from symgraph.interop.models.simple_cnn import build  # noqa: E402

from benchmarks.common import (NO_INPUT_GRADS, cuda_median_ms, torch_cuda_graph,  # noqa: E402
                               torch_fp32, torch_seed_cnn)


def _train_executor(batch: int) -> object:
    """The seed CNN's training executor on gpu(0), with no gradient for data and label."""
    sym = build()
    reqs = {n: NO_INPUT_GRADS.get(n, "write") for n in sym.list_arguments()}
    return sym.simple_bind(sg.gpu(0), grad_req=reqs, data=(batch, 1, 28, 28))


def symgraph_step(batch: int, steps: int) -> tuple[float, float]:
    """(GPU ms per step by CUDA events, host ms per step issuing the work)."""
    rng = np.random.default_rng(0)
    exe = _train_executor(batch)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.normal(size=arr.shape) * (0.1 if name != "softmax_label" else 0)
    exe.arg_dict["data"][:] = rng.normal(size=(batch, 1, 28, 28))
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 10, size=batch)

    def step() -> None:
        exe.forward(is_train=True)
        exe.backward()
    gpu = cuda_median_ms(step, steps, 10)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    host = (time.perf_counter() - t0) * 1e3 / steps
    import torch
    torch.cuda.synchronize()
    return gpu, host


def torch_steps(batch: int, steps: int) -> tuple[float, float]:
    """(eager, CUDA graph) ms per forward+backward; loss = summed cross-entropy (the gradient
    SoftmaxOutput produces)."""
    import torch
    import torch.nn.functional as F
    model = torch_seed_cnn().cuda()
    x = torch.randn(batch, 1, 28, 28, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")

    def body() -> None:
        F.cross_entropy(model(x), y, reduction="sum").backward()

    def step() -> None:
        model.zero_grad(set_to_none=True)
        body()
    eager = cuda_median_ms(step, steps, 10)
    replay = torch_cuda_graph(step, body, lambda: model.zero_grad(set_to_none=True))
    return eager, cuda_median_ms(replay, steps, 10)


def bandwidth(n: int = 1 << 26) -> tuple[float, float]:
    """GB/s of relu(a*b+c) as one generated kernel (a ``_fused`` node) and of a D2D copy."""
    import torch
    from symgraph.core import expr as E
    from symgraph.core.registry import RunCtx
    S = sg.sym
    e = E.call("max", E.inp(0) * E.inp(1) + E.inp(2), 0.0)
    sym = S._fused(S.var("a"), S.var("b"), S.var("c"), exprs=(e,), shapes=((n,),),
                   members=("mul", "add", "relu"), num_inputs=3)
    rng = np.random.default_rng(1)
    args = {k: sg.nd.array(rng.normal(size=n).astype(np.float32), sg.gpu(0)) for k in "abc"}
    exe = sym.bind(sg.gpu(0), args)
    got = exe.forward()[0].asnumpy()
    host = {k: v.asnumpy() for k, v in args.items()}
    want = np.maximum(host["a"] * host["b"] + host["c"], 0)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), "fused kernel gives wrong values"
    stage = exe._infer
    prog, env = stage.program, stage.program.new_env()
    for node, slot in stage.schedule.variables.items():
        prog.bind_input(env, slot, args[node.name])
    nsteps = len(stage.schedule.steps)
    fused_ms = cuda_median_ms(lambda: prog.run(env, 0, nsteps, RunCtx()), 50, 5)
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = cuda_median_ms(lambda: dst.copy_(src), 50, 5)
    return 16 * n / fused_ms / 1e6, 8 * n / copy_ms / 1e6


def profile(batch: int, top: int = 14) -> None:
    """Per-step GPU times of one training step (eager, each step synchronised)."""
    from symgraph.core.registry import RunCtx
    exe = _train_executor(batch)
    exe.forward(is_train=True)
    exe.backward()
    prog, env = exe._train.program, exe._env
    times = prog.time_steps(env, 0, len(exe._train.schedule.steps), RunCtx(is_train=True))
    print(f"total {sum(t[3] for t in times):.3f} ms over {len(times)} steps (eager)")
    for k, op, name, ms in sorted(times, key=lambda t: -t[3])[:top]:
        print(f"  step {k:3d} {ms:7.3f} ms  {op} {name}")


def compile_probe(batch: int) -> None:
    """Child process: time building the training executor and loading its module."""
    from symgraph.runtime.cuda import compiler
    sg.nd.zeros((1,), sg.gpu(0))  # device initialisation is not compilation
    t0 = time.perf_counter()
    exe = _train_executor(batch)
    exe._train.program.load()
    print(json.dumps({"seconds": time.perf_counter() - t0, "nvcc_calls": compiler.NVCC_CALLS}))


def compile_times() -> list[dict]:
    with tempfile.TemporaryDirectory() as cache:
        path = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        env = dict(os.environ, SYMGRAPH_CACHE_DIR=cache, PYTHONPATH=path)
        out = []
        for _ in range(2):
            res = subprocess.run([sys.executable, __file__, "--compile-probe"], env=env,
                                 capture_output=True, text=True)
            if res.returncode:
                raise RuntimeError(f"compile probe failed:\n{res.stderr}")
            out.append(json.loads(res.stdout.strip().splitlines()[-1]))
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="*", default=[64, 256, 1024])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--compile-probe", action="store_true")
    ap.add_argument("--profile", type=int, default=0, help="batch: print the slowest steps")
    args = ap.parse_args()
    if args.compile_probe:
        compile_probe(64)
        return
    if args.profile:
        profile(args.profile)
        return
    torch = torch_fp32()
    print(f"device: {torch.cuda.get_device_name()}, CUDA graphs "
          f"{'on' if sg.config.get('SYMGRAPH_CUDA_GRAPHS') else 'off'}")
    comp = compile_times()
    print("\n| batch | symgraph ms/step | (host ms/step) | PyTorch eager | PyTorch CUDA graph |")
    print("|---|---|---|---|---|")
    for b in args.batches:
        ours, host = symgraph_step(b, args.steps)
        eager, graph = torch_steps(b, args.steps)
        print(f"| {b} | {ours:.3f} | {host:.3f} | {eager:.3f} | {graph:.3f} |")
    fused, copy = bandwidth()
    print(f"\nfused relu(a*b+c), 2^26 float32: {fused:.0f} GB/s; device-to-device copy "
          f"{copy:.0f} GB/s; ratio {fused / copy:.1%}")
    print(f"compile (seed CNN training graph, batch 64): cold {comp[0]['seconds']:.2f} s "
          f"({comp[0]['nvcc_calls']} nvcc call), warm {comp[1]['seconds']:.3f} s "
          f"({comp[1]['nvcc_calls']} nvcc calls)")


if __name__ == "__main__":
    main()
