"""Convolution and pooling layers (MXNet 1.x ``gluon.nn`` names, arguments and defaults), each
one call of the registered ``Convolution``/``Deconvolution``/``Pooling`` op through ``F``."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ...core.base import AttrError
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

# The Parameters sections of the layers, written once and filled per layer by _document.
_CONV_PARAMS = """channels : int
    Number of output channels.
kernel_size : int or tuple of {n} ints
    Size of the convolution window.
strides : int or tuple of {n} ints
    Step of the window.
padding : int or tuple of {n} ints
    Zeros added on both sides of each spatial axis.
{adj}dilation : int or tuple of {n} ints
    Spacing between kernel elements.
groups : int
    Number of groups: the channels are split into this many independent convolutions.
layout : str
    Data layout; only {layout} (channels on axis 1) is supported.
activation : str or None
    Activation applied to the output (an ``Activation`` act_type), or None.
use_bias : bool
    Whether the layer has a learned bias.
weight_initializer, bias_initializer : Initializer or str
    Initializers of the weight and of the bias.
in_channels : int
    Number of input channels; 0 infers it from the data at the first forward."""
_ADJ = """output_padding : int or tuple of {n} ints
    Extra rows/columns added to one side of the output.
"""
_POOL_PARAMS = """pool_size : int or tuple of {n} ints
    Size of the pooling window.
strides : int, tuple of {n} ints or None
    Step of the window; None uses pool_size.
padding : int or tuple of {n} ints
    Padding added on both sides of each spatial axis.
layout : str
    Data layout; only {layout} (channels on axis 1) is supported.
ceil_mode : bool
    Round the output size up (MXNet's 'full' convention) instead of down.{avg}"""
_AVG = """
count_include_pad : bool
    Whether padded cells count in the average's divisor."""


def _document(cls: type, template: str, ndim: int, **fill: str) -> type:
    """Insert the Parameters section made from ``template`` before ``cls``'s Examples."""
    text = template.format(n=ndim, layout=_LAYOUTS[ndim][0], **fill)
    section = "Parameters\n    ----------\n    " + text.replace("\n", "\n    ") + "\n\n    "
    head = "Examples\n    --------"
    cls.__doc__ = cls.__doc__.replace(head, section + head, 1)
    return cls


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


class Conv1D(_Conv):
    """1-D convolution over NCW data (weight ``(channels, in_channels/groups, k)``).

    Examples
    --------
    >>> conv = sg.gluon.nn.Conv1D(1, kernel_size=2, use_bias=False, weight_initializer='ones')
    >>> conv.initialize()
    >>> conv(sg.nd.array([[[1, 2, 3]]]))  # 1 + 2, 2 + 3
    [[[3. 5.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = 1,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1, groups: int = 1,
                 layout: str = "NCW", activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, ndim=1, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over NCHW data; ``in_channels=0`` infers it at the first forward.

    Examples
    --------
    >>> conv = sg.gluon.nn.Conv2D(1, kernel_size=2, use_bias=False, weight_initializer='ones')
    >>> conv.initialize()
    >>> conv(sg.nd.ones((1, 1, 3, 3)))  # each 2x2 window of ones sums to 4
    [[[[4. 4.]
       [4. 4.]]]]
    <NDArray 1x1x2x2 @cpu(0)>
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple,
                 strides: IntOrTuple = (1, 1), padding: IntOrTuple = (0, 0),
                 dilation: IntOrTuple = (1, 1), groups: int = 1, layout: str = "NCHW",
                 activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, ndim=2, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over NCDHW data.

    Examples
    --------
    >>> conv = sg.gluon.nn.Conv3D(1, kernel_size=2, use_bias=False, weight_initializer='ones')
    >>> conv.initialize()
    >>> conv(sg.nd.ones((1, 1, 2, 2, 2)))  # one 2x2x2 window of ones
    [[[[[8.]]]]]
    <NDArray 1x1x1x1x1 @cpu(0)>
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple,
                 strides: IntOrTuple = (1, 1, 1), padding: IntOrTuple = (0, 0, 0),
                 dilation: IntOrTuple = (1, 1, 1), groups: int = 1, layout: str = "NCDHW",
                 activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, ndim=3, **kwargs)


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (weight ``(in_channels, channels/groups, kh, kw)``).

    Examples
    --------
    >>> deconv = sg.gluon.nn.Conv2DTranspose(1, kernel_size=2, use_bias=False,
    ...                                      weight_initializer='ones')
    >>> deconv.initialize()
    >>> deconv(sg.nd.ones((1, 1, 2, 2)))  # how many input windows cover each output cell
    [[[[1. 2. 1.]
       [2. 4. 2.]
       [1. 2. 1.]]]]
    <NDArray 1x1x3x3 @cpu(0)>
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple,
                 strides: IntOrTuple = (1, 1), padding: IntOrTuple = (0, 0),
                 output_padding: IntOrTuple = (0, 0), dilation: IntOrTuple = (1, 1),
                 groups: int = 1, layout: str = "NCHW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         ndim=2, **kwargs)


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


def _pool_init(block: _Pooling, ndim: int, pool_type: str, pool_size: IntOrTuple,
               strides: Any, padding: IntOrTuple, layout: str, ceil_mode: bool,
               count_include_pad: Optional[bool], kwargs: dict) -> None:
    """The shared body of the MaxPool/AvgPool classes' ``__init__``."""
    if layout not in _LAYOUTS[ndim]:
        raise AttrError(f"{type(block).__name__}: layout {layout!r} is not supported; "
                        f"supported: {_LAYOUTS[ndim]}")
    size = _tuple(pool_size, ndim, "pool_size")
    strides = None if strides is None else _tuple(strides, ndim, "strides")
    _Pooling.__init__(block, size, strides, _tuple(padding, ndim, "padding"), ceil_mode,
                      False, pool_type, count_include_pad, **kwargs)


class MaxPool1D(_Pooling):
    """Max pooling over NCW data (``strides`` default to ``pool_size``).

    Examples
    --------
    >>> sg.gluon.nn.MaxPool1D()(sg.nd.array([[[1, 3, 2, 4]]]))
    [[[3. 4.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = 2, strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, layout: str = "NCW", ceil_mode: bool = False,
                 **kwargs: Any) -> None:
        _pool_init(self, 1, "max", pool_size, strides, padding, layout, ceil_mode, None,
                   kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over NCHW data (``strides`` default to ``pool_size``).

    Examples
    --------
    >>> sg.gluon.nn.MaxPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[4.]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = (2, 2), strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, layout: str = "NCHW", ceil_mode: bool = False,
                 **kwargs: Any) -> None:
        _pool_init(self, 2, "max", pool_size, strides, padding, layout, ceil_mode, None,
                   kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over NCW data.

    Examples
    --------
    >>> sg.gluon.nn.AvgPool1D()(sg.nd.array([[[1, 3, 2, 4]]]))
    [[[2. 3.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = 2, strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, layout: str = "NCW", ceil_mode: bool = False,
                 count_include_pad: bool = True, **kwargs: Any) -> None:
        _pool_init(self, 1, "avg", pool_size, strides, padding, layout, ceil_mode,
                   count_include_pad, kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over NCHW data (``count_include_pad`` as MXNet: True).

    Examples
    --------
    >>> sg.gluon.nn.AvgPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[2.5]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = (2, 2), strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False, layout: str = "NCHW",
                 count_include_pad: bool = True, **kwargs: Any) -> None:
        _pool_init(self, 2, "avg", pool_size, strides, padding, layout, ceil_mode,
                   count_include_pad, kwargs)


class _GlobalPool(_Pooling):
    _type = "max"

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        if layout != "NCHW":
            raise AttrError(f"{type(self).__name__}: layout {layout!r} is not supported; "
                            f"supported: ('NCHW',)")
        _Pooling.__init__(self, (1, 1), (1, 1), (0, 0), False, True, self._type, **kwargs)


class GlobalMaxPool2D(_GlobalPool):
    """Max over the whole H and W: output ``(N, C, 1, 1)``.

    Examples
    --------
    >>> sg.gluon.nn.GlobalMaxPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[4.]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    """
    _type = "max"


class GlobalAvgPool2D(_GlobalPool):
    """Mean over the whole H and W: output ``(N, C, 1, 1)``.

    Examples
    --------
    >>> sg.gluon.nn.GlobalAvgPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[2.5]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    """
    _type = "avg"


for _cls, _n in ((Conv1D, 1), (Conv2D, 2), (Conv3D, 3)):
    _document(_cls, _CONV_PARAMS, _n, adj="")
_document(Conv2DTranspose, _CONV_PARAMS, 2, adj=_ADJ.format(n=2))
for _cls, _n, _avg in ((MaxPool1D, 1, ""), (MaxPool2D, 2, ""), (AvgPool1D, 1, _AVG),
                       (AvgPool2D, 2, _AVG)):
    _document(_cls, _POOL_PARAMS, _n, avg=_avg)
