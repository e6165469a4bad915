"""``gluon.data.vision``: CIFAR-10/100 (MXNet's binary batches), ``ImageFolderDataset`` and
``ImageRecordDataset``.

CIFAR files missing from ``root`` are downloaded (MXNet's archive, checked by SHA-1 while it
streams) when a network is there; otherwise a DataError names the folder and the files.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from .....runtime import ndarray as nd
from .....core.base import DataError
from ....download import download
from ...dataset import Dataset
from ...record_dataset import RecordFileDataset
from .mnist import default_root

REPO = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/dataset/"
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")


class CIFAR10(Dataset):
    """Sample ``i``: ``(image uint8 NDArray (32, 32, 3), label int32)``; ``transform`` is
    applied as ``transform(image, label)``. ``root`` holds ``cifar-10-batches-bin/``.

    Examples
    --------
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()  # a folder with one test image in the binary format
    >>> os.makedirs(os.path.join(root, 'cifar-10-batches-bin'))
    >>> with open(os.path.join(root, 'cifar-10-batches-bin', 'test_batch.bin'), 'wb') as f:
    ...     _ = f.write(bytes([3]) + bytes(3 * 32 * 32))  # label byte(s), then C, H, W
    >>> image, label = sg.gluon.data.vision.CIFAR10(root, train=False)[0]
    >>> image.shape, int(label)  # images come out (H, W, C)
    ((32, 32, 3), 3)
    """

    _archive = ("cifar-10-binary.tar.gz", "fab780a1e191a7eda0f345501ccd62d20f7ed891")
    _folder = "cifar-10-batches-bin"
    _train_files = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
    _test_files = ("test_batch.bin",)
    _namespace = "cifar10"
    _label_bytes = 1

    def __init__(self, root: Optional[str] = None, train: bool = True,
                 transform: Optional[Callable] = None) -> None:
        self._root = Path(os.path.expanduser(root)) if root is not None else \
            default_root(self._namespace)
        self._train, self._transform = train, transform
        files = [self._root / self._folder / f for f in
                 (self._train_files if train else self._test_files)]
        self._fetch_missing(files)
        data, label = zip(*(self._read_batch(f) for f in files))
        self._data, self._label = np.concatenate(data), np.concatenate(label)

    def _fetch_missing(self, files: list) -> None:
        import tarfile  # (only when files are missing: not at every import of symgraph)
        missing = [f.name for f in files if not f.is_file()]
        if not missing:
            return
        try:
            archive = download(REPO + self._namespace + "/" + self._archive[0],
                               path=str(self._root), sha1_hash=self._archive[1], retries=1)
            with tarfile.open(archive) as tar:
                tar.extractall(self._root, filter="data")
        except Exception as exc:  # no network, or a bad archive: say what is missing where
            raise DataError(f"{type(self).__name__}: folder {self._root / self._folder} lacks "
                            f"{', '.join(missing)} and the download failed ({exc}); put "
                            f"MXNet's CIFAR binary files there or pass root=...") from None

    def _label_of(self, rows: np.ndarray) -> np.ndarray:
        return rows[:, 0]

    def _read_batch(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        raw = np.fromfile(path, dtype=np.uint8)
        width = self._label_bytes + 3072
        if raw.size % width:
            raise DataError(f"{type(self).__name__}: {path} has {raw.size} bytes, not a "
                            f"multiple of the {width}-byte record")
        rows = raw.reshape(-1, width)
        images = rows[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return np.ascontiguousarray(images), self._label_of(rows).astype(np.int32)

    def __getitem__(self, idx: int) -> Any:
        image = nd.array(self._data[idx], dtype=np.uint8)
        if self._transform is not None:
            return self._transform(image, self._label[idx])
        return image, self._label[idx]

    def __len__(self) -> int:
        return len(self._label)


class CIFAR100(CIFAR10):
    """CIFAR-100: labels are the 20 coarse classes, or the 100 fine ones with
    ``fine_label=True``. ``root`` holds ``cifar-100-binary/``.

    Examples
    --------
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()  # a folder with one test image in the binary format
    >>> os.makedirs(os.path.join(root, 'cifar-100-binary'))
    >>> with open(os.path.join(root, 'cifar-100-binary', 'test.bin'), 'wb') as f:
    ...     _ = f.write(bytes([3, 42]) + bytes(3 * 32 * 32))  # label byte(s), then C, H, W
    >>> image, label = sg.gluon.data.vision.CIFAR100(root, train=False, fine_label=True)[0]
    >>> image.shape, int(label)  # images come out (H, W, C)
    ((32, 32, 3), 42)
    """

    _archive = ("cifar-100-binary.tar.gz", "a0bb982c76b83111308126cc779a992fa506b90b")
    _folder = "cifar-100-binary"
    _train_files = ("train.bin",)
    _test_files = ("test.bin",)
    _namespace = "cifar100"
    _label_bytes = 2

    def __init__(self, root: Optional[str] = None, fine_label: bool = False,
                 train: bool = True, transform: Optional[Callable] = None) -> None:
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_of(self, rows: np.ndarray) -> np.ndarray:
        return rows[:, 1 if self._fine_label else 0]


class ImageRecordDataset(RecordFileDataset):
    """Sample ``i``: ``(decoded image (H, W, C) uint8, label)`` of an image RecordIO file;
    ``flag`` 0 decodes grey, 1 colour.

    Examples
    --------
    >>> import io, os, tempfile
    >>> from PIL import Image
    >>> png = io.BytesIO()
    >>> Image.new('RGB', (4, 2)).save(png, format='PNG')
    >>> path = os.path.join(tempfile.mkdtemp(), 'images')
    >>> rec = sg.recordio.MXIndexedRecordIO(path + '.idx', path + '.rec', 'w')
    >>> rec.write_idx(0, sg.recordio.pack(sg.recordio.IRHeader(0, 5.0, 0, 0), png.getvalue()))
    >>> rec.close()
    >>> image, label = sg.gluon.data.vision.ImageRecordDataset(path + '.rec')[0]
    >>> image.shape, label
    ((2, 4, 3), 5.0)
    """

    def __init__(self, filename: str, flag: int = 1,
                 transform: Optional[Callable] = None) -> None:
        super().__init__(filename)
        self._flag, self._transform = flag, transform

    def __getitem__(self, idx: int) -> Any:
        from .....training import image, recordio
        header, img = recordio.unpack(super().__getitem__(idx))
        decoded = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(decoded, header.label)
        return decoded, header.label


class ImageFolderDataset(Dataset):
    """Images in ``root/<class name>/<file>``: sample ``i`` is ``(image, label)`` with labels
    numbered by sorted class folder (``synsets``); ``flag`` 0 decodes grey, 1 colour.

    Examples
    --------
    >>> import os, tempfile
    >>> from PIL import Image
    >>> root = tempfile.mkdtemp()
    >>> for cls in ('cat', 'dog'):
    ...     os.makedirs(os.path.join(root, cls))
    ...     Image.new('RGB', (4, 2)).save(os.path.join(root, cls, 'a.png'))
    >>> ds = sg.gluon.data.vision.ImageFolderDataset(root)
    >>> ds.synsets, len(ds)
    (['cat', 'dog'], 2)
    >>> image, label = ds[1]
    >>> image.shape, label  # (H, W, C); labels number the sorted class folders
    ((2, 4, 3), 1.0)
    """

    def __init__(self, root: str, flag: int = 1, transform: Optional[Callable] = None) -> None:
        self._root = os.path.expanduser(root)
        if not os.path.isdir(self._root):
            raise DataError(f"ImageFolderDataset: {self._root} is not a folder")
        self._flag, self._transform = flag, transform
        self.synsets: list[str] = []
        self.items: list[tuple[str, float]] = []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                continue  # (a stray file beside the class folders)
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                if os.path.splitext(name)[1].lower() in IMAGE_EXTENSIONS:
                    self.items.append((os.path.join(path, name), float(label)))

    def __getitem__(self, idx: int) -> Any:
        from .....training import image
        img = image.imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self) -> int:
        return len(self.items)
