"""``sg.recordio``: MXNet's RecordIO files (``.rec``, with an optional ``.idx`` index).

Byte-compatible with MXNet 1.9.1 (dmlc-core's format): a record is one or more chunks, each a
little-endian ``uint32`` magic ``0xced7230a``, a ``uint32`` holding the continuation flag (top
3 bits) and the chunk length (low 29 bits), the bytes, then zeros up to a multiple of 4. A
magic word at a 4-byte-aligned position of the payload is not written: the payload is split
there (flags 1 = first, 2 = middle, 3 = last chunk; 0 = whole record) and the reader puts the
word back, so a reader can resynchronise on any aligned magic. An image record's payload is
an :class:`IRHeader` (``<IfQQ``: flag, label, id, id2), ``flag`` float32 labels when ``flag > 0``,
then the encoded image.

A damaged or hostile file is a :class:`~symgraph.core.base.DataError` naming the file and the
offset; a chunk length is checked against the bytes left in the file before anything is read.

Example::

    >>> import symgraph as sg
    >>> w = sg.recordio.MXRecordIO('/tmp/ex.rec', 'w')
    >>> w.write(sg.recordio.pack(sg.recordio.IRHeader(0, 3.0, 7, 0), b'payload'))
    >>> w.close()
    >>> r = sg.recordio.MXRecordIO('/tmp/ex.rec', 'r')
    >>> sg.recordio.unpack(r.read())
    (HEADER(flag=0, label=3.0, id=7, id2=0), b'payload')
"""
from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple
from multiprocessing import current_process
from typing import Any, BinaryIO, Optional

import numpy as np

from ..core.base import DataError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img", "MissingRecordError"]

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_LEN_BITS = 29
MAX_RECORD = (1 << _LEN_BITS) - 1  # the format's bound on one record (and one chunk)
_HEAD = struct.Struct("<II")


class MissingRecordError(DataError, KeyError):
    """``read_idx`` of a key the index does not hold (a KeyError, as MXNet raises)."""


def _chunks(buf: bytes) -> list[tuple[int, bytes]]:
    """``(flag, bytes)`` chunks of one record: split at each aligned magic word (dropped)."""
    parts, start, pos = [], 0, buf.find(_MAGIC_BYTES)
    while pos != -1 and pos + 4 <= len(buf):
        if pos % 4 == 0:
            parts.append((1 if start == 0 else 2, buf[start:pos]))
            start = pos + 4
            pos = buf.find(_MAGIC_BYTES, start)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
    parts.append((3 if start else 0, buf[start:]))
    return parts


class MXRecordIO:
    """Sequential reader (``flag='r'``) or writer (``flag='w'``) of a RecordIO file.

    Example::

        >>> rec = sg.recordio.MXRecordIO('/tmp/a.rec', 'w')
        >>> rec.write(b'record_0'); rec.close()
        >>> sg.recordio.MXRecordIO('/tmp/a.rec', 'r').read()
        b'record_0'
    """

    def __init__(self, uri: str, flag: str) -> None:
        if flag not in ("r", "w"):
            raise DataError(f"{uri}: invalid flag {flag!r}, expected 'r' or 'w'")
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid: Optional[int] = None
        self.is_open = False
        self._file: Optional[BinaryIO] = None
        self.open()

    @property
    def writable(self) -> bool:
        return self.flag == "w"

    def open(self) -> None:
        """Open the file (a writer truncates it)."""
        try:
            self._file = open(self.uri, "wb" if self.writable else "rb")
        except OSError as exc:
            raise DataError(f"{self.uri}: cannot open for {'writing' if self.writable else 'reading'}"
                            f": {exc.strerror}") from None
        self._size = os.fstat(self._file.fileno()).st_size
        self.pid = current_process().pid
        self.is_open = True

    def close(self) -> None:
        """Close the file; a closed reader or writer can be opened again with ``open``."""
        if self.is_open and self._file is not None:
            self._file.close()
        self._file = None
        self.is_open = False
        self.pid = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "MXRecordIO":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getstate__(self) -> dict:
        """Pickle without the file handle; the copy reopens the file (a writer truncates)."""
        state = {k: v for k, v in self.__dict__.items() if k != "_file"}
        state["_file"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if state.get("is_open"):
            self.is_open = False
            self.open()

    def _check_pid(self, allow_reset: bool) -> None:
        """A file object must not be shared by forked processes (their offsets would mix)."""
        if self.pid != current_process().pid:
            if not allow_reset:
                raise DataError(f"{self.uri}: record file used in a process other than the "
                                f"one that opened it")
            self.reset()

    def _handle(self) -> BinaryIO:
        if self._file is None:
            raise DataError(f"{self.uri}: record file is closed")
        return self._file

    def reset(self) -> None:
        """Go back to the first record (a writer truncates the file)."""
        self.close()
        self.open()

    def tell(self) -> int:
        """The current byte offset (where the next record is written or read)."""
        return self._handle().tell()

    def write(self, buf: bytes) -> None:
        """Append ``buf`` as one record."""
        if not self.writable:
            raise DataError(f"{self.uri}: write on a record file opened for reading")
        self._check_pid(allow_reset=False)
        buf = bytes(buf)
        if len(buf) > MAX_RECORD:
            raise DataError(f"{self.uri}: record of {len(buf)} bytes, RecordIO holds at most "
                            f"{MAX_RECORD}")
        out = self._handle()
        for cflag, part in _chunks(buf):
            out.write(_HEAD.pack(MAGIC, (cflag << _LEN_BITS) | len(part)))
            out.write(part)
        out.write(b"\0" * (-len(buf) % 4))  # chunks before the last are 4-aligned already

    def read_at(self, offset: int) -> Optional[bytes]:
        """The record starting at byte ``offset`` (as ``tell`` gave it), or None at the end.

        Example::

            >>> rec = sg.recordio.MXRecordIO('/tmp/a.rec', 'r')     # doctest: +SKIP
            >>> rec.read_at(0)                                        # doctest: +SKIP
            b'record_0'
        """
        self._handle().seek(int(offset))
        return self.read()

    def read(self) -> Optional[bytes]:
        """The next record, or None at the end of the file."""
        if self.writable:
            raise DataError(f"{self.uri}: read on a record file opened for writing")
        self._check_pid(allow_reset=False)
        src = self._handle()
        start = src.tell()
        parts: list[bytes] = []
        while True:
            offset = src.tell()
            head = src.read(_HEAD.size)
            if not head and not parts:
                return None
            if len(head) < _HEAD.size:
                raise DataError(f"{self.uri}: offset {offset}: truncated record header "
                                f"({len(head)} of 8 bytes)")
            magic, lrec = _HEAD.unpack(head)
            if magic != MAGIC:
                raise DataError(f"{self.uri}: offset {offset}: bad magic {magic:#010x}, "
                                f"expected {MAGIC:#010x} (not a RecordIO file, or damaged)")
            cflag, length = lrec >> _LEN_BITS, lrec & MAX_RECORD
            if cflag > 3 or (cflag in (0, 1)) != (not parts):
                raise DataError(f"{self.uri}: offset {offset}: chunk flag {cflag} out of "
                                f"sequence in the record starting at offset {start}")
            padded = length + (-length % 4)
            if padded > self._size - src.tell():
                raise DataError(f"{self.uri}: offset {offset}: record chunk of {length} bytes "
                                f"runs past the end of the file ({self._size} bytes)")
            parts.append(src.read(padded)[:length])
            if cflag in (0, 3):
                return _MAGIC_BYTES.join(parts)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with a text index (``key<TAB>offset`` per line) for random access.

    Example::

        >>> w = sg.recordio.MXIndexedRecordIO('/tmp/b.idx', '/tmp/b.rec', 'w')
        >>> for i in range(3):
        ...     w.write_idx(i, b'record_%d' % i)
        >>> w.close()
        >>> sg.recordio.MXIndexedRecordIO('/tmp/b.idx', '/tmp/b.rec', 'r').read_idx(2)
        b'record_2'
    """

    def __init__(self, idx_path: str, uri: str, flag: str, key_type: type = int) -> None:
        self.idx_path = os.fspath(idx_path)
        self.idx: dict = {}
        self.keys: list = []
        self.key_type = key_type
        self.fidx: Any = None
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx, self.keys = {}, []
        try:
            self.fidx = open(self.idx_path, self.flag)
        except OSError as exc:
            self.close()
            raise DataError(f"{self.idx_path}: cannot open index: {exc.strerror}") from None
        if not self.writable:
            self._read_index()

    def _read_index(self) -> None:
        for lineno, line in enumerate(self.fidx, 1):
            fields = line.strip().split("\t")
            if fields == [""]:
                continue
            try:
                key, pos = self.key_type(fields[0]), int(fields[1])
            except (ValueError, IndexError):
                raise DataError(f"{self.idx_path}: line {lineno}: {line.strip()!r} is not "
                                f"'key<TAB>offset'") from None
            if not 0 <= pos < max(self._size, 1) or pos % 4:
                raise DataError(f"{self.idx_path}: line {lineno}: offset {pos} is not a record "
                                f"start in {self.uri} ({self._size} bytes)")
            if key not in self.idx:
                self.keys.append(key)
            self.idx[key] = pos

    def close(self) -> None:
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None
        super().close()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx: Any) -> None:
        """Position the reader at the record of key ``idx``."""
        if self.writable:
            raise DataError(f"{self.uri}: seek on a record file opened for writing")
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise MissingRecordError(f"{self.idx_path}: no record with key {idx!r}")
        self._handle().seek(self.idx[idx])

    def read_idx(self, idx: Any) -> Optional[bytes]:
        """The record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx: Any, buf: bytes) -> None:
        """Append ``buf`` as a record and index it under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Header of an image record: ``flag`` (number of float labels that follow
the header, 0 for one label held in ``label``), ``label`` (a float, or an array when packed),
``id`` and ``id2`` (the record's 64-bit id and its high bits, usually 0)."""
_IR = struct.Struct("<IfQQ")


def pack(header: Any, s: bytes) -> bytes:
    """Prefix ``s`` with ``header`` (an :class:`IRHeader` or 4-tuple); an array label is
    stored after the header as float32 with ``flag`` = its size.

    Example::

        >>> sg.recordio.pack(sg.recordio.IRHeader(0, [1, 2], 5, 0), b'x')[:4]
        b'\\x02\\x00\\x00\\x00'
    """
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype="<f4").ravel()
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    try:
        return _IR.pack(*header) + bytes(s)
    except struct.error as exc:
        raise DataError(f"recordio.pack: header {tuple(header)} does not fit the record "
                        f"header (flag uint32, label float32, id and id2 uint64): {exc}") from None


def unpack(s: bytes) -> tuple[Any, bytes]:
    """Split a record into its :class:`IRHeader` and payload (labels as a float32 array
    when ``flag > 0``).

    Example::

        >>> sg.recordio.unpack(sg.recordio.pack((0, 2.0, 1, 0), b'img'))
        (HEADER(flag=0, label=2.0, id=1, id2=0), b'img')
    """
    s = bytes(s)
    if len(s) < _IR.size:
        raise DataError(f"recordio.unpack: record of {len(s)} bytes is shorter than the "
                        f"{_IR.size}-byte image record header")
    header = IRHeader(*_IR.unpack_from(s))
    s = s[_IR.size:]
    if header.flag > 0:
        if header.flag * 4 > len(s):
            raise DataError(f"recordio.unpack: header says {header.flag} labels "
                            f"({header.flag * 4} bytes) but only {len(s)} bytes follow it")
        header = header._replace(label=np.frombuffer(s, "<f4", header.flag).astype(np.float32))
        s = s[header.flag * 4:]
    return header, s


def unpack_img(s: bytes, iscolor: int = -1) -> tuple[Any, np.ndarray]:
    """Unpack a record and decode its image to a numpy array in OpenCV's BGR order (as
    MXNet's ``unpack_img``): ``iscolor`` 1 = 3 channels, 0 = grey (2-d), -1 = as stored."""
    from .image.codec import decode_bgr
    header, img = unpack(s)
    return header, decode_bgr(img, iscolor, "recordio.unpack_img")


def pack_img(header: Any, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode ``img`` (a uint8 numpy array in OpenCV's BGR order, as MXNet's ``pack_img``)
    as JPEG (``quality`` 1-100) or PNG (``quality`` = compression 0-9) and pack it."""
    from .image.codec import encode_bgr
    return pack(header, encode_bgr(img, quality, img_fmt))
