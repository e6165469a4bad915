"""Cells made of cells (MXNet's ``mx.rnn``): a stack, the two directions of a sequence,
and the modifiers (dropout between layers, zoneout, a residual connection), plus
:class:`FusedRNNCell`, the whole stack as one ``RNN`` op that :meth:`~FusedRNNCell.unfuse`
turns back into cells."""
from __future__ import annotations

from typing import Any, Callable, Optional

from ...runtime import ndarray as _nd
from ...frontend import symbol as _sym
from ...core.base import AttrError, GraphError
from ...gluon.rnn.sequence import format_sequence
from . import fused_weights as FW
from .fused_init import FusedRNN
from .rnn_cell import (BaseRNNCell, GRUCell, LSTMCell, RNNCell, RNNParams, check_not_fused,
                       zeros_like_batch)

__all__ = ["SequentialRNNCell", "BidirectionalCell", "ModifierCell", "DropoutCell",
           "ZoneoutCell", "ResidualCell", "FusedRNNCell"]


def _split_states(cells: list, states: Optional[list]) -> list:
    """``states`` cut into each cell's share, in order (None: each cell makes its own)."""
    if states is None:
        return [None] * len(cells)
    out, p = [], 0
    for cell in cells:
        n = len(cell.state_info)
        out.append(states[p:p + n])
        p += n
    return out


class _CellGroup(BaseRNNCell):
    """Cells holding ``_cells``: their states, in order, are this cell's."""

    _cells: list

    @property
    def state_info(self) -> list:
        return sum((c.state_info for c in self._cells), [])

    def begin_state(self, **kwargs: Any) -> list:
        if self._modified:
            raise GraphError("after applying a modifier cell, call begin_state on it instead")
        return sum((c.begin_state(**kwargs) for c in self._cells), [])

    def unpack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_CellGroup):
    """Cells stacked: each step's output is the next cell's input."""

    def __init__(self, params: Optional[RNNParams] = None) -> None:
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append ``cell`` on top of the stack (its weights join this cell's params)."""
        self._cells.append(cell)
        if self._override_cell_params:
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        self._counter += 1
        new: list = []
        for cell, share in zip(self._cells, _split_states(self._cells, states)):
            check_not_fused(cell, "a step of SequentialRNNCell", (BidirectionalCell,))
            inputs, share = cell(inputs, share)
            new += share
        return inputs, new

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple[Any, list]:
        self.reset()
        last = len(self._cells) - 1
        new: list = []
        for i, (cell, share) in enumerate(zip(self._cells,
                                              _split_states(self._cells, begin_state))):
            inputs, share = cell.unroll(length, inputs, share, layout,
                                        merge_outputs if i == last else None)
            new += share
        return inputs, new


class BidirectionalCell(_CellGroup):
    """``l_cell`` forward and ``r_cell`` backward in time; outputs concatenated (only
    :meth:`unroll`: a bidirectional cell has no single step)."""

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell,
                 params: Optional[RNNParams] = None, output_prefix: str = "bi_") -> None:
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        if params is not None:
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        raise GraphError("BidirectionalCell cannot be stepped; use unroll")

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple[Any, list]:
        self.reset()
        inputs, axis = format_sequence(length, inputs, layout, False)[:2]
        (l_cell, r_cell), (l_st, r_st) = self._cells, _split_states(self._cells, begin_state)
        l_out, l_states = l_cell.unroll(length, inputs, l_st, layout, merge_outputs)
        r_out, r_states = r_cell.unroll(length, list(reversed(inputs)), r_st, layout,
                                        merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_out, _sym.Symbol) and isinstance(r_out, _sym.Symbol)
            l_out = format_sequence(length, l_out, layout, merge_outputs)[0]
            r_out = format_sequence(length, r_out, layout, merge_outputs)[0]
        pre = self._output_prefix
        if merge_outputs:
            outputs = _sym.Concat(l_out, _sym.reverse(r_out, axis=axis), dim=2,
                                  name=f"{pre}out")
        else:
            outputs = [_sym.Concat(lo, ro, dim=1, name=f"{pre}t{i}")
                       for i, (lo, ro) in enumerate(zip(l_out, reversed(r_out)))]
        return outputs, l_states + r_states


class ModifierCell(BaseRNNCell):
    """A cell wrapping ``base_cell`` (whose own ``begin_state`` is then off limits)."""

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list:
        return self.base_cell.state_info

    def begin_state(self, init_sym: Callable = _sym.zeros, func: Optional[Callable] = None,
                    **kwargs: Any) -> list:
        """The base cell's states (``func``: the base class's name for ``init_sym``)."""
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func or init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict) -> dict:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict) -> dict:
        return self.base_cell.pack_weights(args)


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs (between stacked cells); no state."""

    def __init__(self, dropout: float, prefix: str = "dropout_",
                 params: Optional[RNNParams] = None) -> None:
        super().__init__(prefix, params)
        self.dropout = float(dropout)

    @property
    def state_info(self) -> list:
        return []

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        if self.dropout > 0:
            inputs = _sym.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple[Any, list]:
        self.reset()
        if isinstance(inputs, _sym.Symbol) and merge_outputs is not False:
            return self(inputs, [])  # one dropout over the whole sequence
        return super().unroll(length, inputs, begin_state, layout, merge_outputs)


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): each unit keeps its previous output / state with
    probability ``zoneout_outputs`` / ``zoneout_states`` while training."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0,
                 zoneout_states: float = 0.0) -> None:
        check_not_fused(base_cell, "ZoneoutCell", (FusedRNNCell, BidirectionalCell))
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self.prev_output: Any = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        out, new = self.base_cell(inputs, states)

        def keep_new(p: float, new_v: Any, old_v: Any) -> Any:
            # Dropout of ones: 0 where the old value is kept (zoned out), 1/(1-p) elsewhere
            mask = _sym.Dropout(_sym.ones_like(new_v), p=p)
            return _sym.where(mask, new_v, old_v)
        prev = self.prev_output if self.prev_output is not None else _sym.zeros_like(out)
        if self.zoneout_outputs:
            out = keep_new(self.zoneout_outputs, out, prev)
        if self.zoneout_states:
            new = [keep_new(self.zoneout_states, n, o) for n, o in zip(new, states)]
        self.prev_output = out
        return out, new


class ResidualCell(ModifierCell):
    """``output = base_cell(x) + x`` (He et al.; Wu et al. 2016, GNMT)."""

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        out, states = self.base_cell(inputs, states)
        return _sym.elemwise_add(out, inputs, name=f"{out.name}_plus_residual"), states

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple[Any, list]:
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, begin_state, layout,
                                                    merge_outputs)
        finally:
            self.base_cell._modified = True
        merge = isinstance(outputs, _sym.Symbol) if merge_outputs is None else merge_outputs
        inputs = format_sequence(length, inputs, layout, merge)[0]
        if merge:
            return _sym.elemwise_add(outputs, inputs, name=f"{outputs.name}_plus_residual"), \
                states
        return [_sym.elemwise_add(o, i, name=f"{o.name}_plus_residual")
                for o, i in zip(outputs, inputs)], states


_UNFUSED: dict[str, Callable[[int, str], BaseRNNCell]] = {
    "rnn_relu": lambda h, pre: RNNCell(h, activation="relu", prefix=pre),
    "rnn_tanh": lambda h, pre: RNNCell(h, activation="tanh", prefix=pre),
    "lstm": lambda h, pre: LSTMCell(h, prefix=pre),
    "gru": lambda h, pre: GRUCell(h, prefix=pre),
}


class FusedRNNCell(BaseRNNCell):
    """The whole (multi-layer, optionally bidirectional) network as one ``RNN`` op over a
    flat ``parameters`` vector; :meth:`unfuse` gives the equivalent stack of cells."""

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = "lstm",
                 bidirectional: bool = False, dropout: float = 0.0,
                 get_next_state: bool = False, forget_bias: float = 1.0,
                 prefix: Optional[str] = None, params: Optional[RNNParams] = None) -> None:
        if mode not in _UNFUSED:
            raise AttrError(f"FusedRNNCell: mode={mode!r}; one of {sorted(_UNFUSED)}")
        super().__init__(f"{mode}_" if prefix is None else prefix, params)
        self._num_hidden, self._num_layers, self._mode = num_hidden, num_layers, mode
        self._bidirectional, self._dropout = bidirectional, dropout
        self._get_next_state, self._forget_bias = get_next_state, forget_bias
        self._directions = ["l", "r"] if bidirectional else ["l"]
        self._parameter = self.params.get("parameters", init=FusedRNN(
            None, num_hidden, num_layers, mode, bidirectional, forget_bias))

    @property
    def state_info(self) -> list:
        shape = (len(self._directions) * self._num_layers, 0, self._num_hidden)
        return [{"shape": shape, "__layout__": "LNC"}] * (2 if self._mode == "lstm" else 1)

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        raise GraphError("FusedRNNCell cannot be stepped; use unroll")

    def unpack_weights(self, args: dict) -> dict:
        """``prefix + 'parameters'`` split into named per-layer, per-gate arrays (MXNet's
        names, e.g. ``lstm_l0_i2h_f_weight``), as the unfused cells hold them."""
        args = dict(args)
        flat = args.pop(f"{self._prefix}parameters")
        parts = FW.unpack(FW.as_numpy(flat).reshape(-1), self._prefix, self._mode,
                          self._num_layers, self._directions, self._num_hidden)
        wrap = (lambda v: _nd.array(v, dtype=flat.dtype)) if hasattr(flat, "asnumpy") \
            else (lambda v: v)
        args.update({k: wrap(v) for k, v in parts.items()})
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of :meth:`unpack_weights`."""
        args = dict(args)
        some = args[f"{self._prefix}l0_i2h{FW.GATES[self._mode][0]}_weight"]
        flat, names = FW.pack({k: FW.as_numpy(v) for k, v in args.items()}, self._prefix,
                              self._mode, self._num_layers, self._directions,
                              self._num_hidden)
        for name in names:
            del args[name]
        args[f"{self._prefix}parameters"] = _nd.array(flat, dtype=some.dtype) \
            if hasattr(some, "asnumpy") else flat
        return args

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple[Any, list]:
        self.reset()
        data = format_sequence(length, inputs, layout, True)[0]
        if layout == "NTC":  # the RNN op reads TNC
            data = _sym.swapaxes(data, dim1=0, dim2=1)
        states = self.begin_state(func=zeros_like_batch(data)) if begin_state is None \
            else begin_state
        kw = {"state_cell": states[1]} if self._mode == "lstm" else {}
        out = _sym.RNN(data=data, parameters=self._parameter, state=states[0],
                       state_size=self._num_hidden, num_layers=self._num_layers,
                       bidirectional=self._bidirectional, p=self._dropout,
                       state_outputs=self._get_next_state, mode=self._mode,
                       name=f"{self._prefix}rnn", **kw)
        outputs = out[0] if self._get_next_state else out
        new = [out[i] for i in range(1, len(states) + 1)] if self._get_next_state else []
        if layout == "NTC":
            outputs = _sym.swapaxes(outputs, dim1=0, dim2=1)
        return format_sequence(length, outputs, layout, merge_outputs)[0], new

    def unfuse(self) -> SequentialRNNCell:
        """The same network as a :class:`SequentialRNNCell` of per-layer cells (names
        ``prefix + 'l0_'``, ``'r0_'``; bidirectional layers ``prefix + 'bi_l0_'``)."""
        make, h, pre = _UNFUSED[self._mode], self._num_hidden, self._prefix
        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make(h, f"{pre}l{i}_"), make(h, f"{pre}r{i}_"),
                                            output_prefix=f"{pre}bi_l{i}_"))
            else:
                stack.add(make(h, f"{pre}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{pre}_dropout{i}_"))
        return stack
