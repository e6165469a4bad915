"""``gluon.utils.download`` and ``check_sha1``: fetch a file once, checked while it streams.

The body is written to a uniquely named temporary file beside the target and renamed over it
only once its size and SHA-1 are right, so a reader (or another process downloading the same
file) never sees a partial file. A size or hash mismatch is a DataError naming the file.
``requests`` is used when it is installed (MXNet uses it, and its tests patch
``requests.get``); otherwise ``urllib``.
"""
from __future__ import annotations

import hashlib
import os
import warnings
from typing import Any, Iterator, Optional

from ..core import fileio
from ..core.base import AttrError, DataError

CHUNK = 1 << 16
TIMEOUT = 30.0  # seconds per request: a missing network fails fast instead of hanging


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the SHA-1 of ``filename``'s content is ``sha1_hash`` (hex digits).

    Example::

        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), 'a.txt'); _ = open(f, 'wb').write(b'abc')
        >>> check_sha1(f, 'a9993e364706816aba3e25717850c26c9cd0d89d')
        True
    """
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha1.update(block)
    return sha1.hexdigest() == sha1_hash


def _target(url: str, path: Optional[str]) -> str:
    base = url.split("/")[-1]
    if path is None:
        if not base:
            raise AttrError(f"download: cannot make a file name from url {url!r}; pass path=")
        return base
    path = os.path.expanduser(path)
    folder = os.path.isdir(path) or path.endswith(("/", os.sep))  # ("dir/": a new folder)
    return os.path.join(path, base) if folder else path


def _chunks(url: str, verify_ssl: bool) -> tuple[Iterator[bytes], Optional[int]]:
    """The body of ``url`` in chunks, and its announced length (None when not announced)."""
    try:
        import requests
    except ImportError:
        requests = None
    if requests is not None:
        r = requests.get(url, stream=True, verify=verify_ssl, timeout=TIMEOUT)
        if r.status_code != 200:
            raise DataError(f"download: {url} answered HTTP {r.status_code}")
        length = r.headers.get("Content-Length")
        return r.iter_content(chunk_size=CHUNK), int(length) if length else None
    import ssl
    import urllib.request
    context = None if verify_ssl else ssl._create_unverified_context()
    resp = urllib.request.urlopen(url, timeout=TIMEOUT, context=context)
    length = resp.headers.get("Content-Length")
    return iter(lambda: resp.read(CHUNK), b""), int(length) if length else None


def _fetch(url: str, fname: str, sha1_hash: Optional[str], size: Optional[int],
           verify_ssl: bool) -> None:
    """One attempt: stream into a temporary file, check, rename over ``fname``
    (``fileio.atomic_write``: a failed check leaves no file behind)."""
    chunks, announced = _chunks(url, verify_ssl)
    want = size if size is not None else announced

    def write(f: Any) -> None:
        sha1, got = hashlib.sha1(), 0
        for chunk in chunks:
            got += len(chunk)
            if want is not None and got > want:  # stop early: never store an overlong body
                raise DataError(f"download: {fname} from {url} is longer than the expected "
                                f"{want} bytes")
            sha1.update(chunk)
            f.write(chunk)
        if want is not None and got != want:
            raise DataError(f"download: {fname} from {url} has {got} bytes, expected {want}")
        if sha1_hash and sha1.hexdigest() != sha1_hash:
            raise DataError(f"download: {fname} from {url} has SHA-1 {sha1.hexdigest()}, "
                            f"expected {sha1_hash}; the mirror may be outdated or the "
                            f"download corrupted")
    fileio.atomic_write(fname, write)


def download(url: str, path: Optional[str] = None, overwrite: bool = False,
             sha1_hash: Optional[str] = None, retries: int = 5, verify_ssl: bool = True,
             size: Optional[int] = None) -> str:
    """Download ``url`` to ``path`` (a file, or a folder to put the url's base name in;
    default: the base name in the current folder) unless a file with the right hash is
    already there; returns the file's path. ``size`` (bytes; else the server's
    Content-Length) and ``sha1_hash`` are checked while streaming; a mismatch after
    ``retries`` more attempts is a DataError naming the file.

    Example::

        >>> fname = download('https://example.com/data.bin', path='/tmp',
        ...                  sha1_hash='...')                  # doctest: +SKIP
    """
    fname = _target(url, path)
    if not isinstance(retries, int) or retries < 0:
        raise AttrError(f"download: retries must be an int >= 0, got {retries!r}")
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). Adding "
                      "certificate verification is strongly advised.", stacklevel=2)
    if not overwrite and os.path.exists(fname) and \
            (not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    os.makedirs(os.path.dirname(os.path.abspath(fname)), exist_ok=True)
    for attempt in range(retries + 1):
        try:
            _fetch(url, fname, sha1_hash, size, verify_ssl)
            return fname
        except Exception as exc:  # any network or check failure is retried the same way
            if attempt == retries:
                raise
            print(f"download of {url} failed ({exc!r}); {retries - attempt} attempts left")
    return fname
