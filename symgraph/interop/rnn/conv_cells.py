"""Convolutional recurrent cells (MXNet's ``mx.rnn.ConvRNNCell``, ``ConvLSTMCell``,
``ConvGRUCell``; Shi et al. 2015): the cells' matrix products become convolutions, so
states keep the input's spatial layout. The h2h convolution is padded to keep the state's
size (odd kernels only)."""
from __future__ import annotations

import functools
from typing import Any, Optional

from ...frontend import symbol as _sym
from ...core.base import AttrError
from .rnn_cell import BaseRNNCell, RNNParams

__all__ = ["BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]

_LEAKY = functools.partial(_sym.LeakyReLU, act_type="leaky", slope=0.2)  # MXNet's default


class BaseConvRNNCell(BaseRNNCell):
    """Shared set-up: the state shape (the i2h convolution's output on ``input_shape``, batch
    0) and the i2h/h2h convolutions of ``num_hidden * GATES`` filters."""

    GATES, N_STATES = 1, 1

    def __init__(self, input_shape: tuple, num_hidden: int, h2h_kernel: tuple = (3, 3),
                 h2h_dilate: tuple = (1, 1), i2h_kernel: tuple = (3, 3),
                 i2h_stride: tuple = (1, 1), i2h_pad: tuple = (1, 1),
                 i2h_dilate: tuple = (1, 1), i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", activation: Any = _LEAKY,
                 prefix: str = "", params: Optional[RNNParams] = None,
                 conv_layout: str = "NCHW") -> None:
        super().__init__(prefix=prefix, params=params)
        if any(k % 2 == 0 for k in h2h_kernel):
            raise AttrError(f"{prefix}: h2h_kernel={tuple(h2h_kernel)} must be odd (the "
                            f"state keeps its size)")
        self._num_hidden, self._activation, self._conv_layout = num_hidden, activation, \
            conv_layout
        self._h2h = {"kernel": tuple(h2h_kernel), "dilate": tuple(h2h_dilate),
                     "pad": tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel))}
        self._i2h = {"kernel": tuple(i2h_kernel), "stride": tuple(i2h_stride),
                     "pad": tuple(i2h_pad), "dilate": tuple(i2h_dilate)}
        probe = _sym.Convolution(_sym.Variable("data"), num_filter=num_hidden,
                                 layout=conv_layout, **self._i2h)
        self._state_shape = (0,) + tuple(probe.infer_shape(data=input_shape)[1][0][1:])
        inits = (i2h_weight_initializer, i2h_bias_initializer, h2h_weight_initializer,
                 h2h_bias_initializer)
        self._w = {k: self.params.get(k, **({"init": i} if i is not None else {}))
                   for k, i in zip(("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias"),
                                   inits)}

    @property
    def state_info(self) -> list:
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}] * self.N_STATES

    def _conv_forward(self, inputs: Any, states: list, name: str) -> tuple[Any, Any]:
        filters = self._num_hidden * self.GATES
        i2h = _sym.Convolution(data=inputs, weight=self._w["i2h_weight"],
                               bias=self._w["i2h_bias"], num_filter=filters,
                               layout=self._conv_layout, name=f"{name}i2h", **self._i2h)
        h2h = _sym.Convolution(data=states[0], weight=self._w["h2h_weight"],
                               bias=self._w["h2h_bias"], num_filter=filters, stride=(1, 1),
                               layout=self._conv_layout, name=f"{name}h2h", **self._h2h)
        return i2h, h2h

    def _slice(self, x: Any, name: str) -> Any:
        return _sym.SliceChannel(x, num_outputs=self.GATES,
                                 axis=self._conv_layout.find("C"), name=name)


class ConvRNNCell(BaseConvRNNCell):
    """``out = activation(conv(x) + conv(h))``."""

    def __init__(self, input_shape: tuple, num_hidden: int, prefix: str = "ConvRNN_",
                 **kwargs: Any) -> None:
        super().__init__(input_shape, num_hidden, prefix=prefix, **kwargs)

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        name = self._step_prefix()
        i2h, h2h = self._conv_forward(inputs, states, name)
        out = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return out, [out]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM (gates i, f, c, o along the channel axis)."""

    GATES, N_STATES = 4, 2

    def __init__(self, input_shape: tuple, num_hidden: int, prefix: str = "ConvLSTM_",
                 **kwargs: Any) -> None:
        super().__init__(input_shape, num_hidden, prefix=prefix, **kwargs)

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        name = self._step_prefix()
        i2h, h2h = self._conv_forward(inputs, states, name)
        i, f, c, o = self._slice(i2h + h2h, f"{name}slice")
        gate = functools.partial(_sym.Activation, act_type="sigmoid")
        next_c = _sym.elemwise_add(gate(f, name=f"{name}f") * states[1],
                                   gate(i, name=f"{name}i") *
                                   self._get_activation(c, self._activation, name=f"{name}c"),
                                   name=f"{name}state")
        out = _sym.elemwise_mul(gate(o, name=f"{name}o"),
                                self._get_activation(next_c, self._activation),
                                name=f"{name}out")
        return out, [out, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU (gates r, z, n along the channel axis)."""

    GATES = 3

    def __init__(self, input_shape: tuple, num_hidden: int, prefix: str = "ConvGRU_",
                 **kwargs: Any) -> None:
        super().__init__(input_shape, num_hidden, prefix=prefix, **kwargs)

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        name = self._step_prefix()
        i2h, h2h = self._conv_forward(inputs, states, name)
        xr, xz, xn = self._slice(i2h, f"{name}_i2h_slice")
        hr, hz, hn = self._slice(h2h, f"{name}_h2h_slice")
        r = _sym.Activation(xr + hr, act_type="sigmoid", name=f"{name}_r_act")
        z = _sym.Activation(xz + hz, act_type="sigmoid", name=f"{name}_z_act")
        n = self._get_activation(xn + r * hn, self._activation, name=f"{name}_h_act")
        out = _sym.elemwise_add((1.0 - z) * n, z * states[0], name=f"{name}out")
        return out, [out]
