"""``_contrib_SyncBatchNorm`` (MXNet's ``sym.contrib.SyncBatchNorm``): batch normalisation
whose batch statistics MXNet reduces over the ``ndev`` devices of a data-parallel step that
share ``key``. One node is BatchNorm over axis 1: the same shape, dtype, numpy and gradient
rules (``_backward_BatchNorm``) and the same GPU lowering. The reduction over devices is a
rewrite of the training graph (``extra["replicas"]``, applied by
``passes/merge_replicas.py``): when the graph holds the ``ndev`` nodes of one ``key`` (the
replicas' forward passes, differentiated together), each becomes its rows of a BatchNorm over
the replicas' data concatenated along the batch axis, so statistics, moving statistics and
gradients are those of the global batch. A lone node keeps its own batch's statistics.

Example::

    y = sg.sym.contrib.SyncBatchNorm(x, gamma, beta, mm, mv, key="bn0", ndev=1)
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

from ...core.attrs import Param
from ...core.build import OPS, Handle
from ...core.graph import Entry, Node
from ...core.registry import get_op, register
from ...core.types.table import TypeTable
from .norm import BN_PARAMS

SYNC_PARAMS = {
    **BN_PARAMS,
    "ndev": Param("int", 1, doc="the number of devices whose batches share the statistics"),
    "key": Param("str", doc="the layer's synchronisation key (Gluon uses its prefix)"),
    "axis": Param("int", 1, choices=(1,), doc="the channel axis (always 1, as MXNet)"),
}


def _grad(c) -> list:
    """BatchNorm's one ``_backward_BatchNorm`` node, given BatchNorm's attributes."""
    a = {k: v for k, v in c.attrs.items() if k not in ("ndev", "key")}
    back = c.sym._backward_BatchNorm(c.ograds[0], c.inputs[0], c.inputs[1], c.outputs[1],
                                     c.outputs[2], **a)
    return [back[0], None if a["fix_gamma"] else back[1], back[2], None, None]


def _replica_key(node: Node) -> Optional[tuple]:
    """The group of a node whose statistics are shared, with its expected size; None when
    there is nothing to share (one device, or the moving statistics are used)."""
    a = node.attrs
    if a["ndev"] < 2 or a["use_global_stats"]:
        return None
    return (a["key"], a["ndev"])


def _merge(nodes: Sequence[Node], types: TypeTable) -> list[list[Entry]]:
    """Per node, its five outputs from one BatchNorm over all the nodes' data concatenated
    along axis 0: a BatchNorm per node (its gamma, beta and moving statistics: MXNet updates
    every replica's with the global statistics), whose output is sliced back to its rows."""
    data = [Handle((n.inputs[0],)) for n in nodes]
    joined = OPS.Concat(*data, dim=0, num_args=len(nodes))
    out, begin = [], 0
    for n in nodes:
        rows = types.shape(n.inputs[0])[0]
        a = {k: v for k, v in n.attrs.items() if k not in ("ndev", "key")}
        params = [Handle((e,)) for e in n.inputs[1:]]
        bn = OPS.BatchNorm(joined, *params, **a)
        mine = OPS.slice_axis(bn[0], axis=0, begin=begin, end=begin + rows)
        out.append([mine.outputs_[0]] + [Entry(bn.outputs_[0].node, i) for i in range(1, 5)])
        begin += rows
    return out


# BatchNorm's definition (inputs, aux states, outputs, rules, lowering) with two more attributes
register(replace(
    get_op("BatchNorm"), name="_contrib_SyncBatchNorm", params=SYNC_PARAMS, gradient=_grad,
    extra={**get_op("BatchNorm").extra, "replicas": (_replica_key, _merge)},
    doc="Synchronized batch normalisation (channel axis 1); on one device BatchNorm. "
        "`ndev` and `key` name the devices whose statistics MXNet reduces together."))
