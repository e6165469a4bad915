"""The helpers of MXNet's multi-tensor optimizers: ``multi_sum_sq`` (one sum of squares per
array, LAMB's and LARS's norms), ``all_finite`` / ``multi_all_finite`` (AMP's overflow check),
``multi_lars`` (LARS's per-layer learning rates) and ``reset_arrays`` (zero gradients in place).

The reductions lower to the ``reduce_each`` GPU family (one reduction per array,
``cuda/lowering_update.py``); ``multi_lars`` is an elementwise formula; ``reset_arrays`` is an
``update`` op whose formulas are zeros, written back into its inputs after every call.

Example::

    >>> import symgraph as sg
    >>> sg.nd.multi_sum_sq(sg.nd.ones((2, 2)), sg.nd.ones((3,)), num_arrays=2).asnumpy()
    array([4., 3.], dtype=float32)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import AttrError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, REDUCE, OpDef, RunCtx, register
from ._util import elementwise
from .update import Group, group_shape


NUM = Param("int", doc="number of input arrays")


def _arrays(a: Attrs) -> tuple[str, ...]:
    n = a["num_arrays"]
    if n < 1:
        raise AttrError(f"num_arrays={n}: at least one array is needed")
    return tuple(f"array_{i}" for i in range(n))


def _one_output(size: Any) -> Any:
    """Shape rule: the inputs keep their shapes; the output is ``(size(attrs),)``."""
    return lambda a, ins, outs: (ins, [(size(a),)])


def _float32_out(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [np.dtype(np.float32)]


def _sum_sq(a: Attrs, xs: list, ctx: RunCtx) -> list:
    # float32 data sums in float32 as MXNet's kernel does; float64 stays float64
    acc = [np.sum(np.square(x.astype(np.result_type(x.dtype, np.float32)))) for x in xs]
    return [np.asarray(acc, np.float32)]


def _finite(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [np.asarray([float(all(np.isfinite(x).all() for x in xs))], np.float32)]


register(OpDef(
    "multi_sum_sq", {"num_arrays": NUM}, _arrays, _one_output(lambda a: a["num_arrays"]),
    _sum_sq, NOT_DIFFERENTIABLE, REDUCE, infer_type=_float32_out,
    lowering=("reduce_each", {"kind": "sumsq", "combine": None}),
    doc="The sum of squares of each of num_arrays arrays, as one float32 vector."))

INIT = {"init_output": Param("bool", True, doc="MXNet starts from 1 (finite) when true; "
                                               "symgraph always does (outputs are fresh)")}
register(OpDef(
    "all_finite", INIT, ("data",), _one_output(lambda a: 1), _finite, NOT_DIFFERENTIABLE,
    REDUCE, infer_type=_float32_out,
    lowering=("reduce_each", {"kind": "finite", "combine": "min"}),
    doc="[1.0] when every element of data is finite, else [0.0] (float32)."))
register(OpDef(
    "multi_all_finite", {"num_arrays": Param("int", 1, doc=NUM.doc), **INIT}, _arrays,
    _one_output(lambda a: 1), _finite, NOT_DIFFERENTIABLE, REDUCE, infer_type=_float32_out,
    lowering=("reduce_each", {"kind": "finite", "combine": "min"}),
    doc="[1.0] when every element of the num_arrays arrays is finite, else [0.0] (float32)."))


def _lars(a: Attrs, lrs: E.Expr, w_sq: E.Expr, g_sq: E.Expr, wds: E.Expr) -> E.Expr:
    w = E.call("sqrt", w_sq)
    valid = E.call("gt", w, 0.0) * E.call("gt", g_sq, 0.0)
    scaled = lrs * a["eta"] * w / (E.call("sqrt", g_sq) * a["rescale_grad"] + wds * w + a["eps"])
    return E.where(valid, scaled, lrs)


elementwise(
    "multi_lars", _lars, NOT_DIFFERENTIABLE, inputs=("lrs", "weights_sum_sq", "grads_sum_sq",
                                                     "wds"),
    params={"eta": Param("float", doc="LARS trust coefficient"),
            "eps": Param("float", doc="added to the denominator for stability"),
            "rescale_grad": Param("float", 1.0, doc="the gradient norms are multiplied by "
                                                    "this")},
    doc="LARS learning rates: lrs*eta*||w||/(||g||*rescale_grad + wds*||w|| + eps) where both "
        "norms are positive, else lrs (inputs hold squared norms, one per layer).")


def _zero_groups(a: Attrs) -> tuple[Group, ...]:
    return tuple(Group((E.const(0.0),), (), (i,), (i,)) for i in range(len(_arrays(a))))


def _zeros(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [np.zeros_like(x) for x in xs]


register(OpDef(
    "reset_arrays", {"num_arrays": NUM}, _arrays, group_shape(_zero_groups), _zeros,
    NOT_DIFFERENTIABLE, OPAQUE, aux=_arrays,
    infer_type=lambda a, ins, outs: (ins, list(ins)),
    outputs=lambda a: tuple(f"{n}_new" for n in _arrays(a)),
    mutates=lambda a: tuple((i, i) for i in range(a["num_arrays"])), always_mutates=True,
    lowering=("update", {"groups": _zero_groups}),
    doc="Set num_arrays arrays to zero in place (returns the zeroed arrays; MXNet returns "
        "nothing)."))
