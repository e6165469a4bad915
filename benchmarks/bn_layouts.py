"""BatchNorm's training steps on NCHW (axis 1) and NHWC (axis 3) data, ResNet-20-on-CIFAR shapes:
the forward (statistics, normalisation, moving statistics) and ``_backward_BatchNorm`` each
timed alone (``time_steps`` with ``--repeat`` back-to-back launches: the mean), beside the
bandwidth their minimum traffic would give (forward: x read for the statistics and for y, y
written; backward: dy and x read for the sums and for dx, dx written).

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
from symgraph.registry import RunCtx  # noqa: E402

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    ctx = sg.cpu() if args.cpu else sg.gpu(0)
    print(f"{'shape (NCHW)':18} {'dtype':9} {'op':20} {'NCHW ms':>9} {'NHWC ms':>9} "
          f"{'NHWC GB/s':>10}")
    for dtype in args.dtypes:
        for nchw in SHAPES:
            by_axis = {ax: bn_step_ms(ctx, nchw, ax, dtype, args.repeat) for ax in (1, 3)}
            for op, passes in PASSES.items():
                gbs = passes * prod(nchw) * _dtype(dtype).itemsize / by_axis[3][op] / 1e6
                print(f"{str(nchw):18} {dtype:9} {op:20} {by_axis[1][op]:9.4f} "
                      f"{by_axis[3][op]:9.4f} {gbs:10.1f}")


if __name__ == "__main__":
    main()
