"""``sg.datasets.mnist``: read MNIST IDX files (gzip or raw) and, opt-in, download them.

Files are looked up in a folder given by argument or by the ``SYMGRAPH_DATA`` environment
variable, under their usual names (``train-images-idx3-ubyte[.gz]``...). A download is checked
while it streams: its size, the size of its inflated content (bounded: a gzip bomb stops early)
and the SHA-256 of that content (the content is canonical, gzip bytes differ between mirrors);
it is written through ``fileio.atomic_write`` (temporary file, rename), so an interrupted,
oversized or corrupt download never leaves a file behind.
"""
from __future__ import annotations

import gzip
import hashlib
import math
import os
import urllib.request
import zlib
from pathlib import Path
from typing import IO, Any, Callable, Optional, Union

import numpy as np

from ...core import config
from ...core.base import DataError
from ...core.fileio import atomic_write as write_file

__all__ = ["load", "load_data", "download", "data_dir", "read_idx", "parse_idx"]


FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}

# SHA-256 of the decompressed IDX content of the canonical MNIST files.
SHA256 = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}

DEFAULT_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"

# IDX magic numbers: 0x00000801 = unsigned bytes, 1 dimension; 0x00000803 = 3 dimensions.
_MAGIC = {1: 0x801, 3: 0x803}

PathLike = Union[str, os.PathLike]


def data_dir(path: Optional[PathLike] = None) -> Path:
    """The MNIST folder: ``path`` if given, else ``$SYMGRAPH_DATA``."""
    chosen = path if path is not None else config.get("SYMGRAPH_DATA")
    if not chosen:
        raise DataError("no MNIST folder given: pass data_dir=... or set SYMGRAPH_DATA")
    return Path(chosen)


def find_mnist(folder: Path, stem: str) -> Path:
    for name in (stem + ".gz", stem):
        if (folder / name).is_file():
            return folder / name
    raise DataError(f"MNIST file {stem}[.gz] not found in {folder}; download it with "
                    f"sg.datasets.mnist.download({str(folder)!r}) or set SYMGRAPH_DATA")


GZIP_EXPANSION = 100
"""MNIST's gzip files expand about 5x; more than this is a gzip bomb, not an IDX file."""


def _read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            limit = max(path.stat().st_size * GZIP_EXPANSION, 1 << 20)
            with gzip.open(path, "rb") as f:
                raw = f.read(limit + 1)
            if len(raw) > limit:
                raise DataError(f"{path}: expands past {limit} bytes ({GZIP_EXPANSION}x the "
                                f"file), refused as a gzip bomb")
            return raw
        return path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None


def parse_idx(raw: bytes, ndim: int, where: str) -> np.ndarray:
    """Decode IDX bytes of unsigned bytes with ``ndim`` dimensions; check magic and length."""
    if len(raw) < 4 + 4 * ndim:
        raise DataError(f"{where}: truncated header ({len(raw)} bytes)")
    magic = int.from_bytes(raw[:4], "big")
    if magic != _MAGIC[ndim]:
        raise DataError(f"{where}: wrong magic number 0x{magic:08x}, expected "
                        f"0x{_MAGIC[ndim]:08x} (IDX, ubyte, {ndim}-D)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    start = 4 + 4 * ndim
    want = math.prod(dims)  # Python ints: dims of 2^32 - 1 must not wrap a 64-bit product
    if len(raw) - start != want:
        raise DataError(f"{where}: {len(raw) - start} data bytes, header {dims} says {want} "
                        f"(truncated or corrupt)")
    return np.frombuffer(raw, np.uint8, offset=start).reshape(dims)


def read_idx(path: PathLike, ndim: int) -> np.ndarray:
    """Read one IDX file (gzip if it ends in ``.gz``)."""
    path = Path(path)
    return parse_idx(_read_bytes(path), ndim, str(path))


def load(path: Optional[PathLike] = None, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """``(images uint8 (N, 28, 28), labels uint8 (N,))`` of ``split`` ('train' or 'test')."""
    if split not in ("train", "test"):
        raise DataError(f"split must be 'train' or 'test', got {split!r}")
    folder = data_dir(path)
    image_file, label_file = (find_mnist(folder, FILES[f"{split}_{k}"]) for k in ("images", "labels"))
    images, labels = read_idx(image_file, 3), read_idx(label_file, 1)
    if images.shape[1:] != (28, 28):
        raise DataError(f"{image_file}: images of {images.shape[1]}x{images.shape[2]} pixels, "
                        f"MNIST's are 28x28")
    if len(images) != len(labels):
        raise DataError(f"{image_file} holds {len(images)} {split} images but {label_file} "
                        f"{len(labels)} labels")
    return images, labels


def load_data(path: Optional[PathLike] = None) -> dict[str, np.ndarray]:
    """MXNet's ``get_mnist()`` layout: float32 images in [0, 1] of shape (N, 1, 28, 28)."""
    out = {}
    for split in ("train", "test"):
        images, labels = load(path, split)
        out[f"{split}_data"] = images.reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
        out[f"{split}_label"] = labels.astype(np.float32)
    return out


MAX_DOWNLOAD = 64 << 20
"""The largest MNIST file is 9.9 MB gzipped; a response beyond this is not MNIST."""
MAX_CONTENT = 64 << 20
"""The largest MNIST file holds 47 MB; content inflating beyond this is a gzip bomb."""
CHUNK = 1 << 16


def _fetch_one(url: str, target: Path, sha256: str,
               opener: Callable[[str], object]) -> None:
    """Stream ``url`` into ``target``, checking the size of the download, the size of its
    inflated content (a gzip bomb stops at MAX_CONTENT) and the content's SHA-256 as the
    chunks arrive; a failed check leaves no file (``atomic_write``)."""
    def write(f: IO[bytes]) -> None:
        inflate, digest = zlib.decompressobj(16 + zlib.MAX_WBITS), hashlib.sha256()
        got = inflated = 0
        with _network(opener, url) as response:
            for chunk in iter(lambda: _network(response.read, CHUNK), b""):
                got += len(chunk)
                if got > MAX_DOWNLOAD:
                    raise DataError(f"{url}: more than {MAX_DOWNLOAD} bytes, not an MNIST file")
                f.write(chunk)
                inflated += _inflate(inflate, chunk, MAX_CONTENT - inflated, digest, url)
        if not inflate.eof or inflate.unused_data:
            raise DataError(f"{url}: the gzip stream is truncated or has trailing bytes")
        if digest.hexdigest() != sha256:
            raise DataError(f"{url}: SHA-256 of the content is {digest.hexdigest()}, "
                            f"expected {sha256}")
    try:
        write_file(target, write)
    except _NetworkError as exc:  # the network's OSError as it was, not a "cannot write"
        raise exc.cause from None


class _NetworkError(Exception):
    """Carries an OSError of the connection through ``atomic_write`` (which would report an
    OSError as a failure to write the file)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _network(call: Callable, *args: Any) -> Any:
    """``call(*args)``, an OSError (the connection's) wrapped in a _NetworkError."""
    try:
        return call(*args)
    except OSError as exc:
        raise _NetworkError(exc) from None


def _inflate(inflate: Any, chunk: bytes, budget: int, digest: Any, url: str) -> int:
    """Feed ``chunk`` to the decompressor, never producing more than ``budget`` bytes; the
    number of bytes produced."""
    produced, data = 0, chunk
    try:
        while data:
            out = inflate.decompress(data, budget - produced + 1)
            produced += len(out)
            if produced > budget:
                raise DataError(f"{url}: content expands past {MAX_CONTENT} bytes, refused "
                                f"as a gzip bomb")
            digest.update(out)
            data = inflate.unconsumed_tail
    except zlib.error as exc:
        raise DataError(f"{url}: downloaded file is not valid gzip ({exc})") from None
    return produced


def download(path: Optional[PathLike] = None, base_url: str = DEFAULT_URL,
             opener: Optional[Callable[[str], object]] = None) -> Path:
    """Fetch the four MNIST files that are missing from the folder; return the folder.

    Nothing is downloaded unless this is called. ``opener`` (default ``urllib.request.urlopen``)
    takes a URL and returns a readable context manager; tests pass ``file://`` URLs.
    """
    folder = data_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    opener = opener or urllib.request.urlopen
    for stem in FILES.values():
        if (folder / (stem + ".gz")).is_file() or (folder / stem).is_file():
            continue
        _fetch_one(base_url.rstrip("/") + "/" + stem + ".gz", folder / (stem + ".gz"),
                   SHA256[stem], opener)
    return folder
