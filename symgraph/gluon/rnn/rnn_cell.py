"""Recurrent cells of ``gluon.rnn`` (MXNet 1.9.1's names, arguments, defaults and parameter
names): the bases :class:`RecurrentCell` / :class:`HybridRecurrentCell` (``begin_state``,
``state_info``, ``reset``, ``unroll``) and :class:`RNNCell`, :class:`LSTMCell`,
:class:`GRUCell`, :class:`LSTMPCell`. One step is a few registered ops (FullyConnected,
SliceChannel, activations); gate order as MXNet's: LSTM ``i, f, g, o``, GRU ``r, z, n``.

The step formulas are module functions (:data:`STEPS`) that the fused layers of
``rnn_layer.py`` reuse where the fused ``RNN`` op cannot serve (projection, valid lengths).

A cell steps through ``F = sg.sym`` on Symbols and ``sg.nd`` on NDArrays (itself compiled
lazily); ``hybridize()`` on a cell alone is accepted and changes nothing, since a hybridized
parent traces the cells it calls.

Example::

    cell = gluon.rnn.LSTMCell(20)
    cell.initialize()
    outputs, states = cell.unroll(5, sg.nd.ones((4, 5, 8)), layout="NTC", merge_outputs=True)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ...runtime import ndarray as _nd
from ...frontend import symbol as _sym
from ...core.base import GraphError
from ...frontend.symbol import Symbol
from ..block import Block, HybridBlock
from ..parameter import DeferredInitializationError
from .sequence import (call_state_func, format_sequence, last_states, mask_variable_length,
                       zero_states)


def _fc(F: Any, x: Any, w: Any, b: Any, units: int, name: str) -> Any:
    if b is None:
        return F.FullyConnected(x, w, no_bias=True, num_hidden=units, name=name)
    return F.FullyConnected(x, w, b, num_hidden=units, name=name)


def activate(F: Any, x: Any, act: Any, name: str) -> Any:
    """MXNet's cell activation: a name (``'tanh'``, ``'relu'``...) or a block."""
    if isinstance(act, str):
        return F.Activation(x, act_type=act, name=name)
    return act(x)


def rnn_step(F: Any, x: Any, states: list, p: dict, h: int, pre: str, act: Any = "tanh",
             ract: Any = None) -> tuple[Any, list]:
    """``act(W x + b + U h + c)``; one state."""
    z = F.elemwise_add(_fc(F, x, p["i2h_weight"], p["i2h_bias"], h, pre + "i2h"),
                       _fc(F, states[0], p["h2h_weight"], p["h2h_bias"], h, pre + "h2h"))
    out = activate(F, z, act, pre + "out")
    return out, [out]


def lstm_step(F: Any, x: Any, states: list, p: dict, h: int, pre: str, act: Any = "tanh",
              ract: Any = "sigmoid", proj: int = 0) -> tuple[Any, list]:
    """LSTM (gates i, f, g, o); with ``proj`` the output is projected by ``h2r_weight``
    to ``proj`` units (LSTMP)."""
    gates = F.elemwise_add(
        _fc(F, x, p["i2h_weight"], p["i2h_bias"], 4 * h, pre + "i2h"),
        _fc(F, states[0], p["h2h_weight"], p["h2h_bias"], 4 * h, pre + "h2h"))
    out, c = lstm_combine(F, gates, states[1], pre, act, ract, 1,
                          "hidden" if proj else "out")
    if proj:  # (MXNet names the projection, the cell's output, "out")
        out = _fc(F, out, p["h2r_weight"], None, proj, pre + "out")
    return out, [out, c]


def lstm_combine(F: Any, gates: Any, c_prev: Any, pre: str, act: Any, ract: Any,
                 axis: int = 1, out_name: str = "out") -> tuple[Any, Any]:
    """``(h, c)`` of an LSTM step from its summed gate pre-activations (i, f, g, o along
    ``axis``); shared by the dense and the convolutional cells. ``h`` is named
    ``<pre><out_name>`` as in MXNet, so unrolled outputs list as ``t0_out_output``."""
    # elemwise (not broadcast) ops, as MXNet's symbol operators: a begin state of unknown
    # batch (0) then takes the batch from the data, even a batch of 1.
    i, f, g, o = F.SliceChannel(gates, num_outputs=4, axis=axis, name=pre + "slice")
    c = F.elemwise_add(F.elemwise_mul(activate(F, f, ract, pre + "f"), c_prev),
                       F.elemwise_mul(activate(F, i, ract, pre + "i"),
                                      activate(F, g, act, pre + "c")),
                       name=pre + "state")
    out = F.elemwise_mul(activate(F, o, ract, pre + "o"),
                         activate(F, c, act, pre + "state_act"), name=pre + out_name)
    return out, c


def gru_step(F: Any, x: Any, states: list, p: dict, h: int, pre: str, act: Any = "tanh",
             ract: Any = "sigmoid") -> tuple[Any, list]:
    """GRU (gates r, z, n): ``n = act(W_n x + b_n + r * (U_n h + c_n))``,
    ``h' = (1 - z) * n + z * h``."""
    out = gru_combine(F, _fc(F, x, p["i2h_weight"], p["i2h_bias"], 3 * h, pre + "i2h"),
                      _fc(F, states[0], p["h2h_weight"], p["h2h_bias"], 3 * h, pre + "h2h"),
                      states[0], pre, act, ract, 1)
    return out, [out]


def gru_combine(F: Any, i2h: Any, h2h: Any, h_prev: Any, pre: str, act: Any, ract: Any,
                axis: int = 1) -> Any:
    """The new state of a GRU step from its input and recurrent transforms (r, z, n along
    ``axis``), named ``<pre>out``; shared by the dense and the convolutional cells."""
    xr, xz, xn = F.SliceChannel(i2h, num_outputs=3, axis=axis, name=pre + "i2h_slice")
    hr, hz, hn = F.SliceChannel(h2h, num_outputs=3, axis=axis, name=pre + "h2h_slice")
    r = activate(F, F.elemwise_add(xr, hr), ract, pre + "r_act")
    z = activate(F, F.elemwise_add(xz, hz), ract, pre + "z_act")
    n = activate(F, F.elemwise_add(xn, F.elemwise_mul(r, hn)), act, pre + "h_act")
    return F.elemwise_add(F.elemwise_mul(1.0 - z, n), F.elemwise_mul(z, h_prev),
                          name=pre + "out")


STEPS: dict[str, Callable] = {"rnn_relu": rnn_step, "rnn_tanh": rnn_step, "lstm": lstm_step,
                              "gru": gru_step}


class RecurrentCell(Block):
    """Base of the cells: ``cell(x, states) -> (output, new_states)`` for one step.

    Examples
    --------
    >>> class Count(sg.gluon.rnn.RecurrentCell):  # adds its input to a running sum
    ...     def state_info(self, batch_size=0):
    ...         return [{'shape': (batch_size, 1), '__layout__': 'NC'}]
    ...     def forward(self, x, states):
    ...         total = states[0] + x
    ...         return total, [total]
    >>> outputs, states = Count().unroll(3, sg.nd.ones((1, 3, 1)), merge_outputs=True)
    >>> outputs.reshape((3,))
    [1. 2. 3.]
    <NDArray 3 @cpu(0)>
    """

    def __init__(self, prefix: Optional[str] = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Reset before re-using the cell for another graph (step counters, masks)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size: int = 0) -> list:
        """Shape and layout of each state (``[{'shape': (N, H), '__layout__': 'NC'}]``)."""
        raise NotImplementedError(f"{type(self).__name__} must define state_info()")

    def begin_state(self, batch_size: int = 0, func: Callable = _nd.zeros, **kwargs: Any
                    ) -> list:
        """Initial states from ``func(name=..., shape=..., **kwargs)`` (default zeros)."""
        if self._modified:
            raise GraphError(f"{self.name}: after applying a modifier cell, call "
                             f"begin_state on the modifier cell instead")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {}, **kwargs)
            name = f"{self._prefix}begin_state_{self._init_counter}"
            states.append(call_state_func(func, name, info))
        return states

    def unroll(self, length: int, inputs: Any, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None,
               valid_length: Any = None) -> tuple[Any, list]:
        """Run ``length`` steps. ``inputs``: one tensor in ``layout`` or a list of steps;
        ``merge_outputs``: outputs as one tensor (True), a list (False) or as the inputs
        (None); ``valid_length`` (N,): outputs past it are 0 and the states are those of each
        sequence's last valid step."""
        self.reset()
        inputs, axis, F, batch = format_sequence(length, inputs, layout, False)
        states = begin_state if begin_state is not None else \
            zero_states(self, F, batch, inputs, layout)
        outputs, per_step = [], []
        for x in inputs:
            out, states = self(x, states)
            outputs.append(out)
            per_step.append(states)
        if valid_length is not None:
            states = last_states(F, per_step, valid_length)
            # merged, as MXNet: unless merge_outputs=False, a tensor then comes back
            outputs = mask_variable_length(F, outputs, length, valid_length, axis, True)
        outputs = format_sequence(length, outputs, layout, merge_outputs)[0]
        return outputs, states

    def forward(self, inputs: Any, states: list) -> Any:
        self._counter += 1
        return self.step(inputs, states)

    def step(self, inputs: Any, states: list) -> tuple[Any, list]:
        """One step (subclasses: a plain Block's own computation)."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A cell written as ``hybrid_forward(F, inputs, states, **params)``.

    Examples
    --------
    >>> class Count(sg.gluon.rnn.HybridRecurrentCell):  # adds its input to a running sum
    ...     def state_info(self, batch_size=0):
    ...         return [{'shape': (batch_size, 1), '__layout__': 'NC'}]
    ...     def hybrid_forward(self, F, x, states):
    ...         total = states[0] + x
    ...         return total, [total]
    >>> outputs, states = Count().unroll(3, sg.nd.ones((1, 3, 1)), merge_outputs=True)
    >>> outputs.reshape((3,))
    [1. 2. 3.]
    <NDArray 3 @cpu(0)>
    """

    def __init__(self, prefix: Optional[str] = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)

    def step(self, inputs: Any, states: list) -> tuple[Any, list]:
        if isinstance(inputs, Symbol):
            params = {k: v.var() for k, v in self._reg_params.items()}
            with self.name_scope():
                return self.hybrid_forward(_sym, inputs, states, **params)
        return self.hybrid_forward(_nd, inputs, states, **self._arrays(inputs, states))

    def _arrays(self, inputs: Any, states: list) -> dict:
        """The parameters' arrays on the inputs' context; deferred shapes are inferred from
        one traced step first."""
        ctx = inputs.context
        try:
            return {k: v.data(ctx) for k, v in self._reg_params.items()}
        except DeferredInitializationError:
            names = [f"state{i}" for i in range(len(states))]
            out, new = self.step(_sym.var("data"), [_sym.var(n) for n in names])
            self._counter -= 1  # (the trace is not a step)
            graph = _sym.Group([out] + list(new))
            shapes = dict(zip(names, (s.shape for s in states)), data=inputs.shape)
            known = dict(zip(graph.list_arguments(), graph.infer_shape_partial(**shapes)[0]))
            for p in self.collect_params().values():
                if known.get(p.name) and p._data is None:
                    p.shape = known[p.name]
                    p._finish_deferred_init()
            return {k: v.data(ctx) for k, v in self._reg_params.items()}


def _gate_params(cell: HybridRecurrentCell, gates: int, hidden: int, input_size: int,
                 inits: tuple, recurrent: int = 0) -> None:
    """i2h/h2h weights and biases of ``gates * hidden`` rows (MXNet's names and order)."""
    rows = gates * hidden
    cell.i2h_weight = cell.params.get("i2h_weight", shape=(rows, input_size), init=inits[0],
                                      allow_deferred_init=True)
    cell.h2h_weight = cell.params.get("h2h_weight", shape=(rows, recurrent or hidden),
                                      init=inits[1], allow_deferred_init=True)
    cell.i2h_bias = cell.params.get("i2h_bias", shape=(rows,), init=inits[2],
                                    allow_deferred_init=True)
    cell.h2h_bias = cell.params.get("h2h_bias", shape=(rows,), init=inits[3],
                                    allow_deferred_init=True)


class _GateCell(HybridRecurrentCell):
    """A cell of :data:`STEPS` with ``gates`` gates and one or two states."""

    _mode, _gates, _alias_name = "rnn_tanh", 1, "rnn"

    def __init__(self, hidden_size: int, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0,
                 prefix: Optional[str] = None, params: Any = None, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid") -> None:
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = hidden_size, input_size
        self._activation, self._recurrent_activation = activation, recurrent_activation
        _gate_params(self, self._gates, hidden_size, input_size,
                     (i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                      h2h_bias_initializer))

    def _alias(self) -> str:
        return self._alias_name

    def state_info(self, batch_size: int = 0) -> list:
        n = 2 if self._mode == "lstm" else 1
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}] * n

    def hybrid_forward(self, F: Any, inputs: Any, states: list, **params: Any
                       ) -> tuple[Any, list]:
        return STEPS[self._mode](F, inputs, states, params, self._hidden_size,
                                 f"t{self._counter}_", self._activation,
                                 self._recurrent_activation)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._input_size or None} -> {self._hidden_size})"


class RNNCell(_GateCell):
    """Elman cell ``act(W x + b + U h + c)`` (``activation='tanh'``).

    Examples
    --------
    >>> cell = sg.gluon.rnn.RNNCell(1, input_size=1, i2h_weight_initializer='ones',
    ...                             h2h_weight_initializer='ones')
    >>> cell.initialize()
    >>> out, states = cell(sg.nd.array([[0.5]]), cell.begin_state(batch_size=1))
    >>> out  # tanh(1 * 0.5 + 1 * 0)
    [[0.4621]]
    <NDArray 1x1 @cpu(0)>
    """

    def __init__(self, hidden_size: int, activation: Any = "tanh",
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 input_size: int = 0, prefix: Optional[str] = None, params: Any = None) -> None:
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params, activation)


class LSTMCell(_GateCell):
    """LSTM cell; states ``[h, c]``; gates ``i, f, g, o`` in the weights' rows.

    Examples
    --------
    >>> cell = sg.gluon.rnn.LSTMCell(4)
    >>> cell.initialize()
    >>> out, (h, c) = cell(sg.nd.ones((2, 3)), cell.begin_state(batch_size=2))
    >>> out.shape, c.shape
    ((2, 4), (2, 4))
    """

    _mode, _gates, _alias_name = "lstm", 4, "lstm"


class GRUCell(_GateCell):
    """GRU cell (as cuDNN: ``r`` multiplies ``U_n h + c_n``); gates ``r, z, n``.

    Examples
    --------
    >>> cell = sg.gluon.rnn.GRUCell(4)
    >>> cell.initialize()
    >>> out, states = cell(sg.nd.ones((2, 3)), cell.begin_state(batch_size=2))
    >>> out.shape, len(states)
    ((2, 4), 1)
    """

    _mode, _gates, _alias_name = "gru", 3, "gru"


class LSTMPCell(HybridRecurrentCell):
    """LSTM with a projected output (``r = h2r_weight h``); states ``[r, c]`` of sizes
    ``projection_size`` and ``hidden_size`` (MXNet's ``contrib.rnn.LSTMPCell``).

    Examples
    --------
    >>> cell = sg.gluon.rnn.LSTMPCell(8, projection_size=4)
    >>> cell.initialize()
    >>> out, (r, c) = cell(sg.nd.ones((2, 3)), cell.begin_state(batch_size=2))
    >>> out.shape, c.shape  # the output is projected; the cell state is not
    ((2, 4), (2, 8))
    """

    def __init__(self, hidden_size: int, projection_size: int,
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 h2r_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0,
                 prefix: Optional[str] = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._projection_size = hidden_size, projection_size
        _gate_params(self, 4, hidden_size, input_size,
                     (i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                      h2h_bias_initializer), recurrent=projection_size)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)

    def _alias(self) -> str:
        return "lstmp"

    def state_info(self, batch_size: int = 0) -> list:
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def hybrid_forward(self, F: Any, inputs: Any, states: list, **params: Any
                       ) -> tuple[Any, list]:
        return lstm_step(F, inputs, states, params, self._hidden_size, f"t{self._counter}_",
                         proj=self._projection_size)
