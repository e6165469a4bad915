"""Lowering family ``sequence`` of the sequence ops (``ops/sequence.py``): one gather kernel
per step (``kernels_sequence``), the op's lowering data naming which (``kind``)."""
from __future__ import annotations

from math import prod

from .actions import StepCtx, family, launch
from .kernels_sequence import render_sequence


@family("sequence")
def _sequence(ctx: StepCtx, p: dict) -> list:
    """SequenceMask / Reverse / Last, or Last's gradient (inputs: ograd, [lengths,] data)."""
    a, kind = ctx.attrs, p["kind"]
    data = ctx.in_shapes[-1] if kind == "last_backward" else ctx.in_shapes[0]
    t, n = (data[0], data[1]) if a["axis"] == 0 else (data[1], data[0])
    lens = ctx.ins[1] if a["use_sequence_length"] else None
    kern = render_sequence(kind, t, n, prod(data[2:]), a["axis"], ctx.dt(ctx.outs[0]),
                           None if lens is None else ctx.dt(lens), a.get("value", 0.0))
    args = (ctx.outs[0], ctx.ins[0]) + (() if lens is None else (lens,))
    return [launch(ctx, kern, args, prod(ctx.out_shapes[0]))]
