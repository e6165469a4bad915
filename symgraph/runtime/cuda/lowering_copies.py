"""The ``copy_each`` family: each output the bytes of one input (``p["inputs"][i]`` for
output i), for ops whose outputs are their inputs passed on (``_identity_kl_sparse``)."""
from __future__ import annotations

from math import prod

from .actions import Copy, StepCtx, family


@family("copy_each")
def _copy_each(ctx: StepCtx, p: dict) -> list:
    """One device copy per output with any bytes."""
    acts = []
    for i, k in enumerate(p["inputs"]):
        nbytes = prod(ctx.out_shapes[i]) * ctx.dtype_of(ctx.outs[i]).itemsize
        if nbytes:
            acts.append(Copy(ctx.outs[i], ctx.ins[k], nbytes))
    return acts
