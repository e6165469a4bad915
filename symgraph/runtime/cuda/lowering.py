"""Lowering of schedule steps to launch actions, driven by data on each op.

An op states its GPU lowering as ``OpDef.lowering``: a family name, or ``(family, params)``.
Ops with a scalar formula (``OpDef.expr``) and no lowering are the ``elementwise`` family. The
action types, :class:`StepCtx` and the family table live in ``actions.py``; each
``lowering_<family>`` module registers its families there; this module imports them all and
offers :func:`lower_step`. Nothing here branches on op names.
"""
from __future__ import annotations


import numpy as np

from ...core import config
from ...core.base import BindError, where
from ...core.log import LOGGER
from ...core.registry import get_op
from . import (lowering_amp, lowering_bn_column, lowering_control_flow, lowering_conv,  # noqa: F401
               lowering_conv_mma, lowering_conv_mma_filter, lowering_conv_pool, lowering_copies,
               lowering_ctc, lowering_dense, lowering_detection, lowering_detection_nms,
               lowering_elementwise, lowering_fused, lowering_index, lowering_index_nd,
               lowering_layer_norm_grad, lowering_layout, lowering_linalg, lowering_multibox,
               lowering_norm, lowering_pool, lowering_proposal, lowering_random,
               lowering_random_draw, lowering_random_pdf, lowering_rearrange, lowering_reduce,
               lowering_rnn, lowering_roi, lowering_row_norm, lowering_scan, lowering_sequence,
               lowering_sort, lowering_update, lowering_views)
from . import lowering_histogram  # noqa: F401,E402
from . import lowering_attention  # noqa: F401,E402
from .actions import FAMILIES, StepCtx, lowering_dtypes, lowering_of


# Families whose listed input slots hold indices: an integer dtype there is read as it is (the
# kernel spells its C type), so integer labels need no host path or cast.
INDEX_INPUTS = {"one_hot": (0,), "axis_gather": (1,), "softmax": (1,),  # softmax: length
                "sequence": (1,),  # the sequence lengths
                "ctc": (1, 2, 3)}  # labels and lengths


def lower_step(ctx: StepCtx) -> list:
    """Actions of one step in the dtypes its lowering declares (``actions.lowering_dtypes``;
    integer index inputs are read as they are). Any other dtype is a BindError naming the node,
    op and dtype, or with SYMGRAPH_ALLOW_HOST=1 the host path and a warning."""
    fam, params = lowering_of(get_op(ctx.step.node.op))
    supported = lowering_dtypes(fam, params)
    params.pop("dtypes", None)
    if fam != "host" and supported is not None:
        index = INDEX_INPUTS.get(fam, ())
        bad = sorted({np.dtype(t).name for i, t in enumerate(ctx.dtypes)
                      if np.dtype(t).name not in supported
                      and not (i in index and np.dtype(t).kind in "iu")})
        if bad:
            _allow_host(ctx, fam, bad, supported)
            fam = "host"
    return FAMILIES[fam](ctx, params)


_WARNED: set[tuple[str, str]] = set()


def _allow_host(ctx: StepCtx, fam: str, bad: list, supported: frozenset) -> None:
    """Refuse the host path for a dtype (BindError), or warn once per op and dtype when
    SYMGRAPH_ALLOW_HOST=1 allows it."""
    node = ctx.step.node
    what = (f"{where(node.name, node.op)}no GPU lowering in {', '.join(bad)} (the {fam} "
            f"lowering runs {', '.join(sorted(supported))})")
    if not config.get("SYMGRAPH_ALLOW_HOST"):
        raise BindError(f"{what}; SYMGRAPH_ALLOW_HOST=1 runs such steps on the host with their "
                        f"numpy reference")
    key = (node.op, ",".join(bad))
    if key not in _WARNED:
        _WARNED.add(key)
        LOGGER.warning("%s: running on the host (SYMGRAPH_ALLOW_HOST=1)", what)
