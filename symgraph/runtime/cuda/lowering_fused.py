"""Lowering of ``_fused`` nodes (``ops/fused.py``): an optional head, then the group's formulas.
A head's other outputs (``extra``: BatchNorm's statistics) are its own, written where the
node's outputs after the group's are.

A head family may apply the group's formula in its own kernel, where it stores each value (an
*inline epilogue*): it registers a function with :func:`inline_epilogue`, which returns the
step's actions. The group then costs one kernel and one trip over memory. Otherwise (other
heads, or groups that do not fit: several outputs, broadcast operands) the head writes a scratch
buffer and one elementwise kernel per output shape reads it back.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable, Optional

from ...core.expr import Expr, inp, substitute
from ...core.registry import get_op
from .codegen import used_inputs
from .actions import FAMILIES, Host, Ref, StepCtx, family, family_supports, lowering_of
from .lowering_elementwise import elementwise_actions
Shape = tuple[int, ...]


@dataclass(frozen=True)
class Epilogue:
    """A fused group's formula applied where a head kernel stores its value: expression input
    0 is that value, input ``k >= 1`` the same element of ``operands[k - 1]`` (all of the head's
    output shape)."""

    expr: Expr
    operands: tuple[Ref, ...]


InlineFn = Callable[[StepCtx, dict, Epilogue], list]
INLINE: dict[str, InlineFn] = {}


def inline_epilogue(name: str) -> Callable[[InlineFn], InlineFn]:
    """Declares that head family ``name`` can apply a fused group's formula in its own kernel."""
    def deco(fn: InlineFn) -> InlineFn:
        INLINE[name] = fn
        return fn
    return deco


def in_place(ctx: StepCtx, epi: Optional[Epilogue], shape: Shape, bias: Optional[Ref] = None,
             bias_shape: Shape = ()) -> list:
    """A fused group's formula (``epi``; None: none) over the step's output, already written by
    a library call and viewed as ``shape``, in place, with ``bias`` (broadcast from
    ``bias_shape``) added to the value first: one kernel, or none when there is nothing to do.
    A headed group thus costs one pass, not a bias pass into scratch and a formula pass out."""
    if epi is None and bias is None:
        return []
    epi = epi or Epilogue(inp(0), ())
    y = ctx.outs[0]
    head, operands, shapes = inp(0), [y, *epi.operands], [shape] * (1 + len(epi.operands))
    if bias is not None:
        head = head + inp(len(operands))
        operands.append(bias)
        shapes.append(bias_shape)
    expr = substitute(epi.expr, [head] + [inp(k) for k in range(1, len(epi.operands) + 1)])
    return elementwise_actions(ctx, f"{ctx.stem}_epilogue", [expr], shapes, operands, shape, [y])


def _inline(ctx: StepCtx, head_fam: str, head_p: dict, sub: StepCtx) -> Optional[list]:
    """The head family's one-kernel lowering of the group, if it has one and the group fits:
    one output, of the head's shape, reading operands of that shape only."""
    a = ctx.attrs
    head_op, head_attrs, n = a["head"]
    if head_fam not in INLINE or len(a["exprs"]) != 1:
        return None
    head_shape = get_op(head_op).infer_shape(head_attrs, list(sub.in_shapes),
                                             [None] * len(sub.outs))[1][0]
    shape = tuple(a["shapes"][0])
    if head_shape is None or tuple(head_shape) != shape or \
            any(tuple(ctx.in_shapes[n + k - 1]) != shape for k in used_inputs(a["exprs"]) if k):
        return None
    return INLINE[head_fam](sub, head_p, Epilogue(a["exprs"][0], tuple(ctx.ins[n:])))


@family("fused")
def _fused(ctx: StepCtx, p: dict) -> list:
    """A ``_fused`` node: optional head (inline epilogue, or into scratch), then one elementwise
    kernel per distinct output shape, largest first (a kernel may write over an input of its own
    size that the plan lets die here; smaller kernels never read inputs that large)."""
    a = ctx.attrs
    shapes = sorted({tuple(s) for s in a["shapes"]}, key=lambda s: -prod(s))
    stem = "_".join(a["members"])[:40] or "fused"
    ins, in_shapes, actions = list(ctx.ins), list(ctx.in_shapes), []
    if a["head"] is not None:
        head_op, head_attrs, n = a["head"]
        out_shape = tuple(a["shapes"][0])
        head_fam, head_p = lowering_of(get_op(head_op))
        g = len(a["exprs"])  # the head's other outputs (``extra``) follow the group's
        head_types = ctx.dtypes[:n] + [ctx.dtypes[len(ctx.ins)]] + ctx.dtypes[len(ctx.ins) + g:]
        if not family_supports(head_fam, head_types):  # no device lowering in these dtypes
            return [Host(ctx.step)]
        extra = list(ctx.outs[g:])
        sub = StepCtx(ctx.step, head_attrs, in_shapes[:n],
                      [out_shape] + [tuple(s) for s, _ in a.get("extra", ())], head_types,
                      ins[:n], list(ctx.outs[:1]) + extra, ctx.sm_count, ctx.scratch, ctx.keys,
                      ctx.types, ctx.state, ctx.scratch_at)
        one_kernel = _inline(ctx, head_fam, head_p, sub)
        if one_kernel is not None:
            return one_kernel
        tmp = ctx.new_array(prod(out_shape), ctx.dtype_of(ctx.outs[0]))
        sub.outs = [tmp] + extra
        actions += FAMILIES[head_fam](sub, head_p)
        if any(isinstance(x, Host) for x in actions):  # the head has no device lowering yet
            return [Host(ctx.step)]
        ins, in_shapes = [tmp] + ins[n:], [out_shape] + in_shapes[n:]
    for shape in shapes:
        which = [k for k, s in enumerate(a["shapes"]) if tuple(s) == shape]
        actions += elementwise_actions(ctx, stem, [a["exprs"][k] for k in which], in_shapes, ins,
                                       shape, [ctx.outs[k] for k in which])
    return actions
