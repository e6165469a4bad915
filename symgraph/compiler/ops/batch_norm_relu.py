"""``contrib.BatchNormWithReLU`` (``_contrib_BatchNormWithReLU``): ``relu(BatchNorm(...))``
with BatchNorm's parameters, inputs, auxiliary states and outputs (MXNet 1.9.1 runs it with
oneDNN only; here it runs everywhere).

It is BatchNorm's definition with output 0 passed through relu: the numpy reference applies
relu to BatchNorm's, the gradient masks the head gradient where the output is 0 and is then
BatchNorm's one ``_backward_BatchNorm`` node, and the GPU runs BatchNorm's kernels with relu as
the epilogue of its normalising kernel (family ``batch_norm_relu``).

Example::

    y = sg.sym.contrib.BatchNormWithReLU(x, gamma, beta, mm, mv, fix_gamma=False)
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.attrs import Attrs
from ...core.registry import RunCtx, get_op, register

BN = get_op("BatchNorm")


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    outs = BN.compute(a, xs, ctx)
    return [np.maximum(outs[0], outs[0].dtype.type(0))] + outs[1:]


def _grad(c) -> list:
    """relu's mask on the head gradient, then BatchNorm's backward node."""
    a, dy = c.attrs, c.ograds[0] * (c.outputs[0] > 0.0)
    back = c.sym._backward_BatchNorm(dy, c.inputs[0], c.inputs[1], c.outputs[1],
                                     c.outputs[2], **a)
    return [back[0], None if a["fix_gamma"] else back[1], back[2], None, None]


register(replace(
    BN, name="_contrib_BatchNormWithReLU", compute=_compute, gradient=_grad,
    lowering="batch_norm_relu", group_epilogue=False, extra={},
    doc="Batch normalisation followed by relu (MXNet's fused oneDNN op), BatchNorm's "
        "parameters, statistics and outputs."))
