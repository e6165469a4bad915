"""ResNet V1 (He et al. 2015, arXiv:1512.03385) and V2 (pre-activation, arXiv:1603.05027)
with MXNet 1.9.1's block structure, so parameter names, shapes and files match MXNet's.

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.resnet18_v1(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 32, 32))).shape        # doctest: +SKIP
    (1, 10)
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ....core.base import AttrError
from ....core.context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained
from ._variant import variant

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1",
           "BottleneckV2", "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1",
           "resnet152_v1", "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2",
           "resnet152_v2", "get_resnet"]


def _conv3x3(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _projection_v1(channels: int, stride: int, in_channels: int) -> nn.HybridSequential:
    """The 1x1 convolution and batch norm that match a V1 shortcut to the block's output."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                      in_channels=in_channels))
    out.add(nn.BatchNorm())
    return out


class _ResidualV1(HybridBlock):
    """``relu(body(x) + shortcut(x))``; the shortcut is ``downsample`` or the identity."""

    body: nn.HybridSequential
    downsample: Optional[HybridBlock]

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        residual = x if self.downsample is None else self.downsample(x)
        return F.Activation(self.body(x) + residual, act_type="relu")


class BasicBlockV1(_ResidualV1):
    """Two 3x3 convolutions with batch norm (ResNet V1 18 and 34).

    Example: ``BasicBlockV1(64, 1)`` keeps 64 channels; ``BasicBlockV1(128, 2, True, 64)``
    halves the resolution and projects the shortcut.
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(),
                      nn.Activation("relu"), _conv3x3(channels, 1, channels), nn.BatchNorm())
        self.downsample = _projection_v1(channels, stride, in_channels) if downsample else None


class BottleneckV1(_ResidualV1):
    """1x1 reduce, 3x3, 1x1 expand to ``channels`` (ResNet V1 50, 101, 152); as MXNet, the
    strided first 1x1 convolution has a bias and the others do not.

    Example: ``BottleneckV1(256, 1, True, 64)``.
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride), nn.BatchNorm(),
                      nn.Activation("relu"), _conv3x3(channels // 4, 1, channels // 4),
                      nn.BatchNorm(), nn.Activation("relu"),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = _projection_v1(channels, stride, in_channels) if downsample else None


class _ResidualV2(HybridBlock):
    """Pre-activation: each (bn, conv) pair computes ``conv(relu(bn(x)))``; the shortcut
    projection reads the first activation."""

    _pairs: tuple = ()
    downsample: Optional[HybridBlock]

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        residual = x
        for i, (bn, conv) in enumerate(self._pairs):
            x = F.Activation(bn(x), act_type="relu")
            if i == 0 and self.downsample is not None:
                residual = self.downsample(x)
            x = conv(x)
        return x + residual


def _projection_v2(channels: int, stride: int, in_channels: int,
                   downsample: bool) -> Optional[nn.Conv2D]:
    return nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels) \
        if downsample else None


class BasicBlockV2(_ResidualV2):
    """Pre-activation basic block (ResNet V2 18 and 34).

    Example: ``BasicBlockV2(128, 2, True, 64)``.
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = _projection_v2(channels, stride, in_channels, downsample)
        self._pairs = ((self.bn1, self.conv1), (self.bn2, self.conv2))


class BottleneckV2(_ResidualV2):
    """Pre-activation bottleneck (ResNet V2 50, 101, 152); the 3x3 convolution strides.

    Example: ``BottleneckV2(256, 1, True, 64)``.
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = _projection_v2(channels, stride, in_channels, downsample)
        self._pairs = ((self.bn1, self.conv1), (self.bn2, self.conv2), (self.bn3, self.conv3))


def _make_stage(block: type, layers: int, channels: int, stride: int, stage_index: int,
                in_channels: int) -> nn.HybridSequential:
    """``layers`` blocks named ``stage<i>_``; the first one strides and may project."""
    stage = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=""))
        for _ in range(layers - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


def _check_spec(layers: Sequence[int], channels: Sequence[int]) -> None:
    if len(layers) != len(channels) - 1:
        raise AttrError(f"ResNet: channels must have one entry more than layers, got "
                        f"layers={list(layers)} and channels={list(channels)}")


def _stem(features: nn.HybridSequential, channels: int, thumbnail: bool) -> None:
    """A 3x3 convolution for small images (``thumbnail``), else 7x7/2 conv, bn, relu and
    3x3/2 max pooling."""
    if thumbnail:
        features.add(_conv3x3(channels, 1, 0))
    else:
        features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False), nn.BatchNorm(),
                     nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))


class _ResNet(HybridBlock):
    features: nn.HybridSequential
    output: nn.Dense

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


class ResNetV1(_ResNet):
    """ResNet V1: ``block`` is BasicBlockV1 or BottleneckV1, ``layers`` the blocks per stage,
    ``channels`` the stem's channels then each stage's.

    Example: ``ResNetV1(BasicBlockV1, [2, 2, 2, 2], [64, 64, 128, 256, 512])`` is ResNet-18.
    """

    def __init__(self, block: type, layers: Sequence[int], channels: Sequence[int],
                 classes: int = 1000, thumbnail: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            _stem(self.features, channels[0], thumbnail)
            for i, num_layer in enumerate(layers):
                self.features.add(_make_stage(block, num_layer, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])


class ResNetV2(_ResNet):
    """ResNet V2 (pre-activation); the input first passes a batch norm without scale and
    shift, the features end with bn, relu, global pooling and flatten.

    Example: ``ResNetV2(BasicBlockV2, [2, 2, 2, 2], [64, 64, 128, 256, 512])``.
    """

    def __init__(self, block: type, layers: Sequence[int], channels: Sequence[int],
                 classes: int = 1000, thumbnail: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            _stem(self.features, channels[0], thumbnail)
            in_channels = channels[0]
            for i, num_layer in enumerate(layers):
                self.features.add(_make_stage(block, num_layer, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(),
                              nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)


# depth: (block kind, blocks per stage, channels of the stem and of each stage)
RESNET_SPEC: dict[int, tuple[str, list[int], list[int]]] = {
    18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
    34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
    50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
    101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
    152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}

_VERSIONS: dict[int, tuple[type, dict[str, type]]] = {
    1: (ResNetV1, {"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1}),
    2: (ResNetV2, {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2})}


def get_resnet(version: int, num_layers: int, pretrained: bool = False,
               ctx: Context = cpu(), root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    """ResNet ``version`` (1 or 2) of depth ``num_layers`` (18, 34, 50, 101, 152);
    ``pretrained`` loads MXNet's published ``resnet<depth>_v<version>`` file from ``root``.

    Example: ``get_resnet(2, 50, classes=10)``.
    """
    if num_layers not in RESNET_SPEC:
        raise AttrError(f"Invalid number of layers: {num_layers}. Options are "
                        f"{sorted(RESNET_SPEC)}")
    if version not in _VERSIONS:
        raise AttrError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    kind, layers, channels = RESNET_SPEC[num_layers]
    net_class, blocks = _VERSIONS[version]
    net = net_class(blocks[kind], layers, channels, **kwargs)
    if pretrained:
        load_pretrained(net, f"resnet{num_layers}_v{version}", root, ctx)
    return net


resnet18_v1 = variant("resnet18_v1", get_resnet, 1, 18, doc="ResNet-18 V1")
resnet34_v1 = variant("resnet34_v1", get_resnet, 1, 34, doc="ResNet-34 V1")
resnet50_v1 = variant("resnet50_v1", get_resnet, 1, 50, doc="ResNet-50 V1")
resnet101_v1 = variant("resnet101_v1", get_resnet, 1, 101, doc="ResNet-101 V1")
resnet152_v1 = variant("resnet152_v1", get_resnet, 1, 152, doc="ResNet-152 V1")
resnet18_v2 = variant("resnet18_v2", get_resnet, 2, 18, doc="ResNet-18 V2")
resnet34_v2 = variant("resnet34_v2", get_resnet, 2, 34, doc="ResNet-34 V2")
resnet50_v2 = variant("resnet50_v2", get_resnet, 2, 50, doc="ResNet-50 V2")
resnet101_v2 = variant("resnet101_v2", get_resnet, 2, 101, doc="ResNet-101 V2")
resnet152_v2 = variant("resnet152_v2", get_resnet, 2, 152, doc="ResNet-152 V2")
