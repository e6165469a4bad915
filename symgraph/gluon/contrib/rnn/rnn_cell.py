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

    Examples
    --------
    >>> cell = sg.gluon.rnn.RNNCell(2, 'relu', input_size=1, i2h_weight_initializer='ones',
    ...                             h2h_weight_initializer='zeros')
    >>> cell.initialize()  # so each step's output is relu(x), twice
    >>> x = sg.nd.array([[[1], [2], [3]]])  # one sequence of 3 steps, 'NTC'
    >>> unroll = sg.gluon.contrib.rnn.dynamic_unroll
    >>> out, states = unroll(cell, x, cell.begin_state(1), layout='NTC',
    ...                      valid_length=sg.nd.array([2]))
    >>> out  # the step past the valid length is 0
    [[[1. 1.]
      [2. 2.]
      [0. 0.]]]
    <NDArray 1x3x2 @cpu(0)>
    >>> states[0]  # the state of the last valid step
    [[2. 2.]]
    <NDArray 1x2 @cpu(0)>
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
