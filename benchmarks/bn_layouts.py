"""BatchNorm's training steps on NCHW (axis 1) and NHWC (axis 3) data, ResNet-20-on-CIFAR shapes:
the forward (statistics, normalisation, moving statistics) and ``_backward_BatchNorm`` each
timed alone (``time_steps`` with ``--repeat`` back-to-back launches: the mean), beside the
bandwidth their minimum traffic would give (forward: x read for the statistics and for y, y
written; backward: dy and x read for the sums and for dx, dx written), and PyTorch's
``batch_norm`` in training mode on a channels-last tensor of the same dtype in the same process
(forward alone, and forward + backward less the forward; medians by CUDA events), when PyTorch
is installed.

    PYTHONPATH=. python3 benchmarks/bn_layouts.py [--repeat 50] [--dtypes float32 bfloat16]

``--cpu`` runs the same on the numpy backend (a smoke test of the script, not a benchmark).
"""
from __future__ import annotations

import argparse
import sys
from math import prod
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402
from symgraph.core.registry import RunCtx  # noqa: E402

SHAPES = ((128, 16, 32, 32), (128, 32, 16, 16), (128, 64, 8, 8))  # NCHW
PASSES = {"BatchNorm": 3, "_backward_BatchNorm": 5}  # element reads + writes, as above


def _dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def bn_step_ms(ctx: object, nchw: tuple, axis: int, dtype: str, repeat: int) -> dict:
    """op -> milliseconds of BatchNorm's forward and backward steps on ``nchw`` data laid out
    for ``axis`` (1: as given; 3: NHWC)."""
    n, c, h, w = nchw
    shape = nchw if axis == 1 else (n, h, w, c)
    sym = sg.sym.BatchNorm(sg.sym.var("x"), fix_gamma=False, axis=axis, name="bn")
    names = sym.list_arguments() + sym.list_auxiliary_states()
    exe = sym.simple_bind(ctx, type_dict={k: _dtype(dtype) for k in names}, x=shape)
    rng = np.random.default_rng(0)
    exe.arg_dict["x"][:] = rng.normal(size=shape)
    exe.forward(is_train=True)
    exe.backward([sg.nd.array(rng.normal(size=shape), ctx, _dtype(dtype))])
    stage = exe._train
    times = stage.program.time_steps(exe._env, 0, len(stage.schedule.steps),
                                     RunCtx(is_train=True), repeat)
    return {op: ms for _, op, _, ms in times if op in PASSES}


def torch_bn_ms(nchw: tuple, dtype: str, repeat: int) -> dict:
    """op -> milliseconds of PyTorch's channels-last training BatchNorm (empty without it)."""
    try:
        from benchmarks.common import cuda_median_ms, torch_fp32
        torch = torch_fp32()
    except ImportError:
        return {}
    import torch.nn.functional as F
    t = getattr(torch, dtype)
    x = torch.randn(*nchw, device="cuda", dtype=t).to(memory_format=torch.channels_last)
    x.requires_grad_(True)
    c = nchw[1]
    w = torch.ones(c, device="cuda", dtype=t, requires_grad=True)
    b = torch.zeros(c, device="cuda", dtype=t, requires_grad=True)
    rm, rv = torch.zeros(c, device="cuda", dtype=t), torch.ones(c, device="cuda", dtype=t)
    dy = torch.randn_like(x)

    def fwd() -> object:
        return F.batch_norm(x, rm, rv, w, b, training=True)
    fwd_ms = cuda_median_ms(fwd, repeat)
    both = cuda_median_ms(lambda: torch.autograd.grad(fwd(), (x, w, b), dy), repeat)
    return {"BatchNorm": fwd_ms, "_backward_BatchNorm": max(both - fwd_ms, 0.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    ctx = sg.cpu() if args.cpu else sg.gpu(0)
    print("| shape (NCHW) | dtype | op | NCHW ms | NHWC ms | NHWC GB/s | PyTorch NHWC ms |")
    print("|---|---|---|---|---|---|---|")
    for dtype in args.dtypes:
        for nchw in SHAPES:
            by_axis = {ax: bn_step_ms(ctx, nchw, ax, dtype, args.repeat) for ax in (1, 3)}
            ref = {} if args.cpu else torch_bn_ms(nchw, dtype, args.repeat)
            for op, passes in PASSES.items():
                gbs = passes * prod(nchw) * _dtype(dtype).itemsize / by_axis[3][op] / 1e6
                torch_ms = f"{ref[op]:.4f}" if op in ref else "-"
                print(f"| {nchw} | {dtype} | {op} | {by_axis[1][op]:.4f} | "
                      f"{by_axis[3][op]:.4f} | {gbs:.1f} | {torch_ms} |")


if __name__ == "__main__":
    main()
