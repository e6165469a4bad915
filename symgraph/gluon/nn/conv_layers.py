"""Convolution and pooling layers (MXNet 1.x ``gluon.nn`` names, arguments and defaults), each
one call of the registered ``Convolution``/``Deconvolution``/``Pooling`` op through ``F``."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ...base import AttrError
from ..block import HybridBlock
from .activations import Activation

IntOrTuple = Union[int, Sequence[int]]


def _tuple(value: IntOrTuple, n: int, what: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise AttrError(f"{what} must be an int or a tuple of {n} ints, got {value}")
    return value


_LAYOUTS = {1: ("NCW",), 2: ("NCHW",), 3: ("NCDHW",)}


class _Conv(HybridBlock):
    """Shared body of ConvND and ConvNDTranspose."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple,
                 padding: IntOrTuple, dilation: IntOrTuple, groups: int, layout: str,
                 in_channels: int = 0, activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 op_name: str = "Convolution", adj: Any = None, ndim: int = 2,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if layout not in _LAYOUTS[ndim]:
            raise AttrError(f"{self.name}: layout {layout!r} is not supported; "
                            f"supported: {_LAYOUTS[ndim]}")
        with self.name_scope():
            self._channels, self._in_channels = channels, in_channels
            self._op_name = op_name
            self._kwargs = {
                "kernel": _tuple(kernel_size, ndim, "kernel_size"),
                "stride": _tuple(strides, ndim, "strides"),
                "pad": _tuple(padding, ndim, "padding"),
                "dilate": _tuple(dilation, ndim, "dilation"),
                "num_filter": channels, "num_group": groups, "no_bias": not use_bias,
                "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = _tuple(adj, ndim, "output_padding")
            kernel = self._kwargs["kernel"]
            if op_name == "Convolution":
                wshape = (channels, in_channels // groups if in_channels else 0) + kernel
            else:
                wshape = (in_channels, channels // groups) + kernel
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None

    def _alias(self) -> str:
        return "conv"

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:
        op = F.Convolution if self._op_name == "Convolution" else F.Deconvolution
        out = self._op(F, op, (x, weight) if bias is None else (x, weight, bias), self._kwargs)
        return self.act(out) if self.act is not None else out
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)

    def __repr__(self) -> str:
        k = self._kwargs
        return (f"{type(self).__name__}({self._in_channels or None} -> {self._channels}, "
                f"kernel_size={k['kernel']}, stride={k['stride']})")


def _conv_class(ndim: int, layout: str, transpose: bool = False) -> type:
    def __init__(self: Any, channels: int, kernel_size: IntOrTuple,
                 strides: IntOrTuple = 1, padding: IntOrTuple = 0,
                 *more: Any, **kwargs: Any) -> None:
        names = (("output_padding",) if transpose else ()) + (
            "dilation", "groups", "layout", "activation", "use_bias", "weight_initializer",
            "bias_initializer", "in_channels")  # MXNet's positional order
        kwargs.update(zip(names, more))
        adj = kwargs.pop("output_padding", 0) if transpose else None
        _Conv.__init__(self, channels, kernel_size, strides, padding,
                       kwargs.pop("dilation", 1), kwargs.pop("groups", 1),
                       kwargs.pop("layout", layout),
                       op_name="Deconvolution" if transpose else "Convolution",
                       adj=adj, ndim=ndim, **kwargs)
    return __init__


class Conv1D(_Conv):
    """1-D convolution over NCW data (weight ``(channels, in_channels/groups, k)``)."""
    __init__ = _conv_class(1, "NCW")


class Conv2D(_Conv):
    """2-D convolution over NCHW data; ``in_channels=0`` infers it at the first forward."""
    __init__ = _conv_class(2, "NCHW")


class Conv3D(_Conv):
    """3-D convolution over NCDHW data."""
    __init__ = _conv_class(3, "NCDHW")


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (weight ``(in_channels, channels/groups, kh, kw)``)."""
    __init__ = _conv_class(2, "NCHW", transpose=True)


class _Pooling(HybridBlock):
    def __init__(self, pool_size: tuple, strides: Optional[tuple], padding: tuple,
                 ceil_mode: bool, global_pool: bool, pool_type: str,
                 count_include_pad: Optional[bool] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        strides = pool_size if strides is None else strides
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": padding,
                        "global_pool": global_pool, "pool_type": pool_type,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self._op(F, F.Pooling, (x,), self._kwargs)
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']})"


def _pool_class(ndim: int, pool_type: str, order: tuple = ("layout", "ceil_mode")) -> type:
    """``__init__(pool_size, strides, padding, *rest)``; ``order`` names the rest as MXNet
    orders them (AvgPool2D puts ``ceil_mode`` before ``layout``)."""
    def __init__(self: Any, pool_size: IntOrTuple = 2, strides: Any = None,
                 padding: IntOrTuple = 0, *more: Any, **kwargs: Any) -> None:
        kwargs.update(zip(order, more))
        layout = kwargs.pop("layout", None)
        ceil_mode = kwargs.pop("ceil_mode", False)
        count_include_pad = kwargs.pop("count_include_pad", True)
        if layout is not None and layout not in _LAYOUTS[ndim]:
            raise AttrError(f"{type(self).__name__}: layout {layout!r} is not supported; "
                            f"supported: {_LAYOUTS[ndim]}")
        size = _tuple(pool_size, ndim, "pool_size")
        strides = None if strides is None else _tuple(strides, ndim, "strides")
        _Pooling.__init__(self, size, strides, _tuple(padding, ndim, "padding"), ceil_mode,
                          False, pool_type,
                          count_include_pad if pool_type == "avg" else None, **kwargs)
    return __init__


class MaxPool1D(_Pooling):
    """Max pooling over NCW data (``strides`` default to ``pool_size``)."""
    __init__ = _pool_class(1, "max")


class MaxPool2D(_Pooling):
    """Max pooling over NCHW data (``strides`` default to ``pool_size``)."""
    __init__ = _pool_class(2, "max")


class AvgPool1D(_Pooling):
    """Average pooling over NCW data."""
    __init__ = _pool_class(1, "avg", ("layout", "ceil_mode", "count_include_pad"))


class AvgPool2D(_Pooling):
    """Average pooling over NCHW data (``count_include_pad`` as MXNet: True)."""
    __init__ = _pool_class(2, "avg", ("ceil_mode", "layout", "count_include_pad"))


class _GlobalPool(_Pooling):
    _type = "max"

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        if layout != "NCHW":
            raise AttrError(f"{type(self).__name__}: layout {layout!r} is not supported; "
                            f"supported: ('NCHW',)")
        _Pooling.__init__(self, (1, 1), (1, 1), (0, 0), False, True, self._type, **kwargs)


class GlobalMaxPool2D(_GlobalPool):
    """Max over the whole H and W: output ``(N, C, 1, 1)``."""
    _type = "max"


class GlobalAvgPool2D(_GlobalPool):
    """Mean over the whole H and W: output ``(N, C, 1, 1)``."""
    _type = "avg"
