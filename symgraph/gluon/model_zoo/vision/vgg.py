"""VGG 11/13/16/19 (arXiv:1409.1556), with and without batch norm, as MXNet 1.9.1 builds them
(its initializers too: Xavier gaussian ``out`` magnitude 2 for convolutions, normal for the
dense layers).

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.vgg11_bn(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 32, 32))).shape         # doctest: +SKIP
    (1, 10)
"""
from __future__ import annotations

from typing import Any, Sequence

from ....core.base import AttrError
from ....core.context import Context, cpu
from ....training.initializer import Xavier
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained
from ._variant import variant

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn", "get_vgg"]


def _make_features(layers: Sequence[int], filters: Sequence[int],
                   batch_norm: bool) -> nn.HybridSequential:
    """Per block: ``layers[i]`` 3x3 convolutions of ``filters[i]`` (bn), relu; 2x2 pooling."""
    features = nn.HybridSequential(prefix="")
    for num, width in zip(layers, filters):
        for _ in range(num):
            features.add(nn.Conv2D(width, kernel_size=3, padding=1,
                                   weight_initializer=Xavier(rnd_type="gaussian",
                                                             factor_type="out", magnitude=2),
                                   bias_initializer="zeros"))
            if batch_norm:
                features.add(nn.BatchNorm())
            features.add(nn.Activation("relu"))
        features.add(nn.MaxPool2D(strides=2))
    return features


class VGG(HybridBlock):
    """VGG: ``layers`` convolutions per block of ``filters`` channels, then two 4096-unit
    dense layers with dropout (inside ``features``, as MXNet) and the output layer.

    Example: ``VGG([1, 1, 2, 2, 2], [64, 128, 256, 512, 512], batch_norm=True)`` is VGG-11-bn.
    """

    def __init__(self, layers: Sequence[int], filters: Sequence[int], classes: int = 1000,
                 batch_norm: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise AttrError(f"VGG: layers and filters must have the same length, got "
                            f"{list(layers)} and {list(filters)}")
        with self.name_scope():
            self.features = _make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"),
                                  nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


# depth: (convolutions per block, channels per block)
VGG_SPEC: dict[int, tuple[list[int], list[int]]] = {
    11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
    13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
    16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
    19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers: int, pretrained: bool = False, ctx: Context = cpu(),
            root: str = DEFAULT_ROOT, **kwargs: Any) -> VGG:
    """VGG of depth ``num_layers`` (11, 13, 16, 19); ``batch_norm=True`` adds batch norm;
    ``pretrained`` loads MXNet's published ``vgg<depth>[_bn]`` file from ``root``.

    Example: ``get_vgg(16, batch_norm=True, classes=10)``.
    """
    if num_layers not in VGG_SPEC:
        raise AttrError(f"Invalid number of layers: {num_layers}. Options are "
                        f"{sorted(VGG_SPEC)}")
    layers, filters = VGG_SPEC[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        load_pretrained(net, f"vgg{num_layers}{suffix}", root, ctx)
    return net


vgg11 = variant("vgg11", get_vgg, 11, doc="VGG-11")
vgg13 = variant("vgg13", get_vgg, 13, doc="VGG-13")
vgg16 = variant("vgg16", get_vgg, 16, doc="VGG-16")
vgg19 = variant("vgg19", get_vgg, 19, doc="VGG-19")
vgg11_bn = variant("vgg11_bn", get_vgg, 11, doc="VGG-11 with batch norm", batch_norm=True)
vgg13_bn = variant("vgg13_bn", get_vgg, 13, doc="VGG-13 with batch norm", batch_norm=True)
vgg16_bn = variant("vgg16_bn", get_vgg, 16, doc="VGG-16 with batch norm", batch_norm=True)
vgg19_bn = variant("vgg19_bn", get_vgg, 19, doc="VGG-19 with batch norm", batch_norm=True)
