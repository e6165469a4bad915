"""MXNet's symbolic recurrent cells (``mx.rnn``): a cell builds one time step as symbols,
``unroll`` chains steps into a graph. The step formulas are Gluon's (``gluon/rnn``), so both
front ends compute the same graph; names follow MXNet (``rnn_t0_out``, ``rnn_i2h_weight``).

Examples
--------
>>> cell = sg.rnn.LSTMCell(8, prefix='lstm_')
>>> outs, states = cell.unroll(2, [sg.sym.Variable('x0'), sg.sym.Variable('x1')])
>>> sg.sym.Group(outs).list_outputs()
['lstm_t0_out_output', 'lstm_t1_out_output']
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ...training import initializer as _init
from ...frontend import symbol as _sym
from ...core.base import AttrError, GraphError
from ...gluon.rnn.rnn_cell import gru_step, lstm_step, rnn_step
from ...gluon.rnn.sequence import call_state_func, format_sequence

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell"]


class RNNParams:
    """Shared weights of cells: ``get(name)`` makes (once) the variable ``prefix + name``."""

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._params: dict[str, Any] = {}

    def get(self, name: str, **kwargs: Any) -> Any:
        """The variable ``prefix + name``; ``kwargs`` (``init=``...) apply on first use."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = _sym.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Base of the symbolic cells: ``cell(inputs, states) -> (output, new_states)``."""

    def __init__(self, prefix: str = "", params: Optional[RNNParams] = None) -> None:
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart the step counters (before building a new unrolled graph)."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        raise NotImplementedError(f"{type(self).__name__} must define __call__")

    @property
    def params(self) -> RNNParams:
        """The cell's :class:`RNNParams` (after this, it is shared: no longer its own)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list:
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    @property
    def state_shape(self) -> list:
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> tuple:
        return ()

    def begin_state(self, func: Callable = _sym.zeros, **kwargs: Any) -> list:
        """Initial states ``func(name=prefix+'begin_state_k', shape=..., **kwargs)``; the
        batch dimension (0) is inferred from the graph."""
        if self._modified:
            raise GraphError(f"{self._prefix}: after applying a modifier cell, call "
                             f"begin_state on the modifier cell instead")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            name = f"{self._prefix}begin_state_{self._init_counter}"
            states.append(call_state_func(func, name, {**kwargs, **(info or {})}))
        return states

    def unpack_weights(self, args: dict) -> dict:
        """Split the fused ``i2h``/``h2h`` weights and biases into one array per gate
        (``prefix + 'i2h' + gate + '_weight'``), as MXNet's checkpoints of cells keep them."""
        args = dict(args)
        h = getattr(self, "_num_hidden", 0)
        for group in ("i2h", "h2h") if self._gate_names else ():
            for kind in ("weight", "bias"):
                whole = args.pop(f"{self._prefix}{group}_{kind}")
                for j, gate in enumerate(self._gate_names):
                    args[f"{self._prefix}{group}{gate}_{kind}"] = whole[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of :meth:`unpack_weights`."""
        args = dict(args)
        for group in ("i2h", "h2h") if self._gate_names else ():
            for kind in ("weight", "bias"):
                parts = [args.pop(f"{self._prefix}{group}{gate}_{kind}")
                         for gate in self._gate_names]
                args[f"{self._prefix}{group}_{kind}"] = _concat(parts)
        return args

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple[Any, list]:
        """``length`` steps over ``inputs`` (one symbol in ``layout``, or a list of steps);
        outputs merged into one symbol (True), a list (False) or as the inputs (None)."""
        self.reset()
        inputs = format_sequence(length, inputs, layout, False)[0]
        states = self.begin_state(func=zeros_like_batch(inputs[0])) if begin_state is None \
            else begin_state
        outputs = []
        for x in inputs:
            out, states = self(x, states)
            outputs.append(out)
        return format_sequence(length, outputs, layout, merge_outputs)[0], states

    def _get_activation(self, inputs: Any, activation: Any, **kwargs: Any) -> Any:
        if isinstance(activation, str):
            return _sym.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)

    def _step_prefix(self) -> str:
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"

    def _weights(self) -> dict:
        return {k: self.params.get(k) for k in ("i2h_weight", "i2h_bias", "h2h_weight",
                                                   "h2h_bias")}


def zeros_like_batch(x: Any) -> Callable:
    """A ``begin_state`` function making zeros whose one 0 (batch) dimension is taken from
    ``x``, a symbol of as many dimensions with the batch on that axis (a step's (N, C); the
    fused cell's (T, N, C)): the graph then has every shape from the data alone, for binding
    as well as for inference."""
    def make(name: Optional[str] = None, shape: tuple = (), **kwargs: Any) -> Any:
        if list(shape).count(0) != 1:
            return _sym.zeros(shape=shape, name=name, **kwargs)
        batch, one = list(shape).index(0), x
        for axis in range(len(shape)):
            if axis != batch:
                one = _sym.slice_axis(one, axis=axis, begin=0, end=1)
        reps = tuple(1 if axis == batch else n for axis, n in enumerate(shape))
        return _sym.tile(_sym.zeros_like(one), reps=reps, name=name)
    return make


def _concat(parts: list) -> Any:
    if hasattr(parts[0], "asnumpy"):
        from ...runtime import ndarray as _nd
        return _nd.concat(*parts, dim=0)
    return np.concatenate(parts, axis=0)


class _GatedCell(BaseRNNCell):
    """A cell of ``N_STATES`` states of ``num_hidden`` units whose i2h/h2h weights stack
    ``GATES`` (the names :meth:`unpack_weights` splits them into)."""

    GATES: tuple[str, ...] = ()
    N_STATES = 1

    def __init__(self, num_hidden: int, prefix: str, params: Optional[RNNParams]) -> None:
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._w = self._weights()

    @property
    def state_info(self) -> list:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}] * self.N_STATES

    @property
    def _gate_names(self) -> tuple:
        return self.GATES


class RNNCell(_GatedCell):
    """``out = activation(W x + b + U h + c)`` (MXNet's ``mx.rnn.RNNCell``)."""

    GATES = ("",)

    def __init__(self, num_hidden: int, activation: Any = "tanh", prefix: str = "rnn_",
                 params: Optional[RNNParams] = None) -> None:
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        return rnn_step(_sym, inputs, states, self._w, self._num_hidden, self._step_prefix(),
                        self._activation)


class LSTMCell(_GatedCell):
    """LSTM (gates i, f, c, o); ``forget_bias`` initialises the forget gate's bias."""

    GATES, N_STATES = ("_i", "_f", "_c", "_o"), 2

    def __init__(self, num_hidden: int, prefix: str = "lstm_",
                 params: Optional[RNNParams] = None, forget_bias: float = 1.0) -> None:
        self._forget_bias = forget_bias
        super().__init__(num_hidden, prefix, params)

    def _weights(self) -> dict:
        # the bias variable is made first, with its initializer (later gets return it)
        self.params.get("i2h_bias", init=_init.LSTMBias(forget_bias=self._forget_bias))
        return super()._weights()

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        return lstm_step(_sym, inputs, states, self._w, self._num_hidden, self._step_prefix())


class GRUCell(_GatedCell):
    """GRU (gates r, z, n) as in MXNet (Cho et al. 2014, reset applied after ``U h``)."""

    GATES = ("_r", "_z", "_o")

    def __init__(self, num_hidden: int, prefix: str = "gru_",
                 params: Optional[RNNParams] = None) -> None:
        super().__init__(num_hidden, prefix, params)

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        return gru_step(_sym, inputs, states, self._w, self._num_hidden, self._step_prefix())


def check_not_fused(cell: Any, what: str, kinds: tuple) -> None:
    """``AttrError`` when ``cell`` is one of ``kinds`` (cells a modifier cannot wrap)."""
    if isinstance(cell, kinds):
        raise AttrError(f"{what} cannot wrap a {type(cell).__name__}")
