"""``gluon.contrib.rnn.rnn_cell``: ``LSTMPCell`` and ``VariationalDropoutCell`` (defined in
``gluon.rnn``) and :func:`dynamic_unroll`, a cell run over a sequence tensor with the
``foreach`` control-flow op, so a hybridized block unrolls without knowing the length."""
from __future__ import annotations

from typing import Any, Optional

from ....core.base import AttrError
from ...rnn import LSTMPCell, VariationalDropoutCell
from ...rnn.sequence import front_end

__all__ = ["LSTMPCell", "VariationalDropoutCell", "dynamic_unroll"]


def dynamic_unroll(cell: Any, inputs: Any, begin_state: list, drop_inputs: float = 0,
                   drop_outputs: float = 0, layout: str = "TNC",
                   valid_length: Optional[Any] = None) -> tuple[Any, list]:
    """Runs ``cell`` over every step of ``inputs`` (one tensor in ``layout``, 'TNC' or
    'NTC') from ``begin_state``; returns ``(outputs, states)``, outputs merged in ``layout``.
    With ``valid_length`` (N,), outputs past a sequence's length are 0 and its states are
    those of its last valid step. ``drop_inputs``/``drop_outputs``: dropout rates shared over
    the time axis.

    Example::

        cell = gluon.rnn.LSTMCell(5)
        cell.initialize()
        out, states = dynamic_unroll(cell, sg.nd.ones((3, 2, 4)), cell.begin_state(2))
    """
    F = front_end(inputs)
    axis = layout.find("T")
    if axis not in (0, 1) or sorted(layout) != sorted("TNC"):
        raise AttrError(f"dynamic_unroll: layout={layout!r}: must be 'TNC' or 'NTC'")
    if axis:  # foreach walks axis 0
        inputs = F.swapaxes(inputs, 0, 1)
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(0,))
    states = list(begin_state)
    if valid_length is None:
        def body(x: Any, st: list) -> tuple[Any, list]:
            return cell(x, st)
    else:
        states.append(F.zeros((1,)))  # the step number rides along as a last state

        def body(x: Any, st: list) -> tuple[Any, list]:
            out, new = cell(x, st[:-1])
            live = F.broadcast_greater(valid_length, st[-1])
            new = [F.where(live, n, s) for n, s in zip(new, st[:-1])]
            return out, new + [st[-1] + 1]
    outputs, states = F.contrib.foreach(body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(0,))
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, sequence_length=valid_length,
                                 use_sequence_length=True, axis=0)
        states = states[:-1]
    if axis:
        outputs = F.swapaxes(outputs, 0, 1)
    return outputs, list(states)
