"""Cells made of cells (MXNet 1.9.1's names and semantics): :class:`SequentialRNNCell`,
:class:`HybridSequentialRNNCell`, :class:`BidirectionalCell`, and the modifiers
:class:`DropoutCell`, :class:`ZoneoutCell`, :class:`ResidualCell`,
:class:`VariationalDropoutCell` (MXNet's ``contrib.rnn``). Dropout masks come from the
``Dropout`` op (``ones_like`` through it), so they are drawn only under ``autograd.record()``.

Example::

    stack = gluon.rnn.HybridSequentialRNNCell()
    stack.add(gluon.rnn.LSTMCell(16))
    stack.add(gluon.rnn.ResidualCell(gluon.rnn.LSTMCell(16)))
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ...core.base import GraphError
from .rnn_cell import HybridRecurrentCell, RecurrentCell
from .sequence import (format_sequence, front_end, is_tensor, mask_variable_length,
                       reverse_sequences, stack, zero_states)


class SequentialRNNCell(RecurrentCell):
    """Cells stacked: each step runs them in order, the states are theirs concatenated.

    Examples
    --------
    >>> stack = sg.gluon.rnn.SequentialRNNCell()
    >>> stack.add(sg.gluon.rnn.LSTMCell(4))
    >>> stack.add(sg.gluon.rnn.GRUCell(6))
    >>> stack.initialize()
    >>> x = sg.nd.ones((2, 5, 3))  # (batch, time, features)
    >>> outputs, states = stack.unroll(5, x, layout='NTC', merge_outputs=True)
    >>> outputs.shape, len(states)
    ((2, 5, 6), 3)
    """

    def add(self, cell: RecurrentCell) -> None:
        """Append a cell."""
        self.register_child(cell)

    def state_info(self, batch_size: int = 0) -> list:
        return [i for c in self._children.values() for i in c.state_info(batch_size)]

    def begin_state(self, batch_size: int = 0, **kwargs: Any) -> list:
        return [s for c in self._children.values() for s in c.begin_state(batch_size, **kwargs)]

    def _split(self, states: list) -> list:
        out, p = [], 0
        for cell in self._children.values():
            n = len(cell.state_info())
            out.append(states[p:p + n])
            p += n
        return out

    def step(self, inputs: Any, states: list) -> tuple[Any, list]:
        new: list = []
        for cell, own in zip(self._children.values(), self._split(states)):
            inputs, got = cell(inputs, own)
            new += got
        return inputs, new

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None,
               valid_length: Any = None) -> tuple[Any, list]:
        self.reset()
        F, batch = format_sequence(length, inputs, layout, None)[2:]
        begin = begin_state if begin_state is not None else \
            zero_states(self, F, batch, inputs, layout)
        cells, states = list(self._children.values()), []
        for k, (cell, own) in enumerate(zip(cells, self._split(begin))):
            inputs, got = cell.unroll(length, inputs, own, layout,
                                      None if k < len(cells) - 1 else merge_outputs,
                                      valid_length)
            states += got
        return inputs, states

    def __getitem__(self, i: int) -> RecurrentCell:
        return list(self._children.values())[i]

    def __len__(self) -> int:
        return len(self._children)


class HybridSequentialRNNCell(SequentialRNNCell, HybridRecurrentCell):
    """:class:`SequentialRNNCell` of hybrid cells.

    Examples
    --------
    >>> stack = sg.gluon.rnn.HybridSequentialRNNCell()
    >>> stack.add(sg.gluon.rnn.LSTMCell(4))
    >>> stack.add(sg.gluon.rnn.GRUCell(6))
    >>> stack.initialize()
    >>> x = sg.nd.ones((2, 5, 3))  # (batch, time, features)
    >>> outputs, states = stack.unroll(5, x, layout='NTC', merge_outputs=True)
    >>> outputs.shape
    (2, 5, 6)
    """

    step = SequentialRNNCell.step


class BidirectionalCell(HybridRecurrentCell):
    """``l_cell`` over the sequence and ``r_cell`` over it reversed (each sequence's valid
    part with ``valid_length``), outputs concatenated; unroll only.

    Examples
    --------
    >>> bi = sg.gluon.rnn.BidirectionalCell(sg.gluon.rnn.LSTMCell(4), sg.gluon.rnn.LSTMCell(4))
    >>> bi.initialize()
    >>> x = sg.nd.ones((2, 5, 3))  # (batch, time, features)
    >>> outputs, states = bi.unroll(5, x, layout='NTC', merge_outputs=True)
    >>> outputs.shape  # both directions' outputs side by side
    (2, 5, 8)
    """

    def __init__(self, l_cell: RecurrentCell, r_cell: RecurrentCell,
                 output_prefix: str = "bi_") -> None:
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def step(self, inputs: Any, states: list) -> tuple[Any, list]:
        raise GraphError("Bidirectional cannot be stepped. Please use unroll")

    def state_info(self, batch_size: int = 0) -> list:
        return [i for c in self._children.values() for i in c.state_info(batch_size)]

    begin_state = SequentialRNNCell.begin_state

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None,
               valid_length: Any = None) -> tuple[Any, list]:
        self.reset()
        steps, axis, F, batch = format_sequence(length, inputs, layout, False)
        states = begin_state if begin_state is not None else \
            zero_states(self, F, batch, steps, layout)
        l_cell, r_cell = self._children.values()
        n_l = len(l_cell.state_info())
        l_out, l_states = l_cell.unroll(length, steps, states[:n_l], layout, False,
                                        valid_length)
        r_out, r_states = r_cell.unroll(length, reverse_sequences(F, steps, length, valid_length),
                                        states[n_l:], layout, False, valid_length)
        r_out = reverse_sequences(F, r_out, length, valid_length)
        outputs = [F.Concat(a, b, dim=1, num_args=2, name=f"{self._output_prefix}t{i}")
                   for i, (a, b) in enumerate(zip(l_out, r_out))]
        # as MXNet: unless told, merged exactly when the (masked) steps come merged, i.e. with
        # valid lengths
        merge = valid_length is not None if merge_outputs is None else merge_outputs
        if valid_length is not None:
            outputs = mask_variable_length(F, outputs, length, valid_length, axis, merge)
        elif merge:
            outputs = stack(F, outputs, axis)
        return outputs, l_states + r_states


class ModifierCell(HybridRecurrentCell):
    """A cell wrapping ``base_cell`` (its parameters and states are the base cell's).

    Examples
    --------
    >>> cell = sg.gluon.rnn.ResidualCell(sg.gluon.rnn.GRUCell(3))  # a ModifierCell
    >>> isinstance(cell, sg.gluon.rnn.ModifierCell), type(cell.base_cell).__name__
    (True, 'GRUCell')
    """

    def __init__(self, base_cell: RecurrentCell) -> None:
        if base_cell._modified:
            raise GraphError(f"Cell {base_cell.name} is already modified. One cell cannot be "
                             f"modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self) -> Any:
        return self.base_cell.params

    def state_info(self, batch_size: int = 0) -> list:
        return self.base_cell.state_info(batch_size)

    def begin_state(self, batch_size: int = 0, **kwargs: Any) -> list:
        return self._on_base(self.base_cell.begin_state, batch_size, **kwargs)

    def _on_base(self, method: Callable, *args: Any, **kwargs: Any) -> Any:
        """``method(...)`` of the base cell, which it refuses while it is modified."""
        self.base_cell._modified = False
        try:
            return method(*args, **kwargs)
        finally:
            self.base_cell._modified = True


def _keep_mask(F: Any, like: Any, p: float) -> Any:
    """Ones through Dropout: 0 with probability ``p``, else ``1 / (1 - p)``."""
    return F.Dropout(F.ones_like(like), p=p)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs (one step, or the whole sequence at once when unrolled on one
    tensor); no states.

    Examples
    --------
    >>> cell = sg.gluon.rnn.DropoutCell(0.5)
    >>> out, states = cell(sg.nd.ones((1, 2)), [])
    >>> out  # outside training: the identity
    [[1. 1.]]
    <NDArray 1x2 @cpu(0)>
    """

    def __init__(self, rate: float, axes: tuple = (), prefix: Optional[str] = None,
                 params: Any = None) -> None:
        super().__init__(prefix, params)
        self._rate, self._axes = rate, tuple(axes)

    def _alias(self) -> str:
        return "dropout"

    def state_info(self, batch_size: int = 0) -> list:
        return []

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:
        if self._rate > 0:
            inputs = F.Dropout(inputs, p=self._rate, axes=self._axes,
                               name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None,
               valid_length: Any = None) -> tuple[Any, list]:
        self.reset()
        inputs, _, F, _ = format_sequence(length, inputs, layout, merge_outputs)
        if is_tensor(inputs):
            return self.hybrid_forward(F, inputs, begin_state or [])
        return super().unroll(length, inputs, begin_state, layout, merge_outputs)


class ZoneoutCell(ModifierCell):
    """Zoneout: each output and state keeps its previous value with probability
    ``zoneout_outputs`` / ``zoneout_states`` (training only).

    Examples
    --------
    >>> cell = sg.gluon.rnn.ZoneoutCell(sg.gluon.rnn.LSTMCell(4), zoneout_states=0.5)
    >>> cell.initialize()
    >>> x = sg.nd.ones((2, 5, 3))  # (batch, time, features)
    >>> outputs, states = cell.unroll(5, x, layout='NTC', merge_outputs=True)
    >>> outputs.shape
    (2, 5, 4)
    """

    def __init__(self, base_cell: RecurrentCell, zoneout_outputs: float = 0.0,
                 zoneout_states: float = 0.0) -> None:
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self._prev_output = None
        super().__init__(base_cell)

    def _alias(self) -> str:
        return "zoneout"

    def reset(self) -> None:
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:
        out, new = self.base_cell(inputs, states)
        prev = self._prev_output if self._prev_output is not None else F.zeros_like(out)
        if self.zoneout_outputs:
            out = F.where(_keep_mask(F, out, self.zoneout_outputs), out, prev)
        if self.zoneout_states:
            new = [F.where(_keep_mask(F, n, self.zoneout_states), n, o)
                   for n, o in zip(new, states)]
        self._prev_output = out
        return out, new


class ResidualCell(ModifierCell):
    """The base cell's output plus its input.

    Examples
    --------
    >>> cell = sg.gluon.rnn.ResidualCell(sg.gluon.rnn.GRUCell(3))  # output = cell(x) + x
    >>> cell.initialize()
    >>> x = sg.nd.ones((2, 5, 3))  # (batch, time, features)
    >>> outputs, states = cell.unroll(5, x, layout='NTC', merge_outputs=True)
    >>> outputs.shape
    (2, 5, 3)
    """

    def _alias(self) -> str:
        return "residual"

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:
        out, states = self.base_cell(inputs, states)
        return F.elemwise_add(out, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None,
               valid_length: Any = None) -> tuple[Any, list]:
        self.reset()
        outputs, states = self._on_base(self.base_cell.unroll, length, inputs, begin_state,
                                        layout, merge_outputs, valid_length)
        merge = is_tensor(outputs)
        inputs, axis, F, _ = format_sequence(length, inputs, layout, merge)
        if valid_length is not None:
            inputs = mask_variable_length(F, inputs, length, valid_length, axis, merge)
        if merge:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class VariationalDropoutCell(ModifierCell):
    """Dropout with one mask per sequence (drawn at the first step after ``reset``) on the
    inputs, the first state and the outputs (MXNet's ``contrib.rnn``).

    Examples
    --------
    >>> cell = sg.gluon.rnn.VariationalDropoutCell(sg.gluon.rnn.GRUCell(4), drop_inputs=0.5)
    >>> cell.initialize()
    >>> x = sg.nd.ones((2, 5, 3))  # (batch, time, features)
    >>> outputs, states = cell.unroll(5, x, layout='NTC', merge_outputs=True)
    >>> outputs.shape
    (2, 5, 4)
    """

    def __init__(self, base_cell: RecurrentCell, drop_inputs: float = 0.0,
                 drop_states: float = 0.0, drop_outputs: float = 0.0) -> None:
        self.drop_inputs, self.drop_states = drop_inputs, drop_states
        self.drop_outputs = drop_outputs
        self._masks: dict = {}
        super().__init__(base_cell)

    def _alias(self) -> str:
        return "vardrop"

    def reset(self) -> None:
        super().reset()
        self._masks = {}

    def _apply(self, F: Any, key: str, x: Any, p: float) -> Any:
        if not p:
            return x
        if key not in self._masks:
            self._masks[key] = _keep_mask(F, x, p)
        return x * self._masks[key]

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None,
               valid_length: Any = None) -> tuple[Any, list]:
        """Without state dropout, as MXNet: one dropout over the whole input and output
        sequences (a mask shared along time) around the base cell's merged unroll; outputs
        merged unless ``merge_outputs`` is False."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length)
        self.reset()
        inputs, axis, F, batch = format_sequence(length, inputs, layout, True)
        states = begin_state if begin_state is not None else \
            zero_states(self, F, batch, inputs, layout)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self._on_base(self.base_cell.unroll, length, inputs, states,
                                        layout, True, valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        return format_sequence(length, outputs, layout, merge_outputs)[0], states

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:
        states = list(states)
        states[0] = self._apply(F, "states", states[0], self.drop_states)
        inputs = self._apply(F, "inputs", inputs, self.drop_inputs)
        out, new = self.base_cell(inputs, states)
        return self._apply(F, "outputs", out, self.drop_outputs), new


__all__ = ["SequentialRNNCell", "HybridSequentialRNNCell", "BidirectionalCell", "ModifierCell",
           "DropoutCell", "ZoneoutCell", "ResidualCell", "VariationalDropoutCell"]
