"""``gluon.data.vision.datasets``: MNIST and Fashion-MNIST (``mnist.py``), CIFAR-10/100, image
folders and record files (``more.py``), as MXNet 1.x names them."""
from __future__ import annotations

from .mnist import MNIST, FashionMNIST, default_root  # noqa: F401
from .more import CIFAR10, CIFAR100, ImageFolderDataset, ImageRecordDataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageFolderDataset",
           "ImageRecordDataset"]
