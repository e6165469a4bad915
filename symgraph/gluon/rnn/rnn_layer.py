"""Recurrent layers of ``gluon.rnn`` over the fused ``RNN`` op: :class:`RNN`, :class:`LSTM`,
:class:`GRU` (MXNet 1.9.1's arguments, defaults and parameter names: ``l0_i2h_weight``,
``r0_h2h_bias``..., registered in MXNet's order, so its parameter files load).

How a forward runs (data in ``TNC``; ``NTC`` is swapped in and out):

* one ``RNN`` op over every layer and direction, its flat parameter vector the parameters
  concatenated in cuDNN's order (all weights, then all biases; per layer, per direction,
  ``i2h`` then ``h2h``), as MXNet does, and ``dropout`` as its ``p`` (the outputs of every
  layer but the last dropped, in training only, as in MXNet);
* with ``projection_size`` (LSTMP) or a ``sequence_length`` (``use_sequence_length=True``):
  unrolled, one cell step per time step (``rnn_cell.STEPS``), reversed directions through
  ``SequenceReverse``, states through ``SequenceLast``, outputs past a length set to 0 by
  ``SequenceMask`` (cuDNN's semantics; MXNet 1.9.1's CPU ignores the lengths:
  docs/mxnet_parity.md). Unrolling needs the number of steps: a symbolic call needs them from
  a traced call on arrays (a hybridized layer) and raises ``ShapeError`` otherwise.

Example::

    layer = gluon.rnn.LSTM(100, num_layers=2, layout="NTC", bidirectional=True)
    layer.initialize()
    out, states = layer(sg.nd.ones((8, 35, 50)), layer.begin_state(8))
"""
from __future__ import annotations

from typing import Any, Optional

from ...runtime import ndarray as _nd
from ...frontend import symbol as _sym
from ...core.base import AttrError, ShapeError
from ...compiler.ops.rnn_cells import GATES
from ...frontend.symbol import Symbol
from ..block import HybridBlock
from ..hybrid_state import Trace
from .rnn_cell import STEPS
from .sequence import call_state_func, last_states, mask_variable_length, reverse_sequences
from .sequence import split as split_steps, stack
from .unfuse import unfuse

_ACTS = {"rnn_relu": ("relu", None), "rnn_tanh": ("tanh", None), "lstm": ("tanh", "sigmoid"),
         "gru": ("tanh", "sigmoid")}


class _RNNLayer(HybridBlock):
    """The layers' common code: parameters, states, the three ways to run (module doc)."""

    def __init__(self, hidden_size: int, num_layers: int, layout: str, dropout: float,
                 bidirectional: bool, input_size: int, i2h_weight_initializer: Any,
                 h2h_weight_initializer: Any, i2h_bias_initializer: Any,
                 h2h_bias_initializer: Any, mode: str, projection_size: Optional[int],
                 h2r_weight_initializer: Any, lstm_state_clip_min: Any,
                 lstm_state_clip_max: Any, lstm_state_clip_nan: bool, dtype: Any,
                 use_sequence_length: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise AttrError(f"{self.name}: layout={layout!r}: must be 'TNC' or 'NTC'")
        for key, value in (("state_clip_min", lstm_state_clip_min),
                           ("state_clip_max", lstm_state_clip_max),
                           ("state_clip_nan", lstm_state_clip_nan or None)):
            if value is not None:
                raise AttrError(f"{self.name}: {key}={value!r} is not implemented")
        self._hidden_size, self._num_layers, self._layout = hidden_size, num_layers, layout
        self._dropout, self._dir, self._mode = dropout, 2 if bidirectional else 1, mode
        self._input_size, self._projection_size = input_size, projection_size or 0
        self._use_sequence_length, self._dtype = use_sequence_length, dtype
        self._trace_steps: Optional[int] = None  # T of the arrays a trace is made for
        inits = (i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, h2r_weight_initializer)
        self._inits = inits
        width = input_size
        for layer in range(num_layers):
            for d in "lr"[:self._dir]:
                self._register(f"{d}{layer}_", width, inits)
            width = (self._projection_size or hidden_size) * self._dir

    def _register(self, pre: str, width: int, inits: tuple) -> None:
        rows, h = GATES[self._mode] * self._hidden_size, self._hidden_size
        shapes = {"i2h_weight": (rows, width), "h2h_weight": (rows, self._projection_size or h),
                  "i2h_bias": (rows,), "h2h_bias": (rows,)}
        if self._projection_size:
            shapes["h2r_weight"] = (self._projection_size, h)
        init_of = {"i2h_weight": 0, "h2h_weight": 1, "i2h_bias": 2, "h2h_bias": 3,
                   "h2r_weight": 4}
        for name, shape in shapes.items():
            p = self.params.get(pre + name, shape=shape, init=inits[init_of[name]],
                                dtype=self._dtype, allow_deferred_init=True)
            setattr(self, pre + name, p)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self._input_size or None} -> {self._hidden_size}, "
                f"{self._layout}, num_layers={self._num_layers}"
                f"{', bidirectional' if self._dir == 2 else ''})")

    def _collect_params_with_prefix(self, prefix: str = "") -> dict:
        """Structural names as MXNet 1.9.1 writes them for its layers (its older unfused
        format): ``_unfused.<layer>.<i2h|h2h|h2r>_<weight|bias>``, bidirectional
        ``_unfused.<layer>.<l|r>_cell.<...>``, so parameter files cross both ways."""
        prefix = prefix + "." if prefix else prefix
        bi = self._dir == 2
        out = {}
        for key, p in self._reg_params.items():
            d, layer, rest = key[0], key[1:key.index("_")], key[key.index("_") + 1:]
            cell = f"{d}_cell." if bi else ""
            out[f"{prefix}_unfused.{layer}.{cell}{rest}"] = p
        return out

    def _unfuse(self) -> Any:
        """The layer as a ``HybridSequentialRNNCell`` of per-layer cells sharing its
        parameters (MXNet 1.9.1's; ``unfuse.py``)."""
        return unfuse(self)

    def state_info(self, batch_size: int = 0) -> list:
        """Shape, layout and dtype of each state: (layers * directions, batch, size)."""
        ld, h = self._num_layers * self._dir, self._hidden_size
        info = [{"shape": (ld, batch_size, self._projection_size or h), "__layout__": "LNC",
                 "dtype": self._dtype}]
        if self._mode == "lstm":
            info.append({"shape": (ld, batch_size, h), "__layout__": "LNC",
                         "dtype": self._dtype})
        return info

    def begin_state(self, batch_size: int = 0, func: Any = _nd.zeros, **kwargs: Any) -> list:
        """Initial states from ``func(name=..., shape=..., dtype=..., **kwargs)``."""
        return [call_state_func(func, f"{self.prefix}h0_{i}", dict(info, **kwargs))
                for i, info in enumerate(self.state_info(batch_size))]

    def forward(self, inputs: Any, states: Any = None, sequence_length: Any = None) -> Any:
        """``output`` (no states given) or ``(output, new_states)``."""
        skip = states is None
        if (sequence_length is not None) != self._use_sequence_length:
            raise AttrError(f"{self.name}: sequence_length must be given exactly when "
                            f"use_sequence_length=True (it is {self._use_sequence_length})")
        if states is None:
            states = [] if isinstance(inputs, Symbol) else self.begin_state(
                inputs.shape[self._layout.find("N")], ctx=inputs.context, dtype=inputs.dtype)
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        extra = [] if sequence_length is None else [sequence_length]
        out = list(super().forward(inputs, *states, *extra))
        return out[0] if skip else (out[0], out[1:])

    def _get_graph(self, *args: Any) -> tuple[list, Any]:
        """Trace on variables ``data``, ``state<i>``, ``sequence_length`` (the flat
        arguments ``forward`` passes on), knowing the arrays' number of steps. A list of
        states (``infer_shape(x, begin_state)``, as MXNet takes it) counts as its items."""
        args = tuple(a for arg in args
                     for a in (arg if isinstance(arg, (list, tuple)) else (arg,)))
        n = len(args) - 1 - self._use_sequence_length
        inputs = [_sym.var("data")] + [_sym.var(f"state{i}") for i in range(n)] + \
            ([_sym.var("sequence_length")] if self._use_sequence_length else [])
        self._trace_steps = args[0].shape[self._layout.find("T")]
        for d in "lr"[:self._dir]:  # (shape inference through the flat vector decides one
            p = self._reg_params[f"{d}0_i2h_weight"]  # unknown width, not two)
            if p._data is None:
                p.shape = (p.shape[0], args[0].shape[2])
        try:
            group = _sym.Group(list(HybridBlock.forward(self, inputs[0], *inputs[1:])))
        finally:
            self._trace_steps = None
        self._cached_graph = Trace(inputs, group)
        return inputs, group

    def hybrid_forward(self, F: Any, inputs: Any, *args: Any, **params: Any) -> list:
        n = len(self.state_info())
        states, lengths = list(args[:n]), (args[n] if len(args) > n else None)
        x = F.swapaxes(inputs, dim1=0, dim2=1) if self._layout == "NTC" else inputs
        if not states:
            states = self._zero_states(F, x)
        if F is _nd:
            self._check_states(inputs, states)
        if lengths is None and not self._projection_size:
            out = self._fused(F, x, states, params)
        else:
            out = self._unrolled(F, x, states, lengths, params)
        if self._layout == "NTC":
            out[0] = F.swapaxes(out[0], dim1=0, dim2=1)
        return out

    def _zero_states(self, F: Any, x: Any) -> list:
        """Zero begin states of a traced call, made from the (T, N, C) data so that their
        batch size follows it (a replayed trace has no shape to decide a ``zeros`` by)."""
        column = F.sum(F.zeros_like(F.slice_axis(x, axis=0, begin=0, end=1)), axis=2,
                       keepdims=True)  # (1, N, 1)
        return [F.broadcast_axis(column, axis=(0, 2), size=(i["shape"][0], i["shape"][2]))
                for i in self.state_info()]

    def _check_states(self, inputs: Any, states: list) -> None:
        infos = self.state_info(inputs.shape[self._layout.find("N")])
        for k, (s, info) in enumerate(zip(states, infos)):
            if tuple(s.shape) != info["shape"]:
                raise ShapeError(f"{self.name}: state {k} has shape {tuple(s.shape)}, "
                                 f"expected {info['shape']}")

    def _flat(self, F: Any, params: dict, layers: range) -> Any:
        """The layers' parameters as the fused op's flat vector (cuDNN's order)."""
        parts = [F.reshape(params[f"{d}{layer}_{g}_{kind}"], shape=(-1,))
                 for kind in ("weight", "bias") for layer in layers
                 for d in "lr"[:self._dir] for g in ("i2h", "h2h")]
        # (its shape rule decides the first layer's i2h widths of both directions)
        return F._rnn_param_concat(*parts, dim=0, num_args=len(parts))

    def _fused(self, F: Any, x: Any, states: list, params: dict) -> list:
        layers = self._num_layers
        out = F.RNN(x, self._flat(F, params, range(layers)), *states,
                    state_size=self._hidden_size, num_layers=layers,
                    bidirectional=self._dir == 2, mode=self._mode, p=self._dropout,
                    state_outputs=True, name="rnn")
        return list(out)

    def _steps(self, F: Any, x: Any) -> int:
        if F is _nd:
            return x.shape[0]
        if self._trace_steps is None:
            raise ShapeError(f"{self.name}: with projection_size or sequence_length the layer "
                             f"is unrolled and needs the number of steps: call it on arrays "
                             f"(hybridized), not on Symbols")
        return self._trace_steps

    def _direction(self, F: Any, steps: list, states: list, p: dict, lengths: Any,
                   pre: str) -> tuple[list, list]:
        """One layer's direction over ``steps`` (already in its order): outputs, states."""
        act, ract = _ACTS[self._mode]
        kw = {"proj": self._projection_size} if self._projection_size else {}
        outs, per_step = [], []
        for t, xt in enumerate(steps):
            o, states = STEPS[self._mode](F, xt, states, p, self._hidden_size, f"{pre}t{t}_",
                                          act, ract, **kw)
            outs.append(o)
            per_step.append(states)
        return outs, (last_states(F, per_step, lengths) if lengths is not None else states)

    def _unrolled(self, F: Any, x: Any, states: list, lengths: Any, params: dict) -> list:
        t_len = self._steps(F, x)
        steps, finals = split_steps(F, x, t_len, 0), []
        names = ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias", "h2r_weight")
        for layer in range(self._num_layers):
            outs = []
            for k, d in enumerate("lr"[:self._dir]):
                s = layer * self._dir + k
                own = [F.squeeze(F.slice_axis(st, axis=0, begin=s, end=s + 1), axis=0)
                       for st in states]
                p = {g: params.get(f"{d}{layer}_{g}") for g in names}
                seq = steps if k == 0 else reverse_sequences(F, steps, t_len, lengths)
                o, fin = self._direction(F, seq, own, p, lengths, f"{d}{layer}_")
                outs.append(o if k == 0 else reverse_sequences(F, o, t_len, lengths))
                finals.append(fin)
            steps = outs[0] if self._dir == 1 else \
                [F.Concat(a, b, dim=1, num_args=2) for a, b in zip(*outs)]
            if self._dropout and layer < self._num_layers - 1:
                steps = [F.Dropout(st, p=self._dropout) for st in steps]
        out = stack(F, steps, 0) if lengths is None else \
            mask_variable_length(F, steps, t_len, lengths, 0, True)
        return [out] + [stack(F, list(s), 0) for s in zip(*finals)]


class RNN(_RNNLayer):
    """Elman RNN layer, ``activation`` ``'relu'`` or ``'tanh'``.

    Examples
    --------
    >>> layer = sg.gluon.rnn.RNN(1, input_size=1, i2h_weight_initializer='ones',
    ...                          h2h_weight_initializer='ones')  # relu by default
    >>> layer.initialize()
    >>> layer(sg.nd.array([[[1]], [[2]]]))  # (time, batch, features): relu(1), relu(2 + 1)
    [[[1.]]
    <BLANKLINE>
     [[3.]]]
    <NDArray 2x1x1 @cpu(0)>
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, activation: str = "relu",
                 layout: str = "TNC", dropout: float = 0, bidirectional: bool = False,
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 input_size: int = 0, dtype: Any = "float32", **kwargs: Any) -> None:
        if activation not in ("relu", "tanh"):
            raise AttrError(f"RNN: activation={activation!r}: must be 'relu' or 'tanh'")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None,
                         False, dtype, **kwargs)


class LSTM(_RNNLayer):
    """LSTM layer (gates i, f, g, o); ``projection_size``: LSTMP, states ``[r, c]``.

    Examples
    --------
    >>> layer = sg.gluon.rnn.LSTM(4, num_layers=2)
    >>> layer.initialize()
    >>> x = sg.nd.ones((5, 2, 3))  # (time, batch, features)
    >>> out, (h, c) = layer(x, layer.begin_state(batch_size=2))
    >>> out.shape, h.shape
    ((5, 2, 4), (2, 2, 4))
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC",
                 dropout: float = 0, bidirectional: bool = False, input_size: int = 0,
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 projection_size: Optional[int] = None, h2r_weight_initializer: Any = None,
                 state_clip_min: Any = None, state_clip_max: Any = None,
                 state_clip_nan: bool = False, dtype: Any = "float32", **kwargs: Any) -> None:
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)


class GRU(_RNNLayer):
    """GRU layer (gates r, z, n; cuDNN's variant, as MXNet).

    Examples
    --------
    >>> layer = sg.gluon.rnn.GRU(4, layout='NTC', bidirectional=True)
    >>> layer.initialize()
    >>> layer(sg.nd.ones((2, 5, 3))).shape  # both directions side by side
    (2, 5, 8)
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC",
                 dropout: float = 0, bidirectional: bool = False, input_size: int = 0,
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 dtype: Any = "float32", **kwargs: Any) -> None:
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype,
                         **kwargs)


__all__ = ["RNN", "LSTM", "GRU"]
