"""Inception v3 (arXiv:1512.00567) as MXNet 1.9.1 builds it: 299x299 inputs, modules A-E
named ``A1_`` ... ``E2_``, batch norms with epsilon 0.001.

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.inception_v3(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 299, 299))).shape       # doctest: +SKIP
    (1, 10)
"""
from __future__ import annotations

from typing import Any, Optional

from ....core.context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ..model_store import DEFAULT_ROOT, load_pretrained

__all__ = ["Inception3", "inception_v3"]

# A convolution setting: (channels, kernel_size, strides, padding); None keeps the default.
Setting = tuple


def _basic_conv(**kwargs: Any) -> nn.HybridSequential:
    """Convolution without bias, batch norm (epsilon 0.001), relu."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(use_bias=False, **kwargs), nn.BatchNorm(epsilon=0.001),
            nn.Activation("relu"))
    return out


def _branch(pool: Optional[str], *settings: Setting) -> nn.HybridSequential:
    """An optional pooling ('avg': 3x3/1 padded, 'max': 3x3/2) then basic convolutions."""
    out = nn.HybridSequential(prefix="")
    if pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    names = ("channels", "kernel_size", "strides", "padding")
    for setting in settings:
        out.add(_basic_conv(**{k: v for k, v in zip(names, setting) if v is not None}))
    return out


def _module(prefix: str, *branches: tuple) -> HybridConcurrent:
    """Branches ``(pool, *settings)`` side by side, concatenated on channels."""
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for pool, *settings in branches:
            out.add(_branch(pool, *settings))
    return out


def _make_a(pool_features: int, prefix: str) -> HybridConcurrent:
    return _module(prefix, (None, (64, 1, None, None)),
                   (None, (48, 1, None, None), (64, 5, None, 2)),
                   (None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
                   ("avg", (pool_features, 1, None, None)))


def _make_b(prefix: str) -> HybridConcurrent:
    return _module(prefix, (None, (384, 3, 2, None)),
                   (None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
                   ("max",))


def _make_c(c7: int, prefix: str) -> HybridConcurrent:
    return _module(prefix, (None, (192, 1, None, None)),
                   (None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                    (192, (7, 1), None, (3, 0))),
                   (None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                    (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                    (192, (1, 7), None, (0, 3))),
                   ("avg", (192, 1, None, None)))


def _make_d(prefix: str) -> HybridConcurrent:
    return _module(prefix, (None, (192, 1, None, None), (320, 3, 2, None)),
                   (None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                    (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
                   ("max",))


def _split_branch(*settings: Setting) -> nn.HybridSequential:
    """``settings`` in sequence, then 1x3 and 3x1 convolutions of 384 side by side."""
    out = nn.HybridSequential(prefix="")
    out.add(_branch(None, *settings))
    split = HybridConcurrent(axis=1, prefix="")
    split.add(_branch(None, (384, (1, 3), None, (0, 1))),
              _branch(None, (384, (3, 1), None, (1, 0))))
    out.add(split)
    return out


def _make_e(prefix: str) -> HybridConcurrent:
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (320, 1, None, None)))
        out.add(_split_branch((384, 1, None, None)))
        out.add(_split_branch((448, 1, None, None), (384, 3, None, 1)))
        out.add(_branch("avg", (192, 1, None, None)))
    return out


def make_aux(classes: int) -> nn.HybridSequential:
    """The auxiliary classifier of the paper (MXNet defines it; Inception3 does not use it).

    Example: ``make_aux(1000)``.
    """
    out = nn.HybridSequential(prefix="")
    out.add(nn.AvgPool2D(pool_size=5, strides=3), _basic_conv(channels=128, kernel_size=1),
            _basic_conv(channels=768, kernel_size=5), nn.Flatten(), nn.Dense(classes))
    return out


class Inception3(HybridBlock):
    """Inception v3: stem convolutions, modules A1-A3, B, C1-C4, D, E1-E2, 8x8 average
    pooling, dropout and a ``classes``-way dense output.

    Example: ``Inception3(classes=10)``.
    """

    def __init__(self, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_basic_conv(channels=32, kernel_size=3, strides=2),
                              _basic_conv(channels=32, kernel_size=3),
                              _basic_conv(channels=64, kernel_size=3, padding=1),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _basic_conv(channels=80, kernel_size=1),
                              _basic_conv(channels=192, kernel_size=3),
                              nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_make_a(32, "A1_"), _make_a(64, "A2_"), _make_a(64, "A3_"),
                              _make_b("B_"))
            self.features.add(_make_c(128, "C1_"), _make_c(160, "C2_"), _make_c(160, "C3_"),
                              _make_c(192, "C4_"), _make_d("D_"), _make_e("E1_"),
                              _make_e("E2_"))
            self.features.add(nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def inception_v3(pretrained: bool = False, ctx: Context = cpu(), root: str = DEFAULT_ROOT,
                 **kwargs: Any) -> Inception3:
    """Inception v3; ``pretrained`` loads MXNet's published ``inceptionv3`` file from
    ``root`` onto ``ctx``; other keywords go to :class:`Inception3`.

    Example: ``inception_v3(classes=10)``.
    """
    net = Inception3(**kwargs)
    return load_pretrained(net, "inceptionv3", root, ctx) if pretrained else net
