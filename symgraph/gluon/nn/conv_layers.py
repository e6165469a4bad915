"""Convolution layers (MXNet 1.9.1's ``gluon.nn`` names, arguments and defaults):
``Conv1D/2D/3D`` and ``Conv1D/2D/3DTranspose``, each one ``Convolution``/``Deconvolution`` op
through ``F``; ``ReflectionPad2D`` (the ``pad`` op). Channels-last layouts (``NWC``, ``NHWC``,
``NDHWC``): a convolution computes them itself (weights ``(channels, *kernel,
in_channels/groups)``, as MXNet); a transposed convolution, whose op computes channels first
only, moves the data's channels around it (weights stay ``(in_channels, channels/groups,
*kernel)``). The pooling layers are in ``pool_layers.py``.

Example::

    conv = nn.Conv2D(16, 3, layout="NHWC", in_channels=4)
    conv.initialize()
    conv(sg.nd.ones((1, 10, 10, 4))).shape   # (1, 8, 8, 16)
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ...core.base import AttrError

from ..block import HybridBlock
from .activations import Activation
from .layer_docs import ADJ, CONV_PARAMS, document
from .pool_layers import FIRST, as_tuple as _tuple, channels_first_call, check_layout

IntOrTuple = Union[int, Sequence[int]]


class _Conv(HybridBlock):
    """Shared body of ConvND and ConvNDTranspose."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple,
                 padding: IntOrTuple, dilation: IntOrTuple, groups: int, layout: str,
                 in_channels: int = 0, activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 op_name: str = "Convolution", adj: Any = None, ndim: int = 2,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        last = check_layout(self.name, layout, ndim)
        # the Convolution op computes channels last itself; the Deconvolution op does not
        self._transpose_data = last and op_name != "Convolution"
        with self.name_scope():
            self._channels, self._in_channels = channels, in_channels
            self._op_name = op_name
            self._kwargs = {
                "kernel": _tuple(kernel_size, ndim, "kernel_size"),
                "stride": _tuple(strides, ndim, "strides"),
                "pad": _tuple(padding, ndim, "padding"),
                "dilate": _tuple(dilation, ndim, "dilation"),
                "num_filter": channels, "num_group": groups, "no_bias": not use_bias,
                "layout": FIRST[ndim] if self._transpose_data else layout}
            if adj is not None:
                self._kwargs["adj"] = _tuple(adj, ndim, "output_padding")
            kernel = self._kwargs["kernel"]
            cin = in_channels // groups if in_channels else 0
            if op_name == "Convolution":
                wshape = (channels,) + kernel + (cin,) if last else (channels, cin) + kernel
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
        arrays = (x, weight) if bias is None else (x, weight, bias)
        if self._transpose_data:
            out = channels_first_call(self, F, op, arrays, self._kwargs,
                                      len(self._kwargs["kernel"]))
        else:
            out = self._op(F, op, arrays, self._kwargs)
        return self.act(out) if self.act is not None else out
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)

    def __repr__(self) -> str:
        k = self._kwargs
        return (f"{type(self).__name__}({self._in_channels or None} -> {self._channels}, "
                f"kernel_size={k['kernel']}, stride={k['stride']})")


class Conv1D(_Conv):
    """1-D convolution over NCW (or NWC) data (weight ``(channels, in_channels/groups, k)``).

    Examples
    --------
    >>> conv = sg.gluon.nn.Conv1D(1, kernel_size=2, use_bias=False, weight_initializer='ones')
    >>> conv.initialize()
    >>> conv(sg.nd.array([[[1, 2, 3]]]))  # 1 + 2, 2 + 3
    [[[3. 5.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = 1,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 groups: int = 1, layout: str = "NCW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, ndim=1, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over NCHW (or NHWC) data; ``in_channels=0`` infers it at the first forward.

    Examples
    --------
    >>> conv = sg.gluon.nn.Conv2D(1, kernel_size=2, use_bias=False, weight_initializer='ones')
    >>> conv.initialize()
    >>> conv(sg.nd.ones((1, 1, 3, 3)))  # each 2x2 window of ones sums to 4
    [[[[4. 4.]
       [4. 4.]]]]
    <NDArray 1x1x2x2 @cpu(0)>
    >>> last = sg.gluon.nn.Conv2D(16, 3, layout='NHWC', in_channels=4)
    >>> last.initialize()
    >>> last(sg.nd.ones((1, 10, 10, 4))).shape  # channels stay last
    (1, 8, 8, 16)
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1),
                 padding: IntOrTuple = (0, 0), dilation: IntOrTuple = (1, 1),
                 groups: int = 1, layout: str = "NCHW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, ndim=2, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over NCDHW (or NDHWC) data.

    Examples
    --------
    >>> conv = sg.gluon.nn.Conv3D(1, kernel_size=2, use_bias=False, weight_initializer='ones')
    >>> conv.initialize()
    >>> conv(sg.nd.ones((1, 1, 2, 2, 2)))  # one 2x2x2 window of ones
    [[[[[8.]]]]]
    <NDArray 1x1x1x1x1 @cpu(0)>
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1, 1),
                 padding: IntOrTuple = (0, 0, 0), dilation: IntOrTuple = (1, 1, 1),
                 groups: int = 1, layout: str = "NCDHW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, ndim=3, **kwargs)


class Conv1DTranspose(_Conv):
    """1-D transposed convolution (weight ``(in_channels, channels/groups, k)``).

    Examples
    --------
    >>> deconv = sg.gluon.nn.Conv1DTranspose(1, kernel_size=2, use_bias=False,
    ...                                      weight_initializer='ones')
    >>> deconv.initialize()
    >>> deconv(sg.nd.array([[[1, 2, 3]]]))  # 1, 1 + 2, 2 + 3, 3
    [[[1. 3. 5. 3.]]]
    <NDArray 1x1x4 @cpu(0)>
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = 1,
                 padding: IntOrTuple = 0, output_padding: IntOrTuple = 0,
                 dilation: IntOrTuple = 1,
                 groups: int = 1, layout: str = "NCW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         ndim=1, **kwargs)


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

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1),
                 padding: IntOrTuple = (0, 0), output_padding: IntOrTuple = (0, 0),
                 dilation: IntOrTuple = (1, 1),
                 groups: int = 1, layout: str = "NCHW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         ndim=2, **kwargs)


class Conv3DTranspose(_Conv):
    """3-D transposed convolution (weight ``(in_channels, channels/groups, kd, kh, kw)``).

    Examples
    --------
    >>> deconv = sg.gluon.nn.Conv3DTranspose(2, kernel_size=2, strides=2, in_channels=3)
    >>> deconv.initialize()
    >>> deconv(sg.nd.ones((1, 3, 2, 2, 2))).shape  # stride 2 doubles each spatial axis
    (1, 2, 4, 4, 4)
    >>> last = sg.gluon.nn.Conv3DTranspose(2, 2, layout='NDHWC', in_channels=3)
    >>> last.initialize()
    >>> last(sg.nd.ones((1, 2, 2, 2, 3))).shape
    (1, 3, 3, 3, 2)
    """

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1, 1),
                 padding: IntOrTuple = (0, 0, 0), output_padding: IntOrTuple = (0, 0, 0),
                 dilation: IntOrTuple = (1, 1, 1),
                 groups: int = 1, layout: str = "NCDHW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         ndim=3, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads NCHW data by reflection (the border itself not repeated).

    Parameters
    ----------
    padding : int or tuple of 8 ints
        That many rows and columns on each side of H and W, or MXNet's ``pad_width``
        (before and after each of N, C, H, W; those of N and C must be 0).

    Examples
    --------
    >>> pad = sg.gluon.nn.ReflectionPad2D(1)
    >>> pad(sg.nd.arange(9).reshape((1, 1, 3, 3)))  # row/column 1 mirrored outside 0
    [[[[4. 3. 4. 5. 4.]
       [1. 0. 1. 2. 1.]
       [4. 3. 4. 5. 4.]
       [7. 6. 7. 8. 7.]
       [4. 3. 4. 5. 4.]]]]
    <NDArray 1x1x5x5 @cpu(0)>
    """

    def __init__(self, padding: IntOrTuple = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        padding = tuple(int(p) for p in padding)
        if len(padding) != 8:
            raise AttrError(f"ReflectionPad2D: padding must be an int or 8 ints (pad_width "
                            f"of NCHW data), got {padding}")
        self._kwargs = {"mode": "reflect", "pad_width": padding}

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self._op(F, F.pad, (x,), self._kwargs)
    _FIXED_OPS = hybrid_forward

    def __repr__(self) -> str:
        return f"ReflectionPad2D(padding={self._kwargs['pad_width']})"


for _cls, _n in ((Conv1D, 1), (Conv2D, 2), (Conv3D, 3)):
    document(_cls, CONV_PARAMS, _n, adj="")
for _cls, _n in ((Conv1DTranspose, 1), (Conv2DTranspose, 2), (Conv3DTranspose, 3)):
    document(_cls, CONV_PARAMS, _n, adj=ADJ.format(n=_n))
