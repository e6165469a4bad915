"""``_fused``: the node the fusion pass makes from a group of elementwise/broadcast ops.

Attributes (all hashable, set by ``passes/fuse_elementwise.py``, read by the backends):

* ``exprs``: one scalar :class:`~symgraph.core.expr.Expr` per output, over the fused inputs;
* ``shapes``: each output's shape (fusion runs after shape inference);
* ``members``: the op names of the group, in order, for kernel names and ``debug_str``;
* ``nodes``: the names of the graph nodes the group replaced, in the same order (what
  ``sg.profiler`` and ``viz --compiled`` show; empty for hand-made nodes);
* ``out_members``: for each output, the index in ``members`` of the member that computes it
  (``viz --compiled`` draws each edge from that member; empty for hand-made nodes);
* ``in_members``: for each node input, the index in ``members`` of the (first) member that
  reads it (``viz --compiled`` draws the edge into that member);
* ``head``: ``None``, or ``(op, attrs, n)`` for a GEMM-like epilogue producer: the first ``n``
  node inputs feed op ``op`` (FullyConnected, Convolution...) and its output is expression input
  0; the remaining node inputs are expression inputs 1, 2, ... Without a head, node input ``i`` is
  expression input ``i``;
* ``extra`` (default empty): ``(shape, dtype name)`` of each of the head's outputs after its
  first, which are the node's outputs after the group's (a BatchNorm head's batch statistics
  and moving statistics: ``passes/fuse_bn_epilogue.py``);
* ``dtype`` (default None: the inputs' one dtype): the dtype a headless group computes in; its
  inputs may then be of any float dtype that dtype holds exactly, each converted as it is read
  (``passes/absorb_casts.py``: a widening cast done by its reader);
* ``out_dtypes`` (default empty: all ``dtype``): each output's dtype, each value converted as it
  is stored (a narrowing cast done by its producer).

Fusion runs after autodiff, so a fused node is never differentiated.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.dtypes import as_dtype
from ...core.expr import evaluate, inp
from ...core.graph import Node
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, get_op, register, same_type


def _fused_inputs(a: Attrs) -> tuple[str, ...]:
    return tuple(f"in{i}" for i in range(a["num_inputs"]))


def _fused_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    head, rest = a["head"], []
    if head is not None:
        op, attrs, n = head
        got = get_op(op).compute(attrs, list(xs[:n]), ctx)
        xs, rest = got[:1] + list(xs[n:]), list(got[1:1 + len(a.get("extra", ()))])
    dtype = a.get("dtype")
    if dtype is None:
        dtype = np.result_type(*xs)
    else:  # inputs of narrower floats, widened exactly, as the casts they replace did
        xs = [x.astype(dtype, copy=False) for x in xs]
    outs = evaluate(a["exprs"], xs, dtype)
    stored = a.get("out_dtypes") or (None,) * len(outs)
    return [(np.broadcast_to(o, s) if o.shape != tuple(s) else o).astype(t or o.dtype, copy=False)
            for o, s, t in zip(outs, a["shapes"], stored)] + rest


def lone_group(node: Node, shape: tuple, dtype: Optional[str] = None) -> Attrs:
    """The attributes of a headless group of one elementwise node with a formula
    (``OpDef.expr``), its output of ``shape``, computing in ``dtype`` (None: its inputs' one
    dtype). Fusion leaves a lone node as it is; a pass that needs it as a group (a
    BatchNorm's epilogue, a reader of narrower inputs) makes it one."""
    n = len(node.inputs)
    expr = get_op(node.op).expr(node.attrs, *(inp(i) for i in range(n)))
    return Attrs({"exprs": (expr,), "head": None, "in_members": (0,) * n,
                  "members": (node.op,), "name": "fused_" + node.op.lstrip("_"),
                  "nodes": (node.name,), "num_inputs": n, "out_members": (0,),
                  "shapes": (shape,), "dtype": dtype})


def _fused_shapes(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [tuple(s) for s in a["shapes"]] + [tuple(s) for s, _ in a.get("extra", ())]


def _fused_types(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """The group's outputs share their inputs' dtype (or are ``dtype``/``out_dtypes``, the
    inputs then free); a head's extra outputs keep theirs."""
    extra = a.get("extra", ())
    n_group = len(outs) - len(extra)
    if a.get("dtype") is not None:
        group = [as_dtype(t) for t in a.get("out_dtypes") or (a["dtype"],) * n_group]
    else:
        ins, group = same_type(a, ins, outs[:n_group])
    return ins, list(group) + [as_dtype(t) for _, t in extra]


register(OpDef(
    "_fused",
    {"exprs": Param("any"), "shapes": Param("any"), "members": Param("any", ()),
     "nodes": Param("any", ()), "out_members": Param("any", ()), "in_members": Param("any", ()),
     "head": Param("any", None), "num_inputs": Param("int"), "name": Param("str", "fused"),
     "extra": Param("any", ()),
     "dtype": Param("any", None, doc="the dtype a headless group computes in (None: its "
                    "inputs' one dtype); its inputs may be narrower floats"),
     "out_dtypes": Param("any", (), doc="each output's dtype (empty: all `dtype`)")},
    _fused_inputs, _fused_shapes, _fused_compute, NOT_DIFFERENTIABLE, OPAQUE, lowering="fused",
    infer_type=_fused_types,
    outputs=lambda a: tuple(f"output{i}"
                            for i in range(len(a["exprs"]) + len(a.get("extra", ())))),
    # Inputs read elementwise (may be overwritten in place); a head's GEMM writes the output
    # before the epilogue reads its operands, so a headed group has none.
    extra={"elementwise_inputs": lambda a: () if a["head"] else range(a["num_inputs"]),
           # (op, node name) of each member, read by symgraph/provenance.py
           "members": lambda a: tuple(zip(a["members"],
                                          a["nodes"] or ("?",) * len(a["members"])))},
    doc="A fused elementwise group (optionally with a GEMM-like head); see module docstring."))
