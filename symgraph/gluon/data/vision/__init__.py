"""``gluon.data.vision``: image datasets and transforms."""
from __future__ import annotations

from . import datasets, transforms
from .datasets import MNIST, FashionMNIST
from .datasets_extra import (CIFAR10, CIFAR100, ImageFolderDataset,  # noqa: F401
                             ImageRecordDataset)

__all__ = ["datasets", "transforms", "MNIST", "FashionMNIST", "CIFAR10", "CIFAR100",
           "ImageFolderDataset", "ImageRecordDataset"]
