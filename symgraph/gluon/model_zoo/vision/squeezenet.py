"""SqueezeNet 1.0 (arXiv:1602.07360) and 1.1 (DeepScale's repository) as MXNet 1.9.1 builds
them. The classifier ends in a 13x13 average pooling, so inputs are 224x224 or larger.

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.squeezenet1_1(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 224, 224))).shape       # doctest: +SKIP
    (1, 10)
"""
from __future__ import annotations

from typing import Any

from ....core.base import AttrError
from ....core.context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ..model_store import DEFAULT_ROOT, load_pretrained
from ._variant import variant

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _fire_conv(channels: int, kernel_size: int, padding: int = 0) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return out


def _fire(squeeze: int, expand1x1: int, expand3x3: int) -> nn.HybridSequential:
    """A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated on channels."""
    out = nn.HybridSequential(prefix="")
    out.add(_fire_conv(squeeze, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_fire_conv(expand1x1, 1), _fire_conv(expand3x3, 3, 1))
    out.add(paths)
    return out


def _pool() -> nn.MaxPool2D:
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


# version: (first convolution's channels and kernel, then the layers after the first pooling:
# an int tuple is a fire module's (squeeze, expand 1x1, expand 3x3), None a pooling)
_LAYOUT: dict[str, tuple[tuple[int, int], list]] = {
    "1.0": ((96, 7), [(16, 64, 64), (16, 64, 64), (32, 128, 128), None, (32, 128, 128),
                      (48, 192, 192), (48, 192, 192), (64, 256, 256), None, (64, 256, 256)]),
    "1.1": ((64, 3), [(16, 64, 64), (16, 64, 64), None, (32, 128, 128), (32, 128, 128), None,
                      (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256)])}


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` '1.0' or '1.1'; the output is a 1x1 convolution to ``classes``
    channels, relu, 13x13 average pooling and flatten.

    Example: ``SqueezeNet('1.1', classes=10)``.
    """

    def __init__(self, version: str, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if version not in _LAYOUT:
            raise AttrError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
        (channels, kernel), layers = _LAYOUT[version]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(channels, kernel_size=kernel, strides=2),
                              nn.Activation("relu"), _pool())
            for layer in layers:
                self.features.add(_pool() if layer is None else _fire(*layer))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"),
                            nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def get_squeezenet(version: str, pretrained: bool = False, ctx: Context = cpu(),
                   root: str = DEFAULT_ROOT, **kwargs: Any) -> SqueezeNet:
    """SqueezeNet ``version``; ``pretrained`` loads MXNet's ``squeezenet<version>`` file.

    Example: ``get_squeezenet('1.0', classes=10)``.
    """
    net = SqueezeNet(version, **kwargs)
    return load_pretrained(net, f"squeezenet{version}", root, ctx) if pretrained else net


squeezenet1_0 = variant("squeezenet1_0", get_squeezenet, "1.0", doc="SqueezeNet 1.0")
squeezenet1_1 = variant("squeezenet1_1", get_squeezenet, "1.1",
                        doc="SqueezeNet 1.1 (2.4x less computation than 1.0)")
