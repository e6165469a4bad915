"""Ops defined by a composition of registered ops (an ``expand`` rule), besides their numpy
reference.

``expand(S, attrs, xs, shapes, dtypes) -> [handle per output]`` builds the op from ``S``'s
functions (``build.OPS``: every registered op over handles) given the input handles ``xs``,
their shapes and their dtypes. From it come:

* the gradient: ``expand`` on fresh variables, differentiated by ``passes/gradient.py``
  and spliced onto the node's inputs and output gradients, so it is built from registered ops
  and can be differentiated again;
* the GPU lowering: ``extra["unroll"]``, read by ``passes/unroll_control_flow.py`` (the CUDA
  backend's first pass), which replaces the node by the expansion's kernels in the program.

The numpy reference stays a separate, direct implementation: the registry's GPU tests compare
the expansion with it. Use this for ops whose expansion costs no more than a kernel of their
own would (a GEMM with a constant matrix, a batch_dot over views).

Example::

    def _expand(S, a, xs, shapes, dtypes):
        return [S.dot(xs[0], xs[1])]

    register(OpDef("my_op", ..., gradient=composite_gradient(_expand), lowering=UNROLLED,
                   extra={"unroll": composite_unroll(_expand)}))
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core.build import OPS, Handle
from ...core.graph import Entry, Node, unique_name, variable
from ...core.subgraph import Subgraph
from ...core.types.table import TypeTable
from .constant import constant_attrs
from .control_flow import UNROLLED, body_gradient, body_types

Expand = Callable[[Any, Any, list, list, list], list]

COMPOSED = UNROLLED
"""The lowering of a composite op: its expansion is unrolled into the program's kernels."""


def _entries(handles: list) -> list[Entry]:
    return [e for h in handles for e in h.outputs_]


def composite_unroll(expand: Expand) -> Callable[[Node, TypeTable], list[Entry]]:
    """The ``extra["unroll"]`` rule of an op built by ``expand``."""
    def rule(node: Node, types: TypeTable) -> list[Entry]:
        xs = [Handle((e,)) for e in node.inputs]
        shapes = [types.shape(e) for e in node.inputs]
        dtypes = [types.dtype(e) for e in node.inputs]
        return _entries(expand(OPS, node.attrs, xs, shapes, dtypes))
    return rule


def composite_gradient(expand: Expand, wrt: tuple[int, ...] = ()) -> Callable[[Any], list]:
    """The gradient rule of an op built by ``expand``: the expansion's gradient, spliced onto
    the node. Inputs not in ``wrt`` (all differentiable when empty) get None."""
    def grad(c: Any) -> list:
        ins = [h.outputs_[0] for h in c.inputs]
        shapes = [c.types.shape(e) for e in ins]
        dtypes = [c.types.dtype(e) for e in ins]
        taken: set[str] = set()
        xs = [variable(unique_name(f"{c.node.name}_in{i}", taken)) for i in range(len(ins))]
        outs = _entries(expand(OPS, c.attrs, [Handle((Entry(v),)) for v in xs], shapes,
                                dtypes))
        body = Subgraph(xs, outs)
        heads, grads = body_gradient(body, body_types(body, shapes, dtypes))
        made = Subgraph(xs + heads, grads).splice(
            ins + [g.outputs_[0] for g in c.ograds[:len(heads)]], "")
        return [Handle((e,)) if not wrt or i in wrt else None for i, e in enumerate(made)]
    return grad


def constant(S: Any, value: np.ndarray, dtype: Any) -> Any:
    """A ``_constant`` node holding ``value`` converted to ``dtype``."""
    return S._constant(value=constant_attrs(np.asarray(value).astype(dtype))["value"])
