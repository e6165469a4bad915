"""Lowering of schedule steps to launch actions, driven by data on each op.

An op states its GPU lowering as ``OpDef.lowering``: a family name, or ``(family, params)``.
Ops with a scalar formula (``OpDef.expr``) and no lowering are the ``elementwise`` family. The
action types, :class:`StepCtx` and the family table live in ``actions.py``; each
``lowering_<family>`` module registers its families there; this module imports them all and
offers :func:`lower_step`. Nothing here branches on op names.
"""
from __future__ import annotations

from ..registry import get_op
from . import (lowering_conv_pool, lowering_dense, lowering_elementwise,  # noqa: F401
               lowering_fused, lowering_index, lowering_layout, lowering_nn, lowering_norm,
               lowering_random, lowering_reduce, lowering_sort, lowering_views)
from .actions import FAMILIES, StepCtx, family_supports, lowering_of


# Families whose listed input slots hold indices: an integer dtype there is read as it is (the
# kernel spells its C type), so integer labels need no host path or cast.
INDEX_INPUTS = {"one_hot": (0,)}


def device_family(ctx: StepCtx) -> tuple[str, dict]:
    """(family, params) that lowers this step on the device, or ``("host", params)`` when its
    family does not handle the step's dtypes (``actions.FAMILY_DTYPES``)."""
    fam, params = lowering_of(get_op(ctx.step.node.op))
    if not family_supports(fam, ctx.dtypes, INDEX_INPUTS.get(fam, ())):
        return "host", params
    return fam, params


def lower_step(ctx: StepCtx) -> list:
    """Actions of one step, in float32, float16 or bfloat16 where its family says so (and
    integer index inputs where ``INDEX_INPUTS`` says so); other dtypes take the host path."""
    fam, params = device_family(ctx)
    return FAMILIES[fam](ctx, params)
