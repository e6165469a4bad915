"""AlexNet ("One weird trick...", arXiv:1404.5997) with MXNet 1.9.1's layers and names.

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.alexnet(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 224, 224))).shape       # doctest: +SKIP
    (1, 10)
"""
from __future__ import annotations

from typing import Any

from ....core.context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """Five convolutions (ReLU), three max poolings, two 4096-unit dense layers with dropout
    and the ``classes``-way output; inputs of at least 63x63 (224x224 for the published
    weights, whose first dense layer reads 256x6x6 features).

    Example: ``AlexNet(classes=10)``.
    """

    def __init__(self, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(
                    nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(384, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Flatten(),
                    nn.Dense(4096, activation="relu"), nn.Dropout(0.5),
                    nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


def alexnet(pretrained: bool = False, ctx: Context = cpu(), root: str = DEFAULT_ROOT,
            **kwargs: Any) -> AlexNet:
    """AlexNet; ``pretrained`` loads MXNet's published ``alexnet`` file from ``root`` onto
    ``ctx``; other keywords go to :class:`AlexNet`.

    Example: ``alexnet(pretrained=True, root='/data/models')``.
    """
    net = AlexNet(**kwargs)
    return load_pretrained(net, "alexnet", root, ctx) if pretrained else net
