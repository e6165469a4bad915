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

from .....core import config
from .....runtime import ndarray as nd
from .....core.base import DataError
from .....training.datasets import mnist as _mnist
from ...dataset import Dataset

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


def _missing(root: Path, split: str) -> list[str]:
    stems = [_mnist.FILES[f"{split}_images"], _mnist.FILES[f"{split}_labels"]]
    return [s for s in stems if not any((root / n).is_file() for n in (s + ".gz", s))]


def check_files(root: Path, split: str, namespace: str = "mnist", can_download: bool = True,
                who: str = "MNIST", param: str = "root") -> None:
    """Make sure ``root`` holds the IDX files of ``split``: download what is missing (MNIST
    only), else a DataError naming ``who``, the folder, the files and the parameter
    ``param`` of ``who`` that picks the folder (``get_mnist`` calls it ``path``)."""
    missing = _missing(root, split)
    if not missing:
        return
    why = "download them by hand"
    if can_download:
        try:
            _mnist.download(root, opener=_opener)
            return
        except (urllib.error.URLError, OSError) as exc:
            why = f"the download failed: {exc}"
    names = ", ".join(f"{s}[.gz]" for s in missing)
    raise DataError(f"{who}: folder {root} lacks {names} ({why}); put the IDX files there or "
                    f"pass {param}=... (default: $SYMGRAPH_DATA, else "
                    f"~/.symgraph/datasets/{namespace})")


class MNIST(Dataset):
    """Sample ``i``: ``(image uint8 NDArray (28, 28, 1), label int32)``; ``transform``
    is applied as ``transform(image, label)``.

    Examples
    --------
    >>> import os, struct, tempfile
    >>> root = tempfile.mkdtemp()  # stands for the MNIST folder (or download)
    >>> def idx(name, magic, dims, values):  # an IDX file: magic, sizes, then the bytes
    ...     with open(os.path.join(root, name), 'wb') as f:
    ...         f.write(struct.pack('>' + 'I' * (1 + len(dims)), magic, *dims) + bytes(values))
    >>> idx('t10k-images-idx3-ubyte', 2051, (1, 28, 28), [255] * 784)
    >>> idx('t10k-labels-idx1-ubyte', 2049, (1,), [7])
    >>> image, label = sg.gluon.data.vision.MNIST(root, train=False)[0]
    >>> image.shape, int(label)
    ((28, 28, 1), 7)
    """

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

    def _load(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        check_files(self._root, split, self._namespace, self._can_download, type(self).__name__)
        return _mnist.load(self._root, split)

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
    files only: there is no checksummed mirror to download from.

    Examples
    --------
    >>> import os, struct, tempfile
    >>> root = tempfile.mkdtemp()  # stands for the Fashion-MNIST folder
    >>> def idx(name, magic, dims, values):  # an IDX file: magic, sizes, then the bytes
    ...     with open(os.path.join(root, name), 'wb') as f:
    ...         f.write(struct.pack('>' + 'I' * (1 + len(dims)), magic, *dims) + bytes(values))
    >>> idx('t10k-images-idx3-ubyte', 2051, (1, 28, 28), [255] * 784)
    >>> idx('t10k-labels-idx1-ubyte', 2049, (1,), [7])
    >>> image, label = sg.gluon.data.vision.FashionMNIST(root, train=False)[0]
    >>> image.shape, int(label)
    ((28, 28, 1), 7)
    """

    _namespace = "fashion-mnist"
    _can_download = False
