"""``_contrib_SyncBatchNorm`` (MXNet's ``sym.contrib.SyncBatchNorm``): batch normalisation
whose batch statistics MXNet reduces over the ``ndev`` devices of a data-parallel step that
share ``key``. Within one graph (one device) it is BatchNorm over axis 1: the same shape,
dtype, numpy and gradient rules (``_backward_BatchNorm``) and the same GPU lowering. The
cross-device reduction belongs to the data-parallel runner, which splits a batch over
replicas; until it reduces these statistics each replica normalises with its own batch
(docs/mxnet_parity.md).

Example::

    y = sg.sym.contrib.SyncBatchNorm(x, gamma, beta, mm, mv, key="bn0", ndev=1)
"""
from __future__ import annotations

from dataclasses import replace

from ...core.attrs import Param
from ...core.registry import get_op, register
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


# BatchNorm's definition (inputs, aux states, outputs, rules, lowering) with two more attributes
register(replace(
    get_op("BatchNorm"), name="_contrib_SyncBatchNorm", params=SYNC_PARAMS, gradient=_grad,
    doc="Synchronized batch normalisation (channel axis 1); on one device BatchNorm. "
        "`ndev` and `key` name the devices whose statistics MXNet reduces together."))
