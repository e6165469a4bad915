"""Lowering of the optimizer update ops (``ops/update*.py``): each of an op's formula groups is
one elementwise kernel (weight, gradient and states in their own dtypes, the new weight and
states written to the step's outputs, which the program copies into the states), and the
per-array reductions of ``multi_sum_sq`` / ``all_finite`` are one reduction each.
"""
from __future__ import annotations

from math import prod

from .actions import Fill, StepCtx, family
from .lowering_elementwise import elementwise_actions
from .lowering_reduce import reduce_actions


@family("update")
def _update(ctx: StepCtx, p: dict) -> list:
    """``p['groups'](attrs)``: the op's :class:`~symgraph.compiler.ops.update.Group` s. An operand
    reading one element of an input (a preloaded learning rate) is that element's address,
    read as a (1,)-shaped array the kernel broadcasts."""
    actions: list = []
    for k, grp in enumerate(p["groups"](ctx.attrs)):
        outs = [ctx.outs[o] for o in grp.targets]
        shape = ctx.out_shapes[grp.targets[0]]
        if not grp.operands:  # constant formulas (reset_arrays): memsets
            actions += [Fill(r, float(f.value), prod(shape), ctx.dt(r))
                        for r, f in zip(outs, grp.formulas) if prod(shape)]
            continue
        if not prod(shape):
            continue
        refs = [ctx.ins[i] if e is None else ctx.at(ctx.ins[i], e) for i, e in grp.operands]
        shapes = [ctx.in_shapes[i] if e is None else (1,) for i, e in grp.operands]
        actions += elementwise_actions(ctx, f"{ctx.stem}_{k}", list(grp.formulas), shapes, refs,
                                       shape, outs)
    return actions


@family("reduce_each")
def _reduce_each(ctx: StepCtx, p: dict) -> list:
    """``p['kind']``: the reduction of each input into element k of the output; with
    ``p['combine']`` (a reduction kind) the per-input results go to a scratch vector that is
    reduced once more into the single output (all_finite over several arrays)."""
    kind, combine = p["kind"], p["combine"]
    n = len(ctx.ins)
    into = ctx.outs[0] if combine is None else ctx.new_array(n, "float32")
    empty = 0.0 if kind == "sumsq" else 1.0  # (the reduction of no element)
    actions: list = []
    for k, (src, shape) in enumerate(zip(ctx.ins, ctx.in_shapes)):
        dst = ctx.at(into, k)
        if not prod(shape):
            actions.append(Fill(dst, empty, 1, "float32"))
            continue
        actions += reduce_actions(ctx, tuple(shape), tuple(range(len(shape))), kind, src, dst)
    if combine is not None:
        actions += reduce_actions(ctx, (n,), (0,), combine, into, ctx.outs[0])
    return actions
