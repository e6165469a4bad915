"""sg.recordio: round trips, the magic-word split, damaged files, and MXNet 1.9.1 live in
both directions."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError
from tests.mxnet_live import mxnet_json

MAGIC = struct.pack("<I", 0xCED7230A)
# payloads with the magic word at aligned and unaligned places, empty, odd lengths
PAYLOADS = [b"", b"a", b"abcd", MAGIC, MAGIC * 3 + b"xy", b"z" + MAGIC + b"abc",
            b"abcd" + MAGIC + b"efgh" + MAGIC, bytes(range(256)) * 3]


def _write(path: str, payloads: list) -> None:
    w = sg.recordio.MXRecordIO(path, "w")
    for p in payloads:
        w.write(p)
    w.close()


def test_round_trip_and_layout(tmp_path) -> None:
    path = str(tmp_path / "a.rec")
    _write(path, PAYLOADS)
    r = sg.recordio.MXRecordIO(path, "r")
    assert [r.read() for _ in PAYLOADS] == PAYLOADS
    assert r.read() is None
    raw = open(path, "rb").read()
    assert len(raw) % 4 == 0
    # an aligned magic never appears inside a payload: only as chunk heads
    heads = [i for i in range(0, len(raw), 4) if raw[i:i + 4] == MAGIC]
    first = struct.unpack("<I", raw[4:8])[0]
    assert heads[0] == 0 and first >> 29 == 0 and first & (2**29 - 1) == 0


def test_indexed_random_access(tmp_path) -> None:
    idx, rec = str(tmp_path / "b.idx"), str(tmp_path / "b.rec")
    w = sg.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, p in enumerate(PAYLOADS):
        w.write_idx(i, p)
    w.close()
    r = sg.recordio.MXIndexedRecordIO(idx, rec, "r")
    assert r.keys == list(range(len(PAYLOADS)))
    for i in reversed(r.keys):
        assert r.read_idx(i) == PAYLOADS[i]
    with pytest.raises(KeyError, match="no record with key 99"):
        r.read_idx(99)


def test_pack_unpack_labels() -> None:
    for label in (3.5, [1.0, 2.0, 3.0], np.arange(7, dtype=np.float64)):
        s = sg.recordio.pack(sg.recordio.IRHeader(0, label, 12, 0), b"body")
        header, body = sg.recordio.unpack(s)
        assert body == b"body" and header.id == 12
        np.testing.assert_array_equal(np.atleast_1d(header.label),
                                      np.atleast_1d(np.float32(label)))
        assert header.flag == (0 if np.isscalar(label) else len(label))


@pytest.mark.parametrize("damage, message", [
    (lambda raw: raw[:5], "truncated record header"),
    (lambda raw: b"\0\0\0\0" + raw[4:], "bad magic"),
    (lambda raw: raw[:4] + struct.pack("<I", 2**29 - 1) + raw[8:], "record chunk of 536870911"),
    (lambda raw: raw[:4] + struct.pack("<I", (2 << 29) | 4) + raw[8:], "chunk flag 2 out of"),
])
def test_damaged_file_is_a_data_error(tmp_path, damage, message) -> None:
    path = str(tmp_path / "d.rec")
    _write(path, [b"abcdefgh"])
    raw = open(path, "rb").read()
    open(path, "wb").write(damage(raw))
    with pytest.raises(DataError, match=f"d.rec: offset 0: {message}"):
        sg.recordio.MXRecordIO(path, "r").read()


def test_bad_index_and_header(tmp_path) -> None:
    idx, rec = str(tmp_path / "c.idx"), str(tmp_path / "c.rec")
    _write(rec, [b"abcd"])
    open(idx, "w").write("0\t0\n1\t4096\n")
    with pytest.raises(DataError, match="line 2: offset 4096 is not a record start"):
        sg.recordio.MXIndexedRecordIO(idx, rec, "r")
    open(idx, "w").write("0 zero\n")
    with pytest.raises(DataError, match="line 1"):
        sg.recordio.MXIndexedRecordIO(idx, rec, "r")
    with pytest.raises(DataError, match="shorter than the 24-byte"):
        sg.recordio.unpack(b"short")
    hostile = struct.pack("<IfQQ", 10**9, 0.0, 0, 0) + b"xx"
    with pytest.raises(DataError, match="1000000000 labels"):
        sg.recordio.unpack(hostile)


READ_IN_MXNET = """
import json, sys, mxnet as mx
p = json.load(sys.stdin)
r = mx.recordio.MXIndexedRecordIO(p['idx'], p['rec'], 'r')
out = []
for k in sorted(r.keys):
    h, s = mx.recordio.unpack(r.read_idx(k))
    out.append([k, float(h.label) if h.flag == 0 else [float(x) for x in h.label], h.id, s.hex()])
print(json.dumps(out))
"""

WRITE_IN_MXNET = """
import json, sys, mxnet as mx
p = json.load(sys.stdin)
w = mx.recordio.MXIndexedRecordIO(p['idx'], p['rec'], 'w')
for i, hexs in enumerate(p['payloads']):
    label = float(i) if i % 2 else [float(i), 0.5]
    w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, label, i, 0), bytes.fromhex(hexs)))
w.close()
print(json.dumps('ok'))
"""


@pytest.mark.mxnet
def test_mxnet_reads_ours(tmp_path) -> None:
    idx, rec = str(tmp_path / "o.idx"), str(tmp_path / "o.rec")
    w = sg.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, p in enumerate(PAYLOADS):
        w.write_idx(i, sg.recordio.pack((0, [float(i), 2.0] if i % 2 else float(i), i, 0), p))
    w.close()
    got = mxnet_json(READ_IN_MXNET, {"idx": idx, "rec": rec})
    for k, label, rid, hexs in got:
        assert rid == k and bytes.fromhex(hexs) == PAYLOADS[k]
        assert label == ([float(k), 2.0] if k % 2 else float(k))


@pytest.mark.mxnet
def test_we_read_mxnets(tmp_path) -> None:
    idx, rec = str(tmp_path / "m.idx"), str(tmp_path / "m.rec")
    mxnet_json(WRITE_IN_MXNET, {"idx": idx, "rec": rec, "payloads": [p.hex() for p in PAYLOADS]})
    r = sg.recordio.MXIndexedRecordIO(idx, rec, "r")
    for i, p in enumerate(PAYLOADS):
        header, body = sg.recordio.unpack(r.read_idx(i))
        assert body == p and header.id == i
        np.testing.assert_array_equal(np.atleast_1d(header.label),
                                      [float(i)] if i % 2 else [float(i), 0.5])
    # and the files are byte-identical to what we write for the same records
    mine = str(tmp_path / "mine.rec")
    w = sg.recordio.MXRecordIO(mine, "w")
    for i, p in enumerate(PAYLOADS):
        w.write(sg.recordio.pack((0, float(i) if i % 2 else [float(i), 0.5], i, 0), p))
    w.close()
    assert open(mine, "rb").read() == open(rec, "rb").read()
    assert os.path.getsize(rec) % 4 == 0
