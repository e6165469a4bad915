"""Deformable convolution layers of ``gluon.contrib.cnn`` (MXNet 1.9.1's names, arguments,
defaults, parameter names and shapes).

Each layer holds two convolutions: a plain ``Convolution`` (``offset_weight``,
``offset_bias``, initialised to zeros so training starts from the undeformed grid) that
predicts the sampling offsets from the data, and the ``contrib.DeformableConvolution`` op
(``deformable_conv_weight``, ``deformable_conv_bias``) that samples the data at them. The
modulated (v2) layer's offset convolution also predicts a mask, ``2 * sigmoid(.)``, scaling
each sample. As in MXNet, ``deformable_conv_weight``'s input channels are always inferred
at the first forward, and ``layout='NHWC'`` is accepted here but refused by the op.

Example::

    net = DeformableConvolution(8, kernel_size=3, padding=1)
    net.initialize()
    net(sg.nd.ones((2, 4, 6, 6))).shape   # (2, 8, 6, 6)
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ....core.base import AttrError
from ...block import HybridBlock
from ...nn.activations import Activation
from ...nn.pool_layers import as_tuple

IntOrTuple = Union[int, Sequence[int]]


class _DeformableBase(HybridBlock):
    """Shared body: the offset convolution's and the deformable convolution's parameters;
    ``taps_per_group`` offset channels per deformable group and kernel tap (2: dy, dx; 3 with
    the mask)."""

    _OP = "DeformableConvolution"
    _PER_TAP = 2

    def __init__(self, channels: int, kernel_size: IntOrTuple = (1, 1),
                 strides: IntOrTuple = (1, 1), padding: IntOrTuple = (0, 0),
                 dilation: IntOrTuple = (1, 1), groups: int = 1, num_deformable_group: int = 1,
                 layout: str = "NCHW", use_bias: bool = True, in_channels: int = 0,
                 activation: Optional[str] = None, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", offset_weight_initializer: Any = "zeros",
                 offset_bias_initializer: Any = "zeros", offset_use_bias: bool = True,
                 op_name: Optional[str] = None, adj: Any = None, prefix: Any = None,
                 params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        if layout not in ("NCHW", "NHWC"):
            raise AttrError(f"{type(self).__name__}: layout {layout!r} is not supported; "
                            f"supported: ('NCHW', 'NHWC')")
        if adj:
            raise AttrError(f"{type(self).__name__}: adj {adj!r} applies to transposed "
                            f"convolutions only; a deformable convolution has none")
        kernel = as_tuple(kernel_size, 2, "kernel_size")
        common = {"kernel": kernel, "stride": as_tuple(strides, 2, "strides"),
                  "dilate": as_tuple(dilation, 2, "dilation"),
                  "pad": as_tuple(padding, 2, "padding"), "num_group": groups,
                  "layout": layout}
        self._channels, self._in_channels = channels, in_channels
        self._op_name = op_name or self._OP
        self._split = 2 * num_deformable_group * kernel[0] * kernel[1]
        offsets = self._PER_TAP * num_deformable_group * kernel[0] * kernel[1]
        self._kwargs_offset = {**common, "num_filter": offsets, "no_bias": not offset_use_bias}
        self._kwargs_deformable_conv = {**common, "num_filter": channels,
                                        "num_deformable_group": num_deformable_group,
                                        "no_bias": not use_bias}
        cin = in_channels // groups if in_channels else 0
        self._offset_shape = (offsets,) + (kernel + (cin,) if layout == "NHWC" else
                                           (cin,) + kernel)
        with self.name_scope():
            self._declare(kernel, weight_initializer, bias_initializer,
                          offset_weight_initializer, offset_bias_initializer)
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _declare(self, kernel: tuple, w_init: Any, b_init: Any, ow_init: Any,
                 ob_init: Any) -> None:
        """The parameters in MXNet's order (offset convolution's first in v1)."""
        self._declare_offset(ow_init, ob_init)
        self._declare_conv(kernel, w_init, b_init)

    def _declare_offset(self, w_init: Any, b_init: Any) -> None:
        get = self.params.get
        self.offset_weight = get("offset_weight", shape=self._offset_shape, init=w_init,
                                 allow_deferred_init=True)
        self.offset_bias = None if self._kwargs_offset["no_bias"] else get(
            "offset_bias", shape=(self._offset_shape[0],), init=b_init,
            allow_deferred_init=True)

    def _declare_conv(self, kernel: tuple, w_init: Any, b_init: Any) -> None:
        get, channels = self.params.get, self._channels
        # input channels left 0 even when in_channels is given: MXNet's shape, so that
        # parameter files and collect_params() match
        self.deformable_conv_weight = get("deformable_conv_weight", shape=(channels, 0) + kernel,
                                          init=w_init, allow_deferred_init=True)
        self.deformable_conv_bias = None if self._kwargs_deformable_conv["no_bias"] else get(
            "deformable_conv_bias", shape=(channels,), init=b_init, allow_deferred_init=True)

    def _offsets(self, F: Any, x: Any, offset_weight: Any, offset_bias: Any) -> Any:
        """The offset convolution's output."""
        arrays = (x, offset_weight) if offset_bias is None else (x, offset_weight, offset_bias)
        return F.Convolution(*arrays, **self._kwargs_offset)

    def _finish(self, y: Any) -> Any:
        return self.act(y) if self.act is not None else y

    def __repr__(self) -> str:
        k = self._kwargs_deformable_conv
        extra = "".join([f", padding={k['pad']}" if any(k["pad"]) else "",
                         f", dilation={k['dilate']}" if k["dilate"] != (1, 1) else "",
                         f", groups={k['num_group']}" if k["num_group"] != 1 else "",
                         ", bias=False" if k["no_bias"] else "",
                         f", {self.act}" if self.act is not None else ""])
        cin = self.deformable_conv_weight.shape[1] or None  # 0 until the first forward
        return (f"{type(self).__name__}({cin} -> {self._channels}, "
                f"kernel_size={k['kernel']}, stride={k['stride']}{extra})")


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution v1 (Dai et al., 2017): the sampling grid of each output
    pixel is shifted by offsets that a zero-initialised convolution learns from the data.

    Parameters are MXNet 1.9.1's: ``offset_weight`` ``(2 * dg * kh * kw, in_channels /
    groups, kh, kw)``, ``offset_bias``, ``deformable_conv_weight`` ``(channels, in_channels /
    groups, kh, kw)`` and ``deformable_conv_bias``.

    Examples
    --------
    >>> net = sg.gluon.contrib.cnn.DeformableConvolution(1, kernel_size=2, use_bias=False,
    ...                                                  weight_initializer='ones')
    >>> net.initialize()
    >>> net(sg.nd.ones((1, 1, 3, 3)))  # zero offsets at first: a plain 2x2 convolution
    [[[[4. 4.]
       [4. 4.]]]]
    <NDArray 1x1x2x2 @cpu(0)>
    """

    def _alias(self) -> str:
        return "deformable_conv"

    def hybrid_forward(self, F: Any, x: Any, offset_weight: Any, deformable_conv_weight: Any,
                       offset_bias: Any = None, deformable_conv_bias: Any = None) -> Any:
        offset = self._offsets(F, x, offset_weight, offset_bias)
        tail = () if deformable_conv_bias is None else (deformable_conv_bias,)
        return self._finish(F.contrib.DeformableConvolution(
            x, offset, deformable_conv_weight, *tail, **self._kwargs_deformable_conv))


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D modulated deformable convolution v2 (Zhu et al., 2018): as
    :class:`DeformableConvolution`, and each sample is scaled by ``2 * sigmoid(m)``, ``m``
    from the same offset convolution (``3 * dg * kh * kw`` channels: the offsets, then the
    masks), so an untrained layer is a plain convolution.

    Examples
    --------
    >>> net = sg.gluon.contrib.cnn.ModulatedDeformableConvolution(
    ...     1, kernel_size=2, use_bias=False, weight_initializer='ones')
    >>> net.initialize()
    >>> net(sg.nd.ones((1, 1, 3, 3)))  # zero offsets, masks 2 * sigmoid(0) = 1
    [[[[4. 4.]
       [4. 4.]]]]
    <NDArray 1x1x2x2 @cpu(0)>
    """

    _OP = "ModulatedDeformableConvolution"
    _PER_TAP = 3

    def _declare(self, kernel: tuple, w_init: Any, b_init: Any, ow_init: Any,
                 ob_init: Any) -> None:
        """The parameters in MXNet's order (the deformable convolution's first in v2)."""
        self._declare_conv(kernel, w_init, b_init)
        self._declare_offset(ow_init, ob_init)

    def _alias(self) -> str:
        return "modulated_deformable_conv"

    def hybrid_forward(self, F: Any, x: Any, offset_weight: Any, deformable_conv_weight: Any,
                       offset_bias: Any = None, deformable_conv_bias: Any = None) -> Any:
        offset = self._offsets(F, x, offset_weight, offset_bias)
        shifts = F.slice_axis(offset, axis=1, begin=0, end=self._split)
        mask = F.sigmoid(F.slice_axis(offset, axis=1, begin=self._split, end=None)) * 2
        tail = () if deformable_conv_bias is None else (deformable_conv_bias,)
        return self._finish(F.contrib.ModulatedDeformableConvolution(
            x, shifts, mask, deformable_conv_weight, *tail, **self._kwargs_deformable_conv))
