"""Every loader (.params, .states, nd files, symbol JSON, legacy npz, MNIST) raises
DataError or GraphError naming the file, never a raw exception; sizes claimed by a header are
checked against the file's size before anything is allocated; nothing is unpickled.
"""
from __future__ import annotations

import gzip
import io
import os
import struct
import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
import numpy.lib.format as npformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symgraph as sg
from symgraph.core.base import DataError, GraphError

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "mxnet"
PARAMS = (GOLDEN / "bn-0001.params").read_bytes()
LOADERS: dict[str, Callable[[str], object]] = {
    "nd.load": sg.nd.load,
    "model.load_params": sg.model.load_params,
}


def _expect_data_error(fname: Path, match: str = "", limit_mb: float = 8.0) -> DataError:
    """Every loader refuses ``fname`` with DataError naming it, allocating less than
    ``limit_mb``; the file is unchanged."""
    before = fname.read_bytes()
    err = None
    for load in LOADERS.values():
        tracemalloc.start()
        try:
            with pytest.raises(DataError) as info:
                load(str(fname))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert str(fname) in str(info.value)
        assert match in str(info.value), str(info.value)
        assert peak < limit_mb * 2**20, f"{peak} bytes allocated"
        err = info.value
    assert fname.read_bytes() == before
    return err


def _patched(offset: int, fmt: str, value: int) -> bytes:
    raw = bytearray(PARAMS)
    struct.pack_into("<" + fmt, raw, offset, value)
    return bytes(raw)


# offsets in bn-0001.params: list header 0..24, first record at 24 (magic, storage, ndim, dims,
# device type and id, dtype flag)
NDIM = struct.unpack_from("<i", PARAMS, 32)[0]
DEVICE = 36 + 8 * NDIM
HEADER_CASES = {
    "list magic": (_patched(0, "Q", 0x113), "is neither MXNet's NDArray-list format"),
    "array count 2**60": (_patched(16, "Q", 2**60), "claims 1152921504606846976 arrays"),
    "record magic": (_patched(24, "I", 7), "array 0"),
    "sparse storage": (_patched(28, "i", 1), "array 0 has sparse storage"),
    "ndim 1000": (_patched(32, "i", 1000), "array 0 claims 1000 dimensions"),
    "ndim -5": (_patched(32, "i", -5), "array 0 claims -5 dimensions"),
    "dim 2**40": (_patched(36, "q", 2**40), "(float32) needs 39582418599936 bytes, only"),
    "dim negative": (_patched(36, "q", -8), "negative dimensions"),
    "device 9": (_patched(DEVICE, "i", 9), "array 0 has unknown device type 9"),
    "dtype flag 99": (_patched(DEVICE + 8, "i", 99), "array 0 has dtype flag 99"),
    "bfloat16 flag": (_patched(DEVICE + 8, "i", 12), "array"),  # half the bytes: misaligned
    "float64 flag": (_patched(DEVICE + 8, "i", 1), "array"),  # twice the bytes: misaligned
    "trailing bytes": (PARAMS + b"\0", "1 unexpected bytes after the names"),
    "name length": (PARAMS[:-len(b"aux:bn1_moving_var") - 8] + struct.pack("<Q", 2**62)
                    + b"aux:bn1_moving_var", "needs 4611686018427387904 bytes"),
    "name utf8": (PARAMS[:-1] + b"\xff", "is not UTF-8"),
    "not mxnet": (b"\x89PNG\r\n\x1a\n" + PARAMS[8:], "neither MXNet's NDArray-list format"),
    "empty": (b"", "neither MXNet's NDArray-list format"),
}


@pytest.mark.parametrize("case", sorted(HEADER_CASES))
def test_damaged_header(case: str, tmp_path: Path) -> None:
    data, match = HEADER_CASES[case]
    f = tmp_path / "net-0001.params"
    f.write_bytes(data)
    _expect_data_error(f, match)


def test_every_truncation(tmp_path: Path) -> None:
    f = tmp_path / "cut.params"
    cuts = sorted(set(range(0, len(PARAMS), 211)) | {1, 7, 8, 23, 24, 25, 60, len(PARAMS) - 1})
    for cut in cuts:
        f.write_bytes(PARAMS[:cut])
        with pytest.raises(DataError, match=str(f)):
            sg.nd.load(str(f))


def test_names_count_and_duplicates(tmp_path: Path) -> None:
    f = tmp_path / "x.params"
    sg.nd.save(str(f), {"a": sg.nd.ones(2), "b": sg.nd.ones(2)})
    raw = f.read_bytes()
    f.write_bytes(raw.replace(b"\x01\x00\x00\x00\x00\x00\x00\x00b", b"\x01" + b"\0" * 7 + b"a"))
    _expect_data_error(f, "repeated array names")
    names_at = raw.index(b"\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00a")
    f.write_bytes(raw[:names_at] + struct.pack("<Q", 1) + raw[names_at + 8:])
    _expect_data_error(f, "1 names for 2 arrays")


def test_unnamed_file_as_params(tmp_path: Path) -> None:
    f = tmp_path / "list.params"
    sg.nd.save(str(f), [sg.nd.ones(2)])
    with pytest.raises(DataError, match=f"parameter file {f} holds 1 unnamed arrays"):
        sg.model.load_params(str(f))


# -- legacy npz ------------------------------------------------------------------------------

def _npz(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _npy_header(shape: tuple, dtype: str = "<f4") -> bytes:
    buf = io.BytesIO()
    npformat.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False,
                                          "shape": shape})
    return buf.getvalue()


def test_npz_header_claiming_4_tib(tmp_path: Path) -> None:
    f = tmp_path / "old.params"
    f.write_bytes(_npz({"arg:w.npy": _npy_header((2**40,)) + b"\0" * 16}))
    _expect_data_error(f, "header claims shape (1099511627776,)")


def test_npz_zip_bomb(tmp_path: Path) -> None:
    f = tmp_path / "bomb.params"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("arg:w.npy", "w", force_zip64=True) as m:
            m.write(_npy_header((64 * 2**20 // 4,)))
            chunk = b"\0" * 2**20
            for _ in range(64):
                m.write(chunk)
    f.write_bytes(buf.getvalue())
    assert f.stat().st_size < 2**20
    _expect_data_error(f, "refused as a zip bomb")


def test_npz_pickled_member_is_never_unpickled(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    arr = np.empty(1, object)
    arr[0] = Payload()
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    f = tmp_path / "evil.params"
    f.write_bytes(_npz({"arg:w.npy": buf.getvalue()}))
    _expect_data_error(f, "would need unpickling")
    assert not marker.exists()


@pytest.mark.parametrize("members,match", [
    ({"arg:w.npy": b"not npy"}, "is not a .npy array"),
    ({"arg:w.npy": _npy_header((4,)) + b"\0" * 8}, "holds 8"),
    ({"arg:w.npy": _npy_header((2,), "<c8") + b"\0" * 16}, "dtype complex64, which MXNet"),
])
def test_npz_bad_members(members: dict, match: str, tmp_path: Path) -> None:
    f = tmp_path / "old.params"
    f.write_bytes(_npz(members))
    try:
        sg.model.load_params(str(f))
    except DataError as exc:
        assert str(f) in str(exc) and match in str(exc)
    else:
        raise AssertionError("loaded")


def test_npz_repeated_member(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate we want
        for value in (0, 1):
            z.writestr("arg:w.npy", _npy_header((1,)) + struct.pack("<f", value))
    f = tmp_path / "dup.params"
    f.write_bytes(buf.getvalue())
    _expect_data_error(f, "repeated member names")


def test_npz_damaged_zip(tmp_path: Path) -> None:
    good = _npz({"arg:w.npy": _npy_header((4,)) + b"\0" * 16})
    f = tmp_path / "z.params"
    for data in (good[:40], b"PK\x03\x04" + b"\xff" * 100, good[:-10]):
        f.write_bytes(data)
        _expect_data_error(f, "")


# -- .states, JSON, checkpoints, MNIST -------------------------------------------------------

def _module() -> sg.mod.Module:
    net = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc")
    mod = sg.mod.Module(net, label_names=None)
    mod.bind([("data", (2, 4))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"momentum": 0.9})
    return mod


def test_states_file_errors_name_the_file(tmp_path: Path) -> None:
    mod = _module()
    mod.save_checkpoint(str(tmp_path / "m"), 1, save_optimizer_states=True)
    f = tmp_path / "m-0001.states"
    raw = f.read_bytes()
    states_before = mod._updater.get_states()
    for data in (raw[: len(raw) // 2], b"garbage", b""):
        f.write_bytes(data)
        with pytest.raises(DataError, match=f"optimizer state file {f}"):
            mod.load_optimizer_states(str(f))
    sg.nd.save(str(f), {"foo:1": sg.nd.ones(2)})
    with pytest.raises(DataError, match=f"optimizer state file {f}"):
        mod.load_optimizer_states(str(f))
    sg.nd.save(str(f), {"state:0:0": sg.nd.ones(2), "state:0:1": sg.nd.ones(2)})
    with pytest.raises(DataError, match=f"optimizer state file {f}: .*2 arrays"):
        mod.load_optimizer_states(str(f))
    after = mod._updater.get_states()
    assert sorted(after) == sorted(states_before)
    for k in after:
        np.testing.assert_array_equal(np.asarray(after[k]), np.asarray(states_before[k]))


def test_checkpoint_with_hostile_json(tmp_path: Path) -> None:
    prefix = tmp_path / "net"
    sg.model.save_params(f"{prefix}-0001.params", {}, {})
    for text, match in (("[" * 3000 + "]" * 3000, "nesting deeper"),
                        ('{"nodes": [{"op": "null", "name": "x"}], "heads": [[0, 1e999]]}',
                         "must be an integer"),
                        ('{"nodes": 1e999999, "heads": []}', "'nodes' must be")):
        Path(f"{prefix}-symbol.json").write_text(text)
        with pytest.raises(GraphError, match=f"{prefix}-symbol.json: .*{match}"):
            sg.model.load_checkpoint(str(prefix), 1)


def test_mnist_gzip_bomb(tmp_path: Path) -> None:
    f = tmp_path / "t10k-labels-idx1-ubyte.gz"
    with gzip.open(f, "wb") as out:
        out.write(struct.pack(">II", 0x801, 200 * 2**20))
        chunk = b"\0" * 2**20
        for _ in range(200):
            out.write(chunk)
    with pytest.raises(DataError, match=f"{f}: expands past .* refused as a gzip bomb"):
        sg.datasets.mnist.read_idx(f, 1)


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=f"array file {tmp_path} is not a regular file"):
        sg.nd.load(str(tmp_path))
    with pytest.raises(DataError, match="not found"):
        sg.nd.load(str(tmp_path / "nope.params"))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, len(PARAMS) - 1), st.integers(0, 255)), max_size=4),
       st.integers(0, len(PARAMS)))
def test_fuzz_byte_damage(flips: list, cut: int) -> None:
    raw = bytearray(PARAMS[:cut] if flips == [] else PARAMS)
    for at, value in flips:
        raw[at % len(raw)] = value
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"symgraph-fuzz-{os.getpid()}.params"
    path.write_bytes(bytes(raw))
    try:
        sg.nd.load(str(path))  # loads (a flip inside data) or says why
    except DataError as exc:
        assert str(path) in str(exc)
    finally:
        path.unlink()
