"""``_rnn_param_concat`` (MXNet's internal op of the same name): Concat whose shape rule also
decides several inputs of unknown size, by giving each an equal share of what the known ones
leave of the output.

Why: a Gluon RNN layer joins its parameters into the fused op's flat vector, and the ``RNN``
op's shape rule gives that vector's size from the data. The weights whose width is still
unknown are the first layer's ``i2h`` weights, one per direction, all of the same shape: with
two directions Concat's rule (one unknown at most) could not decide them, so a bidirectional
layer inside a hybridized block could not infer its input size. Everything else (numpy
reference, gradient, GPU lowering) is Concat's.

Example::

    flat = sg.sym._rnn_param_concat(w_l, w_r, b, dim=0, num_args=3)
"""
from __future__ import annotations

from dataclasses import replace

from ...core.attrs import Attrs
from ...core.base import ShapeError
from ...core.registry import get_op, register
from ._util import fmt
from .norm import check_axis

CONCAT = get_op("Concat")


def _rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    out = outs[0]
    if out is not None and 0 not in out:
        ax = check_axis(a["dim"], len(out))
        unknown = [i for i, s in enumerate(ins) if s is None or s[ax] == 0]
        if len(unknown) > 1:
            left = out[ax] - sum(s[ax] for i, s in enumerate(ins) if i not in unknown)
            if left < 0 or left % len(unknown):
                raise ShapeError(f"output {fmt(out)}: {left} along dim {ax} cannot be shared "
                                 f"equally by the {len(unknown)} inputs of unknown size")
            ins = list(ins)
            for i in unknown:
                ins[i] = tuple(left // len(unknown) if k == ax else d for k, d in enumerate(out))
    return CONCAT.infer_shape(a, ins, outs)


register(replace(
    CONCAT, name="_rnn_param_concat", infer_shape=_rule,
    doc="Concat of an RNN layer's parameters: inputs of unknown size along dim share what the "
        "known ones leave of the output equally."))
