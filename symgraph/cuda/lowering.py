"""Lowering of schedule steps to launch actions, driven by data on each op.

An op states its GPU lowering as ``OpDef.lowering``: a family name, or ``(family, params)``.
Ops with a scalar formula (``OpDef.expr``) and no lowering are the ``elementwise`` family. The
action types, :class:`StepCtx` and the family table live in ``actions.py``; each
``lowering_<family>`` module registers its families there; this module imports them all and
offers :func:`lower_step`. Nothing here branches on op names.
"""
from __future__ import annotations

import numpy as np

from ..registry import get_op
from . import (lowering_conv_pool, lowering_dense, lowering_elementwise,  # noqa: F401
               lowering_fused, lowering_index, lowering_layout, lowering_nn, lowering_norm,
               lowering_random, lowering_reduce, lowering_sort, lowering_views)
from .actions import BYTE_FAMILIES, FAMILIES, StepCtx, lowering_of


# Families whose listed input slots hold indices: an integer dtype there is read as it is (the
# kernel spells its C type), so integer labels need no host path or cast.
INDEX_INPUTS = {"one_hot": (0,)}


def lower_step(ctx: StepCtx) -> list:
    """Actions of one step; float32 only, but for integer index inputs (other dtypes take the
    host path)."""
    fam, params = lowering_of(get_op(ctx.step.node.op))
    index = INDEX_INPUTS.get(fam, ())
    plain = [t for i, t in enumerate(ctx.dtypes) if i not in index
             or np.dtype(t).kind not in "iu"]
    if fam not in BYTE_FAMILIES and any(np.dtype(t) != np.float32 for t in plain):
        fam = "host"
    return FAMILIES[fam](ctx, params)
