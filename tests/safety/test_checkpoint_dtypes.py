"""Gluon checkpoints behave as MXNet 1.9.1 documents: a saved dtype that differs from the
network's is refused unless ``cast_dtype=True`` (then ``dtype_source`` decides), SymbolBlock
keeps a float64 model float64, shared parameters saved once load back, another network's
optimizer states are refused by name, files keep their mode and symlinks stay links, and a
damaged file raises DataError naming the file while the network keeps its values.
"""
from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError
from symgraph.gluon import nn

from ..mxnet_live import mxnet_json


def _dense(dtype: str, units: int = 3, in_units: int = 2) -> nn.Dense:
    net = nn.Dense(units, in_units=in_units)
    net.initialize()
    net.cast(dtype)
    return net


def _saved64(tmp_path: Path) -> tuple[str, np.ndarray]:
    """A float64 Dense's file, with weights float16 rounds (1/3, 1e-3)."""
    net = _dense("float64")
    weight = np.array([[1e4, 0.5], [1 / 3, -2.0], [7.25, 1e-3]])
    net.weight.set_data(sg.nd.array(weight, dtype="float64"))
    fname = str(tmp_path / "net64.params")
    net.save_parameters(fname)
    return fname, weight


def test_float64_file_into_float16_needs_cast_dtype(tmp_path: Path) -> None:
    fname, _ = _saved64(tmp_path)
    net = _dense("float16")
    before = net.weight.data().asnumpy().copy()
    with pytest.raises(DataError, match=r"weight.*float16.*float64.*cast_dtype=True"):
        net.load_parameters(fname)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)  # untouched


def test_cast_dtype_current_casts_to_the_network(tmp_path: Path) -> None:
    fname, weight = _saved64(tmp_path)
    net = _dense("float16")
    net.load_parameters(fname, cast_dtype=True)
    assert net.weight.dtype == np.float16 and net.weight.data().dtype == np.float16
    np.testing.assert_array_equal(net.weight.data().asnumpy(), weight.astype(np.float16))


def test_dtype_source_saved_takes_the_file_dtype(tmp_path: Path) -> None:
    fname, weight = _saved64(tmp_path)
    net = _dense("float16")
    net.load_parameters(fname, cast_dtype=True, dtype_source="saved")
    assert net.weight.dtype == np.float64 and net.weight.data().dtype == np.float64
    np.testing.assert_array_equal(net.weight.data().asnumpy(), weight)
    out = net(sg.nd.array([[1.0, 2.0]], dtype="float64")).asnumpy()
    np.testing.assert_allclose(out[0], weight @ [1.0, 2.0] + net.bias.data().asnumpy())


def test_dtype_source_is_checked(tmp_path: Path) -> None:
    fname, _ = _saved64(tmp_path)
    with pytest.raises(AttrError, match="dtype_source.*'file'"):
        _dense("float16").load_parameters(fname, cast_dtype=True, dtype_source="file")


@pytest.mark.mxnet
def test_mxnet_refuses_the_same_file_without_cast_dtype(tmp_path: Path) -> None:
    fname, weight = _saved64(tmp_path)
    got = mxnet_json(
        "import json, sys, numpy as np, mxnet as mx\n"
        "p = json.load(sys.stdin)\n"
        "net = mx.gluon.nn.Dense(3, in_units=2); net.initialize(); net.cast('float16')\n"
        "try:\n    net.load_parameters(p['f']); refused = False\n"
        "except AssertionError:\n    refused = True\n"
        "net.load_parameters(p['f'], cast_dtype=True, dtype_source='saved')\n"
        "print(json.dumps([refused, str(net.weight.dtype.__name__),"
        " net.weight.data().asnumpy().tolist()]))\n", {"f": fname})
    assert got[0] is True and got[1] == "float64"
    np.testing.assert_array_equal(got[2], weight)


def test_symbolblock_imports_keeps_float64(tmp_path: Path) -> None:
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=2))
    net.initialize()
    net.cast("float64")
    net.hybridize()
    x = np.array([[0.1, 0.7]])
    want = net(sg.nd.array(x, dtype="float64")).asnumpy()
    net.export(str(tmp_path / "m"))
    block = sg.gluon.SymbolBlock.imports(str(tmp_path / "m-symbol.json"), ["data"],
                                         str(tmp_path / "m-0000.params"))
    assert {p.dtype for p in block.collect_params().values()} == {np.dtype("float64")}
    np.testing.assert_array_equal(block(sg.nd.array(x, dtype="float64")).asnumpy(), want)


def test_deduplicated_file_loads_back(tmp_path: Path) -> None:
    def shared_pair() -> nn.HybridSequential:
        seq, first = nn.HybridSequential(), nn.Dense(2, in_units=2)
        seq.add(first)
        seq.add(nn.Dense(2, in_units=2, params=first.params))
        seq.initialize()
        return seq
    src, dst = shared_pair(), shared_pair()
    fname = str(tmp_path / "dedup.params")
    src.save_parameters(fname, deduplicate=True)
    assert len(sg.nd.load(fname)) == 2  # the shared weight and bias, once
    dst.load_parameters(fname)
    np.testing.assert_array_equal(dst[1].weight.data().asnumpy(),
                                  src[0].weight.data().asnumpy())


def _trained(units: int, in_units: int) -> tuple[nn.Dense, sg.gluon.Trainer]:
    net = nn.Dense(units, in_units=in_units)
    net.initialize()
    trainer = sg.gluon.Trainer(net.collect_params(), "adam")
    with sg.autograd.record():
        out = net(sg.nd.ones((1, in_units)))
    out.backward()
    trainer.step(1)
    return net, trainer


def test_trainer_refuses_states_of_another_network(tmp_path: Path) -> None:
    _, small = _trained(3, 2)
    fname = str(tmp_path / "small.states")
    small.save_states(fname)
    net, big = _trained(5, 4)
    weight = net.weight.data().asnumpy().copy()
    with pytest.raises(DataError, match=rf"{net.weight.name}.*\(5, 4\)"):
        big.load_states(fname)
    with sg.autograd.record():  # the trainer still steps with its own states
        out = net(sg.nd.ones((1, 4)))
    out.backward()
    big.step(1)
    assert not np.array_equal(net.weight.data().asnumpy(), weight)


def test_saving_keeps_the_mode_of_an_existing_file(tmp_path: Path) -> None:
    fname = tmp_path / "private.params"
    fname.write_bytes(b"")
    os.chmod(fname, 0o600)
    _dense("float32").save_parameters(str(fname))
    assert stat.S_IMODE(os.stat(fname).st_mode) == 0o600
    assert len(sg.nd.load(str(fname))) == 2


def test_saving_through_a_symlink_replaces_its_target(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    target, link = store / "real.params", tmp_path / "link.params"
    target.write_bytes(b"old")
    link.symlink_to(target)
    net = _dense("float32")
    net.save_parameters(str(link))
    assert link.is_symlink() and os.readlink(link) == str(target)
    np.testing.assert_array_equal(sg.nd.load(str(target))["weight"].asnumpy(),
                                  net.weight.data().asnumpy())
    assert sorted(p.name for p in store.iterdir()) == ["real.params"]


def _header(n: int) -> bytes:
    return struct.pack("<QQQ", 0x112, 0, n)


def _record(shape: tuple[int, ...], flag: int = 0) -> bytes:
    return (struct.pack("<IiI", 0xF993FACA, 0, len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
            + struct.pack("<iii", 1, 0, flag))


HOSTILE = {
    "zero-size with huge dims": (_header(1) + _record((0, 2 ** 62, 2 ** 62))
                                 + struct.pack("<Q", 0), "overflows 64 bits"),
    "truncated elements": (_header(1) + _record((4, 4)) + b"\0" * 10, "needs 64 bytes"),
    "wrong magic": (struct.pack("<QQQ", 0x113, 0, 1), "neither MXNet's NDArray-list"),
    "absurd array count": (_header(2 ** 60), "claims"),
    "absurd ndim": (_header(1) + struct.pack("<IiI", 0xF993FACA, 0, 2 ** 30) + b"\0" * 40,
                    "claims 1073741824 dimensions"),
    "absurd name length": (_header(1) + _record((1,)) + b"\0" * 4
                           + struct.pack("<QQ", 1, 2 ** 62), "name 0 needs"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_checkpoint_is_a_data_error_and_changes_nothing(tmp_path: Path,
                                                                case: str) -> None:
    data, why = HOSTILE[case]
    fname = tmp_path / "hostile.params"
    fname.write_bytes(data)
    net = _dense("float32")
    before = net.weight.data().asnumpy().copy()
    with pytest.raises(DataError, match=why) as err:
        net.load_parameters(str(fname))
    assert str(fname) in str(err.value)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)
