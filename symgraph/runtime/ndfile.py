"""Array files: MXNet's NDArray-list binary format (written and read) and symgraph's older
``.npz`` files (read only). Used by ``sg.nd.save``/``load``, checkpoints' ``.params`` and
``Module``'s ``.states``. Nothing here unpickles.

MXNet 1.x list format, all integers little-endian::

    uint64 0x112 (list magic)   uint64 0 (reserved)
    uint64 n, then n array records
    uint64 m (0: a list, n: a dict), then m names, each uint64 length + UTF-8 bytes

    array record (NDArray::Save):
    uint32 magic    0xF993FAC9 (V2, MXNet's legacy shapes) or 0xF993FACA (V3, NumPy shapes)
    int32  storage  0 (dense; sparse records are refused)
    int32  ndim, then ndim x int64 dims
    int32  device type, int32 device id   (1 = cpu, 2 = gpu)
    int32  dtype flag (DTYPE_FLAGS), then the elements, C order

In V2 records ``ndim == 0`` (V3: ``-1``) is MXNet's shapeless "none" array, with nothing after
the shape. MXNet 1.9 writes every file as V2 unless NumPy shape semantics are on; symgraph does
the same, and writes the whole file as V3 only when it holds a 0-d or zero-size array, which V2
cannot express (MXNet then loads it under ``mx.util.np_shape(True)``). Older records are read
too: V1 (magic 0xF993FAC8, no storage field) and MXNet 0.x's (no magic: the first uint32 is the
ndim, and dims are uint32).

Reading is bounded by the file: every count, length and element total is checked against the
bytes that remain before anything is allocated, so a damaged or hostile header raises DataError
naming the file instead of allocating. Legacy ``.npz`` members are read the same way (their
``.npy`` headers are parsed, checked against the member's size and read without pickle).
"""
from __future__ import annotations

import io
import struct
import zipfile
from typing import IO, Any, Optional

import numpy as np
import numpy.lib.format as npformat

from ..core.base import DataError
from ..core.dtypes import BFLOAT16  # noqa: F401 (registers np.dtype('bfloat16'))
from ..core.fileio import PathLike, atomic_write, file_size

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA
DTYPE_FLAGS: dict[str, int] = {
    "float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6,
    "bool": 7, "int16": 8, "uint16": 9, "uint32": 10, "uint64": 11, "bfloat16": 12}
# 12 is mshadow's kBfloat16 (MXNet 1.9.1 ndarray.py: _DTYPE_MX_TO_NP[12]); the elements are the
# upper 16 bits of the float32, the layout ml_dtypes.bfloat16 has.
FLAG_DTYPES = {v: np.dtype(k) for k, v in DTYPE_FLAGS.items()}
DEVICES = {"cpu": 1, "gpu": 2}
KNOWN_DEVICES = (1, 2, 3, 5)  # cpu, gpu, cpu_pinned, cpu_shared
MAX_NDIM = 32
NPZ_EXPANSION = 16
"""A compressed ``.npz`` member may expand to at most this many times the file's size."""


# -- writing --------------------------------------------------------------------------------------

def _record_header(arr: np.ndarray, magic: int, device: tuple[int, int]) -> bytes:
    head = struct.pack("<IiI", magic, 0, arr.ndim)
    dims = struct.pack(f"<{arr.ndim}q", *arr.shape)
    return head + dims + struct.pack("<iii", device[0], device[1], DTYPE_FLAGS[arr.dtype.name])


def _as_host(name: str, value: Any) -> tuple[np.ndarray, tuple[int, int]]:
    """The value's host copy (C order, little-endian) and MXNet's (device type, id) for it."""
    # NDArray is recognised by its interface: this module is below ndarray.py, which uses it.
    if hasattr(value, "asnumpy") and hasattr(value, "context"):
        arr, ctx = value.asnumpy(), value.context
        device = (DEVICES.get(ctx.device_type, 1), int(ctx.device_id))
    elif isinstance(value, np.ndarray):
        arr, device = value, (1, 0)
    else:
        raise DataError(f"array {name}: expected an NDArray, got {type(value).__name__}")
    if arr.dtype.name not in DTYPE_FLAGS:
        raise DataError(f"array {name}: dtype {arr.dtype} has no MXNet type flag; "
                        f"supported: {sorted(DTYPE_FLAGS)}")
    return arr.astype(arr.dtype.newbyteorder("<"), order="C", copy=False), device


def normalise(data: Any) -> tuple[list[str], list[Any], bool]:
    """``(names, values, named)`` of what ``sg.nd.save`` accepts: a dict (names kept), a list
    or tuple (no names) or one array."""
    if isinstance(data, dict):
        for k in data:
            if not isinstance(k, str):
                raise DataError(f"array names must be strings, got {k!r}")
        return list(data), list(data.values()), True
    if isinstance(data, (list, tuple)):
        return [str(i) for i in range(len(data))], list(data), False
    return ["0"], [data], False


def save(fname: PathLike, data: Any) -> None:
    """Write ``data`` (dict, list or one array) in MXNet's NDArray-list format, atomically.

    Every value is converted and checked before the file is touched."""
    try:
        names, values, named = normalise(data)
        arrays = [_as_host(n, v) for n, v in zip(names, values)]
    except DataError as exc:
        raise DataError(f"cannot save {fname}: {exc}") from None
    v3 = any(a.ndim == 0 or a.size == 0 for a, _ in arrays)
    magic = V3_MAGIC if v3 else V2_MAGIC

    def write(f: IO[bytes]) -> None:
        f.write(struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays)))
        for arr, device in arrays:
            f.write(_record_header(arr, magic, device))
            f.write(memoryview(arr.reshape(-1).view(np.uint8)) if arr.size else b"")
        f.write(struct.pack("<Q", len(names) if named else 0))
        for n in names if named else ():
            raw = n.encode("utf-8")
            f.write(struct.pack("<Q", len(raw)) + raw)
    atomic_write(fname, write)


def record_bytes(value: Any) -> bytes:
    """One array's record (NDArray::Save: MXNet's pickle state of an NDArray)."""
    arr, device = _as_host("record", value)
    magic = V3_MAGIC if arr.ndim == 0 or arr.size == 0 else V2_MAGIC
    return _record_header(arr, magic, device) + arr.reshape(-1).view(np.uint8).tobytes()


# -- reading --------------------------------------------------------------------------------------

class _Reader:
    """Reads a file front to back, never past its size; errors name the file."""

    def __init__(self, f: IO[bytes], size: int, fname: PathLike, what: str) -> None:
        self.f, self.left, self.fname = f, size, f"{what} {fname}"

    def fail(self, msg: str) -> DataError:
        return DataError(f"{self.fname}: {msg}; the file is damaged or not an MXNet array file")

    def take(self, n: int, what: str) -> bytes:
        if n > self.left:
            raise self.fail(f"{what} needs {n} bytes, only {self.left} remain")
        data = self.f.read(n)
        if len(data) != n:
            raise self.fail(f"{what}: file ended early")
        self.left -= n
        return data

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))

    def array(self, dtype: np.dtype, shape: tuple[int, ...], what: str) -> np.ndarray:
        count = int(np.prod(shape, dtype=object))
        nbytes = count * dtype.itemsize
        # numpy refuses shapes whose dimensions multiply past 63 bits even when one is 0
        span = int(np.prod([d for d in shape if d], dtype=object)) * dtype.itemsize
        if span >= 2 ** 63:
            raise self.fail(f"{what} has dimensions {shape} whose product overflows 64 bits")
        if nbytes > self.left:
            raise self.fail(f"{what} of shape {shape} ({dtype}) needs {nbytes} bytes, "
                            f"only {self.left} remain")
        out = np.empty(shape, dtype.newbyteorder("<"))
        if nbytes and self.f.readinto(memoryview(out.reshape(-1).view(np.uint8))) != nbytes:
            raise self.fail(f"{what}: file ended early")
        self.left -= nbytes
        # Same bytes on a little-endian host: relabel '<f8' as the native dtype, no copy.
        return out.view(dtype) if out.dtype == dtype else out.astype(dtype)


def _read_shape(r: _Reader, magic: int, what: str) -> Optional[tuple[int, ...]]:
    """The record's shape; None for MXNet's shapeless "none" array."""
    if magic in (V2_MAGIC, V3_MAGIC):
        (stype,) = r.unpack("i", f"{what} storage type")
        if stype != 0:
            raise DataError(f"{r.fname}: {what} has sparse storage (type {stype}), which "
                            f"symgraph does not support")
    if magic in (V1_MAGIC, V2_MAGIC, V3_MAGIC):
        (ndim,) = r.unpack("i", f"{what} ndim")
        dim_fmt = "q"
    else:  # MXNet 0.x record: the magic was the ndim, dims are uint32
        ndim, dim_fmt = magic, "I"
    if ndim == (-1 if magic == V3_MAGIC else 0):
        return None
    if not 0 <= ndim <= MAX_NDIM:
        raise r.fail(f"{what} claims {ndim} dimensions")
    shape = r.unpack(f"{ndim}{dim_fmt}", f"{what} shape")
    if any(d < 0 for d in shape):
        raise r.fail(f"{what} has negative dimensions {shape}")
    return tuple(int(d) for d in shape)


def _read_record(r: _Reader, i: int) -> np.ndarray:
    what = f"array {i}"
    (magic,) = r.unpack("I", f"{what} magic")
    shape = _read_shape(r, magic, what)
    if shape is None:
        raise DataError(f"{r.fname}: {what} is MXNet's empty (shapeless) NDArray, which "
                        f"symgraph cannot represent")
    dev_type, _dev_id, flag = r.unpack("iii", f"{what} context and dtype")
    if dev_type not in KNOWN_DEVICES:
        raise r.fail(f"{what} has unknown device type {dev_type}")
    if flag not in FLAG_DTYPES:
        raise DataError(f"{r.fname}: {what} has dtype flag {flag}, which symgraph does not "
                        f"support (known: {sorted(FLAG_DTYPES)})")
    return r.array(FLAG_DTYPES[flag], shape, what)


def _read_list(f: IO[bytes], size: int, fname: PathLike,
               what: str) -> tuple[list[np.ndarray], list[str]]:
    r = _Reader(f, size, fname, what)
    magic, _reserved = r.unpack("QQ", "header")
    if magic != LIST_MAGIC:
        raise r.fail(f"list magic is {magic:#x}, expected {LIST_MAGIC:#x}")
    (n,) = r.unpack("Q", "array count")
    if n * 24 > r.left:  # 24 bytes: the smallest record
        raise r.fail(f"claims {n} arrays in {r.left} bytes")
    arrays = [_read_record(r, i) for i in range(n)]
    (m,) = r.unpack("Q", "name count")
    if m not in (0, n):
        raise r.fail(f"{m} names for {n} arrays")
    names = []
    for i in range(m):
        (length,) = r.unpack("Q", f"name {i} length")
        try:
            names.append(r.take(length, f"name {i}").decode("utf-8"))
        except UnicodeDecodeError:
            raise r.fail(f"name {i} is not UTF-8") from None
    if r.left:
        raise r.fail(f"{r.left} unexpected bytes after the names")
    if len(set(names)) != len(names):
        raise r.fail("repeated array names")
    return arrays, names


def record_from_bytes(buf: bytes, what: str = "NDArray state") -> np.ndarray:
    """The array of one record (:func:`record_bytes`, or MXNet's ``__getstate__`` bytes)."""
    r = _Reader(io.BytesIO(buf), len(buf), "(bytes)", what)
    arr = _read_record(r, 0)
    if r.left:
        raise r.fail(f"{r.left} unexpected bytes after the array")
    return arr


def load_bytes(buf: bytes, what: str = "array buffer") -> tuple[list[np.ndarray], list[str]]:
    """``(arrays, names)`` of an NDArray-list file's contents (``sg.nd.load_frombuffer``)."""
    return _read_list(io.BytesIO(buf), len(buf), "(bytes)", what)


def _npz_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, fname: str) -> np.ndarray:
    what = f"{fname}: member {info.filename}"
    with z.open(info) as f:
        try:
            version = npformat.read_magic(f)
            read_header = (npformat.read_array_header_1_0 if version == (1, 0)
                           else npformat.read_array_header_2_0)
            shape, fortran, dtype = read_header(f)
        except (ValueError, SyntaxError, TypeError, OSError, EOFError) as exc:
            raise DataError(f"{what} is not a .npy array ({exc})") from None
        if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None:
            raise DataError(f"{what} has dtype {dtype}: only plain numeric arrays are read "
                            f"(object arrays would need unpickling)")
        if dtype.name not in DTYPE_FLAGS:
            raise DataError(f"{what} has dtype {dtype}, which MXNet arrays cannot hold")
        count = int(np.prod(shape, dtype=object))
        left = info.file_size - f.tell()
        if count * dtype.itemsize != left:
            raise DataError(f"{what}: header claims shape {shape} of {dtype} "
                            f"({count * dtype.itemsize} bytes), the member holds {left}")
        flat = np.empty(count, dtype)
        if left and f.readinto(memoryview(flat).cast("B")) != left:
            raise DataError(f"{what}: member ended early")
    return flat.reshape(shape, order="F" if fortran else "C")


def _read_npz(path: PathLike, size: int, fname: str) -> tuple[list[np.ndarray], list[str]]:
    """``fname`` is how errors name the file ("parameter file x.params")."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            total = sum(i.file_size for i in infos)
            for i in infos:
                if i.compress_type == zipfile.ZIP_STORED and i.file_size > size:
                    raise DataError(f"{fname}: member {i.filename} claims {i.file_size} bytes, "
                                    f"more than the file's {size}")
            if total > NPZ_EXPANSION * size:
                raise DataError(f"{fname}: members expand to {total} bytes, more than "
                                f"{NPZ_EXPANSION}x the file's {size} (refused as a zip bomb)")
            names = [i.filename[:-4] if i.filename.endswith(".npy") else i.filename
                     for i in infos]
            if len(set(names)) != len(names):
                raise DataError(f"{fname}: repeated member names")
            return [_npz_member(z, i, fname) for i in infos], names
    except DataError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        raise DataError(f"{fname}: damaged .npz file ({type(exc).__name__}: {exc})") from None


def load(fname: PathLike,
         what: str = "array file") -> tuple[list[np.ndarray], Optional[list[str]]]:
    """``(arrays, names)`` from an MXNet NDArray-list file or a legacy symgraph ``.npz``;
    ``names`` is None for a list file without names."""
    size = file_size(fname, what)
    try:
        with open(fname, "rb") as f:
            head = f.read(8)
            if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
                arrays, names = _read_npz(fname, size, f"{what} {fname}")
                return arrays, names
            if len(head) < 8 or struct.unpack("<Q", head)[0] != LIST_MAGIC:
                raise DataError(f"{what} {fname} is neither MXNet's NDArray-list format nor "
                                f"an .npz archive (starts with {head!r})")
            f.seek(0)
            arrays, names = _read_list(f, size, fname, what)
    except OSError as exc:
        raise DataError(f"{what} {fname} cannot be read: {exc.strerror or exc}") from None
    return arrays, (names or None)  # no names: a list, as mx.nd.load (an empty file too)


def load_dict(fname: PathLike, what: str = "array file") -> dict[str, np.ndarray]:
    """:func:`load` for files whose arrays must be named (``.params``, ``.states``)."""
    arrays, names = load(fname, what)
    if names is None and not arrays:
        return {}
    if names is None:
        raise DataError(f"{what} {fname} holds {len(arrays)} unnamed arrays; names are needed")
    return dict(zip(names, arrays))


def save_dict(fname: PathLike, arrays: dict[str, Any]) -> None:
    """:func:`save` of named arrays."""
    save(fname, dict(arrays))
