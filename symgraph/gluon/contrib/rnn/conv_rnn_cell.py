"""Convolutional recurrent cells of ``gluon.contrib.rnn`` (MXNet 1.9.1's names, arguments,
defaults and parameter names): ``Conv{1,2,3}D{RNN,LSTM,GRU}Cell``. The i2h and h2h transforms
are ``Convolution`` ops (h2h padded to keep the state's size, so only odd h2h kernels); the
gates are combined as in the dense cells (``rnn_cell.lstm_combine``/``gru_combine``), split
along the layout's channel axis.

Example::

    cell = Conv2DLSTMCell(input_shape=(3, 8, 8), hidden_channels=4, i2h_kernel=3,
                          h2h_kernel=3, i2h_pad=1)
    cell.initialize()
    out, states = cell.unroll(5, sg.nd.ones((2, 5, 3, 8, 8)), merge_outputs=True)
"""
from __future__ import annotations

import inspect
from typing import Any, Optional, Sequence, Union

from ....core.base import AttrError
from ...rnn.rnn_cell import HybridRecurrentCell, activate, gru_combine, lstm_combine

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell",
           "Conv2DLSTMCell", "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell",
           "Conv3DGRUCell"]

Spec = Union[int, Sequence[int]]


def _spec(value: Spec, dims: int, what: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * dims
    value = tuple(int(v) for v in value)
    if len(value) != dims:
        raise AttrError(f"{what} must be an int or {dims} ints for a {dims}-D convolution, "
                        f"got {value}")
    return value


class _ConvCell(HybridRecurrentCell):
    """Shared body: parameters, state shape and the two convolutions."""

    _gates, _alias_name = 1, "conv_rnn"

    def __init__(self, dims: int, input_shape: Sequence[int], hidden_channels: int,
                 i2h_kernel: Spec, h2h_kernel: Spec, i2h_pad: Spec = 0, i2h_dilate: Spec = 1,
                 h2h_dilate: Spec = 1, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", conv_layout: Optional[str] = None,
                 activation: Any = "tanh", prefix: Optional[str] = None,
                 params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        layout = conv_layout or ("NCW", "NCHW", "NCDHW")[dims - 1]
        self._hidden_channels, self._activation = hidden_channels, activation
        self._conv_layout, self._input_shape = layout, tuple(input_shape)
        self._channel_axis = layout.find("C")
        if len(layout) != dims + 2 or self._channel_axis not in (1, dims + 1):
            raise AttrError(f"{type(self).__name__}: conv_layout={layout!r} is not a "
                            f"{dims}-D layout with channels first or last")
        k_i, k_h = _spec(i2h_kernel, dims, "i2h_kernel"), _spec(h2h_kernel, dims, "h2h_kernel")
        if any(k % 2 == 0 for k in k_h):
            raise AttrError(f"{type(self).__name__}: h2h_kernel={k_h}: only odd sizes keep "
                            f"the state's size")
        pad, dil_i = _spec(i2h_pad, dims, "i2h_pad"), _spec(i2h_dilate, dims, "i2h_dilate")
        dil_h = _spec(h2h_dilate, dims, "h2h_dilate")
        self._i2h = {"kernel": k_i, "pad": pad, "dilate": dil_i, "stride": (1,) * dims}
        self._h2h = {"kernel": k_h, "dilate": dil_h, "stride": (1,) * dims,
                     "pad": tuple(d * (k - 1) // 2 for d, k in zip(dil_h, k_h))}
        first = self._channel_axis == 1
        in_channels = self._input_shape[0 if first else -1]
        spatial = self._input_shape[1:] if first else self._input_shape[:-1]
        out = tuple(x + 2 * p - d * (k - 1) if x else 0
                    for x, k, p, d in zip(spatial, k_i, pad, dil_i))
        self._state_shape = (hidden_channels,) + out if first else out + (hidden_channels,)
        rows = hidden_channels * self._gates
        w_i = (rows, in_channels) + k_i if first else (rows,) + k_i + (in_channels,)
        w_h = (rows, hidden_channels) + k_h if first else (rows,) + k_h + (hidden_channels,)
        self.i2h_weight = self.params.get("i2h_weight", shape=w_i, init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=w_h, init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def _alias(self) -> str:
        return self._alias_name

    def state_info(self, batch_size: int = 0) -> list:
        info = {"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}
        return [info] * (2 if self._gates == 4 else 1)

    def _convs(self, F: Any, x: Any, h: Any, p: dict, pre: str) -> tuple[Any, Any]:
        rows = self._hidden_channels * self._gates
        i2h = F.Convolution(x, p["i2h_weight"], p["i2h_bias"], num_filter=rows,
                            layout=self._conv_layout, name=pre + "i2h", **self._i2h)
        h2h = F.Convolution(h, p["h2h_weight"], p["h2h_bias"], num_filter=rows,
                            layout=self._conv_layout, name=pre + "h2h", **self._h2h)
        return i2h, h2h

    def hybrid_forward(self, F: Any, inputs: Any, states: list, **p: Any) -> tuple[Any, list]:
        pre = f"t{self._counter}_"
        i2h, h2h = self._convs(F, inputs, states[0], p, pre)
        if self._gates == 1:
            out = activate(F, F.elemwise_add(i2h, h2h), self._activation, pre + "out")
            return out, [out]
        if self._gates == 4:
            out, c = lstm_combine(F, F.elemwise_add(i2h, h2h), states[1], pre,
                                  self._activation, "sigmoid", self._channel_axis)
            return out, [out, c]
        out = gru_combine(F, i2h, h2h, states[0], pre, self._activation, "sigmoid",
                          self._channel_axis)
        return out, [out]

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        cin = shape[1 if self._channel_axis == 1 else -1]
        return (f"{type(self).__name__}({cin or None} -> {shape[0]}, {self._activation}, "
                f"{self._conv_layout})")


def _init(dims: int) -> Any:
    """``__init__`` of a ``dims``-D cell, with MXNet's arguments, order and defaults."""
    def __init__(self: Any, input_shape: Sequence[int], hidden_channels: int,
                 i2h_kernel: Spec, h2h_kernel: Spec, i2h_pad: Spec = (0,) * dims,
                 i2h_dilate: Spec = (1,) * dims, h2h_dilate: Spec = (1,) * dims,
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 conv_layout: str = ("NCW", "NCHW", "NCDHW")[dims - 1],
                 activation: Any = "tanh", prefix: Optional[str] = None,
                 params: Any = None) -> None:
        _ConvCell.__init__(self, dims, input_shape, hidden_channels, i2h_kernel, h2h_kernel,
                           i2h_pad, i2h_dilate, h2h_dilate, i2h_weight_initializer,
                           h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                           conv_layout, activation, prefix, params)
    return __init__


class Conv1DRNNCell(_ConvCell):
    """1-D convolutional Elman cell ``h' = act(W * x + R * h + b)``; ``input_shape`` is one
    sample's step without the batch, e.g. ``(C, W)`` for NCW."""
    __init__ = _init(1)


class Conv2DRNNCell(_ConvCell):
    """2-D convolutional Elman cell (``input_shape`` ``(C, H, W)`` for NCHW)."""
    __init__ = _init(2)


class Conv3DRNNCell(_ConvCell):
    """3-D convolutional Elman cell (``input_shape`` ``(C, D, H, W)`` for NCDHW)."""
    __init__ = _init(3)


class Conv1DLSTMCell(_ConvCell):
    """1-D ConvLSTM (Shi et al. 2015): gates i, f, c, o; states ``[h, c]``."""
    _gates, _alias_name = 4, "conv_lstm"
    __init__ = _init(1)


class Conv2DLSTMCell(_ConvCell):
    """2-D ConvLSTM: gates i, f, c, o; states ``[h, c]``."""
    _gates, _alias_name = 4, "conv_lstm"
    __init__ = _init(2)


class Conv3DLSTMCell(_ConvCell):
    """3-D ConvLSTM: gates i, f, c, o; states ``[h, c]``."""
    _gates, _alias_name = 4, "conv_lstm"
    __init__ = _init(3)


class Conv1DGRUCell(_ConvCell):
    """1-D convolutional GRU: gates r, z, n (``r`` multiplies the recurrent transform)."""
    _gates, _alias_name = 3, "conv_gru"
    __init__ = _init(1)


class Conv2DGRUCell(_ConvCell):
    """2-D convolutional GRU: gates r, z, n."""
    _gates, _alias_name = 3, "conv_gru"
    __init__ = _init(2)


class Conv3DGRUCell(_ConvCell):
    """3-D convolutional GRU: gates r, z, n."""
    _gates, _alias_name = 3, "conv_gru"
    __init__ = _init(3)


def _add_example(cls: type, dims: int) -> None:
    """Append an Examples section to ``cls``'s docstring: one step on ``dims``-D data, with
    'same' padding so the state keeps the input's spatial size."""
    shape = (3,) + (4,) * dims
    out = (2, 4) + (4,) * dims
    states = [out] * (2 if cls._gates == 4 else 1)
    head = inspect.cleandoc(cls.__doc__ or "").replace("\n", "\n    ")
    cls.__doc__ = f"""{head}

    Examples
    --------
    >>> cell = sg.gluon.contrib.rnn.{cls.__name__}({shape}, 4, i2h_kernel=3, h2h_kernel=3,
    ...                                         i2h_pad=1)
    >>> cell.initialize()
    >>> out, states = cell(sg.nd.ones((2,) + {shape}), cell.begin_state(batch_size=2))
    >>> out.shape, [s.shape for s in states]
    ({out}, {states})
    """


for _cls in (Conv1DRNNCell, Conv1DLSTMCell, Conv1DGRUCell):
    _add_example(_cls, 1)
for _cls in (Conv2DRNNCell, Conv2DLSTMCell, Conv2DGRUCell):
    _add_example(_cls, 2)
for _cls in (Conv3DRNNCell, Conv3DLSTMCell, Conv3DGRUCell):
    _add_example(_cls, 3)
