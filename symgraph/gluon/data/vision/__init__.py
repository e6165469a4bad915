"""``gluon.data.vision``: image datasets and transforms."""
from __future__ import annotations

from . import datasets, transforms
from .datasets import (CIFAR10, CIFAR100, MNIST, FashionMNIST,  # noqa: F401
                       ImageFolderDataset, ImageRecordDataset)

__all__ = ["datasets", "transforms", "MNIST", "FashionMNIST", "CIFAR10", "CIFAR100",
           "ImageFolderDataset", "ImageRecordDataset"]
