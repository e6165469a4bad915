"""MobileNet (arXiv:1704.04861) and MobileNetV2 (arXiv:1801.04381) with width multipliers
1.0, 0.75, 0.5 and 0.25, as MXNet 1.9.1 builds them (names, shapes and files match).

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.mobilenet_v2_0_25(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 32, 32))).shape         # doctest: +SKIP
    (1, 10)
"""
from __future__ import annotations

from typing import Any

from ....core.context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained
from ._variant import variant

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75",
           "mobilenet_v2_0_75", "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25",
           "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2"]


class RELU6(HybridBlock):
    """``min(max(x, 0), 6)``, MobileNetV2's activation.

    Example: ``RELU6()(sg.nd.array([-1, 3, 9]))`` is ``[0, 3, 6]``.
    """

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.clip(x, a_min=0, a_max=6, name="relu6")


def _add_conv(out: nn.HybridSequential, channels: int = 1, kernel: int = 1, stride: int = 1,
              pad: int = 0, num_group: int = 1, active: bool = True,
              relu6: bool = False) -> None:
    """Convolution without bias, batch norm, then relu6 or relu unless not ``active``."""
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False),
            nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(out: nn.HybridSequential, dw_channels: int, channels: int, stride: int,
                 relu6: bool = False) -> None:
    """A depthwise 3x3 convolution then a pointwise one (MobileNet's separable layer)."""
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1,
              num_group=dw_channels, relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expansion by ``t``, depthwise 3x3 with
    ``stride``, linear 1x1 projection to ``channels``; the input is added back when the
    shapes agree (stride 1, ``in_channels == channels``).

    Example: ``LinearBottleneck(16, 24, 6, 2)``.
    """

    def __init__(self, in_channels: int, channels: int, t: int, stride: int,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            _add_conv(self.out, in_channels * t, relu6=True)
            _add_conv(self.out, in_channels * t, kernel=3, stride=stride, pad=1,
                      num_group=in_channels * t, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


def _widths(multiplier: float, base: list[int]) -> list[int]:
    return [int(x * multiplier) for x in base]


class MobileNet(HybridBlock):
    """MobileNet: a 3x3/2 convolution then 13 depthwise-separable layers, global pooling and
    a ``classes``-way dense output; channels scale with ``multiplier`` (>= 0.25).

    Example: ``MobileNet(0.5, classes=10)``.
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dw_channels = _widths(multiplier, [32, 64] + [128] * 2 + [256] * 2 + [512] * 6
                              + [1024])
        channels = _widths(multiplier, [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2)
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1,
                          stride=2)
                for dwc, c, s in zip(dw_channels, channels, strides):
                    _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2: a 3x3/2 convolution, 17 linear bottlenecks, a 1x1 convolution to 1280
    channels (more for ``multiplier`` > 1), global pooling, and a 1x1 convolution without
    bias to ``classes`` (``output_pred_weight``) then flatten.

    Example: ``MobileNetV2(0.25, classes=10)``.
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        in_group = _widths(multiplier, [32] + [16] + [24] * 2 + [32] * 3 + [64] * 4
                           + [96] * 3 + [160] * 3)
        out_group = _widths(multiplier, [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3
                            + [160] * 3 + [320])
        ts = [1] + [6] * 16
        strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1,
                          relu6=True)
                for in_c, c, t, s in zip(in_group, out_group, ts, strides):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t,
                                                       stride=s))
                last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"),
                                nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def _suffix(multiplier: float) -> str:
    """MXNet's file-name spelling of a multiplier: 1.0, 0.75, 0.5, 0.25."""
    text = f"{multiplier:.2f}"
    return text[:-1] if text in ("1.00", "0.50") else text


def get_mobilenet(multiplier: float, pretrained: bool = False, ctx: Context = cpu(),
                  root: str = DEFAULT_ROOT, **kwargs: Any) -> MobileNet:
    """MobileNet of width ``multiplier``; ``pretrained`` loads MXNet's published
    ``mobilenet<multiplier>`` file from ``root``.

    Example: ``get_mobilenet(0.75, classes=10)``.
    """
    net = MobileNet(multiplier, **kwargs)
    return load_pretrained(net, f"mobilenet{_suffix(multiplier)}", root, ctx) \
        if pretrained else net


def get_mobilenet_v2(multiplier: float, pretrained: bool = False, ctx: Context = cpu(),
                     root: str = DEFAULT_ROOT, **kwargs: Any) -> MobileNetV2:
    """MobileNetV2 of width ``multiplier``; ``pretrained`` loads MXNet's published
    ``mobilenetv2_<multiplier>`` file from ``root``.

    Example: ``get_mobilenet_v2(0.5, classes=10)``.
    """
    net = MobileNetV2(multiplier, **kwargs)
    return load_pretrained(net, f"mobilenetv2_{_suffix(multiplier)}", root, ctx) \
        if pretrained else net


mobilenet1_0 = variant("mobilenet1_0", get_mobilenet, 1.0, doc="MobileNet, width 1.0")
mobilenet0_75 = variant("mobilenet0_75", get_mobilenet, 0.75, doc="MobileNet, width 0.75")
mobilenet0_5 = variant("mobilenet0_5", get_mobilenet, 0.5, doc="MobileNet, width 0.5")
mobilenet0_25 = variant("mobilenet0_25", get_mobilenet, 0.25, doc="MobileNet, width 0.25")
mobilenet_v2_1_0 = variant("mobilenet_v2_1_0", get_mobilenet_v2, 1.0,
                           doc="MobileNetV2, width 1.0")
mobilenet_v2_0_75 = variant("mobilenet_v2_0_75", get_mobilenet_v2, 0.75,
                            doc="MobileNetV2, width 0.75")
mobilenet_v2_0_5 = variant("mobilenet_v2_0_5", get_mobilenet_v2, 0.5,
                           doc="MobileNetV2, width 0.5")
mobilenet_v2_0_25 = variant("mobilenet_v2_0_25", get_mobilenet_v2, 0.25,
                            doc="MobileNetV2, width 0.25")
