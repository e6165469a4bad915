"""``gluon.data.vision``: image datasets and transforms."""
from __future__ import annotations

from . import datasets, transforms
from .datasets import MNIST, FashionMNIST

__all__ = ["datasets", "transforms", "MNIST", "FashionMNIST"]
