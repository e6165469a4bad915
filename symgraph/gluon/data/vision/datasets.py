"""``gluon.data.vision.datasets``: MNIST and FashionMNIST from local IDX files.

``root`` defaults to ``$SYMGRAPH_DATA`` (the MNIST folder; FashionMNIST looks in its
``fashion-mnist`` subfolder), else ``~/.symgraph/datasets/mnist`` (``.../fashion-mnist``).
Missing MNIST files are downloaded (``sg.datasets.mnist.download``: checked by SHA-256) when a
network is there; otherwise a DataError names the folder and the files.
"""
from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from .... import config
from .... import ndarray as nd
from ....base import DataError
from ....datasets import mnist as _mnist
from ..dataset import Dataset

DOWNLOAD_TIMEOUT = 30.0  # seconds per request: no network should fail fast, not hang


def _opener(url: str) -> Any:
    return urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT)


def default_root(namespace: str) -> Path:
    """``$SYMGRAPH_DATA`` (a subfolder for data sets other than MNIST), else the user data
    folder ``~/.symgraph/datasets/<namespace>``."""
    env = config.get("SYMGRAPH_DATA")
    if env:
        return Path(env) if namespace == "mnist" else Path(env) / namespace
    return Path.home() / ".symgraph" / "datasets" / namespace


class MNIST(Dataset):
    """Sample ``i``: ``(image uint8 NDArray (28, 28, 1), label int32)``; ``transform``
    is applied as ``transform(image, label)``."""

    _namespace = "mnist"
    _can_download = True

    def __init__(self, root: Optional[str] = None, train: bool = True,
                 transform: Optional[Callable] = None) -> None:
        self._root = Path(os.path.expanduser(str(root))) if root is not None else \
            default_root(self._namespace)
        self._train, self._transform = train, transform
        split = "train" if train else "test"
        images, labels = self._load(split)
        self._data = images.reshape(len(images), 28, 28, 1)
        self._label = labels.astype(np.int32)

    def _stems(self, split: str) -> list[str]:
        return [_mnist.FILES[f"{split}_images"], _mnist.FILES[f"{split}_labels"]]

    def _missing(self, split: str) -> list[str]:
        return [s for s in self._stems(split)
                if not any((self._root / n).is_file() for n in (s + ".gz", s))]

    def _load(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        missing = self._missing(split)
        if missing and self._can_download:
            self._download(missing)
        elif missing:
            raise DataError(self._missing_message(missing, "download them by hand"))
        return _mnist.load(self._root, split)

    def _missing_message(self, missing: list[str], why: str) -> str:
        names = ", ".join(f"{s}[.gz]" for s in missing)
        return (f"{type(self).__name__}: folder {self._root} lacks {names} ({why}); put the "
                f"IDX files there or pass root=... (default: $SYMGRAPH_DATA, else "
                f"~/.symgraph/datasets/{self._namespace})")

    def _download(self, missing: list[str]) -> None:
        try:
            _mnist.download(self._root, opener=_opener)
        except (urllib.error.URLError, OSError) as exc:
            raise DataError(self._missing_message(
                missing, f"the download failed: {exc}")) from None

    def __getitem__(self, idx: int) -> Any:
        image = nd.array(self._data[idx], dtype=np.uint8)
        label = self._label[idx]
        if self._transform is not None:
            return self._transform(image, label)
        return image, label

    def __len__(self) -> int:
        return len(self._label)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST, the same IDX layout and file names as MNIST. Read from local
    files only: there is no checksummed mirror to download from."""

    _namespace = "fashion-mnist"
    _can_download = False
