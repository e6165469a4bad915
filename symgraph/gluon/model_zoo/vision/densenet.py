"""DenseNet-BC 121/161/169/201 (arXiv:1608.06993) as MXNet 1.9.1 builds them. The features
end in a 7x7 average pooling, so inputs are 224x224 (or larger).

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.densenet121(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 224, 224))).shape       # doctest: +SKIP
    (1, 10)
"""
from __future__ import annotations

from typing import Any, Sequence

from ....core.base import AttrError
from ....core.context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent, Identity
from ..model_store import DEFAULT_ROOT, load_pretrained
from ._variant import variant

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _bn_relu_conv(out: nn.HybridSequential, channels: int, **conv: Any) -> None:
    out.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(channels, use_bias=False, **conv))


def _dense_layer(growth_rate: int, bn_size: int, dropout: float) -> HybridConcurrent:
    """``[x, f(x)]`` on channels, ``f`` a 1x1 bottleneck then a 3x3 of ``growth_rate``."""
    new_features = nn.HybridSequential(prefix="")
    _bn_relu_conv(new_features, bn_size * growth_rate, kernel_size=1)
    _bn_relu_conv(new_features, growth_rate, kernel_size=3, padding=1)
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1, prefix="")
    out.add(Identity(), new_features)
    return out


def _dense_block(num_layers: int, bn_size: int, growth_rate: int, dropout: float,
                 stage_index: int) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_dense_layer(growth_rate, bn_size, dropout))
    return out


def _transition(channels: int) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    _bn_relu_conv(out, channels, kernel_size=1)
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet-BC: a 7x7/2 stem with ``num_init_features`` channels, dense blocks of
    ``block_config`` layers each adding ``growth_rate`` channels, transitions halving the
    channels and the resolution, and a ``classes``-way dense output.

    Example: ``DenseNet(64, 32, [6, 12, 24, 16])`` is DenseNet-121.
    """

    def __init__(self, num_init_features: int, growth_rate: int, block_config: Sequence[int],
                 bn_size: int = 4, dropout: float = 0, classes: int = 1000,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2,
                                        padding=3, use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"),
                              nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout,
                                               i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_transition(num_features))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7),
                              nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


# depth: (stem channels, growth rate, layers per dense block)
DENSENET_SPEC: dict[int, tuple[int, int, list[int]]] = {
    121: (64, 32, [6, 12, 24, 16]),
    161: (96, 48, [6, 12, 36, 24]),
    169: (64, 32, [6, 12, 32, 32]),
    201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers: int, pretrained: bool = False, ctx: Context = cpu(),
                 root: str = DEFAULT_ROOT, **kwargs: Any) -> DenseNet:
    """DenseNet-BC of depth ``num_layers`` (121, 161, 169, 201); ``pretrained`` loads MXNet's
    published ``densenet<depth>`` file from ``root``.

    Example: ``get_densenet(169, classes=10)``.
    """
    if num_layers not in DENSENET_SPEC:
        raise AttrError(f"Invalid number of layers: {num_layers}. Options are "
                        f"{sorted(DENSENET_SPEC)}")
    num_init_features, growth_rate, block_config = DENSENET_SPEC[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    return load_pretrained(net, f"densenet{num_layers}", root, ctx) if pretrained else net


densenet121 = variant("densenet121", get_densenet, 121, doc="DenseNet-BC-121")
densenet161 = variant("densenet161", get_densenet, 161, doc="DenseNet-BC-161")
densenet169 = variant("densenet169", get_densenet, 169, doc="DenseNet-BC-169")
densenet201 = variant("densenet201", get_densenet, 201, doc="DenseNet-BC-201")
