"""The ``.params`` format is MXNet 1.9.1's NDArray-list format, byte for byte.

Golden files in tests/data/mxnet/ were written by MXNet 1.9.1 (make_golden.py there, run with the
MXNet venv); these tests need no MXNet. Expected values are rebuilt here from the same recipe
the script uses, never read back from symgraph.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError

GOLDEN = Path(__file__).resolve().parent / "data" / "mxnet"
DTYPES = ("float32", "float16", "float64", "uint8", "int8", "int32", "int64")


def dtype_values(name: str) -> np.ndarray:
    """The recipe of make_golden.py's ``dtype_values``."""
    if name.startswith("float"):
        return np.array([[0, 0.5, -1.5], [3.25, -4, 127]], name)
    return np.array([[0, 1, 2], [3, 4 if name.startswith("u") else -4, 127]], name)


def named_values() -> dict[str, np.ndarray]:
    return {"weight": (np.arange(12).reshape(3, 4) / 7.0).astype(np.float32),
            "half": np.array([[1.5, -2.25]], np.float16),
            "index": np.array([5, 6, 7], np.int64),
            "pixels": np.arange(24).reshape(2, 3, 4).astype(np.uint8)}


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_bytes_match_mxnet(dtype: str, tmp_path: Path) -> None:
    golden = GOLDEN / f"dtype-{dtype}.params"
    loaded = sg.nd.load(str(golden))
    assert isinstance(loaded, list) and len(loaded) == 1
    assert loaded[0].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(loaded[0].asnumpy(), dtype_values(dtype))
    out = tmp_path / "mine.params"
    sg.nd.save(str(out), [sg.nd.array(dtype_values(dtype), dtype=dtype)])
    assert out.read_bytes() == golden.read_bytes()


def test_named_file_bytes_match_mxnet(tmp_path: Path) -> None:
    want = named_values()
    loaded = sg.nd.load(str(GOLDEN / "named.params"))
    assert list(loaded) == list(want)
    for k, v in want.items():
        assert loaded[k].dtype == v.dtype
        np.testing.assert_array_equal(loaded[k].asnumpy(), v)
    out = tmp_path / "mine.params"
    sg.nd.save(str(out), {k: sg.nd.array(v, dtype=v.dtype) for k, v in want.items()})
    assert out.read_bytes() == (GOLDEN / "named.params").read_bytes()


def test_numpy_shapes_use_mxnet_v3_records(tmp_path: Path) -> None:
    """0-d and zero-size arrays need MXNet's NumPy-shape records; the whole file becomes V3."""
    loaded = sg.nd.load(str(GOLDEN / "np-shape.params"))
    assert loaded["scalar"].shape == () and float(loaded["scalar"].asnumpy()) == 2.5
    assert loaded["empty"].shape == (0, 3) and loaded["empty"].dtype == np.int32
    out = tmp_path / "mine.params"
    sg.nd.save(str(out), {"scalar": sg.nd.array(np.array(2.5)),
                          "empty": sg.nd.zeros((0, 3), dtype="int32")})
    assert out.read_bytes() == (GOLDEN / "np-shape.params").read_bytes()


def test_layout_by_hand(tmp_path: Path) -> None:
    """The documented layout, decoded independently of symgraph.runtime.ndfile."""
    out = tmp_path / "one.params"
    sg.nd.save(str(out), {"w": sg.nd.array([[1.0, 2.0]])})
    raw = out.read_bytes()
    assert struct.unpack_from("<QQQ", raw, 0) == (0x112, 0, 1)
    assert struct.unpack_from("<IiI", raw, 24) == (0xF993FAC9, 0, 2)
    assert struct.unpack_from("<qqiii", raw, 36) == (1, 2, 1, 0, 0)
    assert struct.unpack_from("<2f", raw, 64) == (1.0, 2.0)
    assert struct.unpack_from("<QQ", raw, 72) == (1, 1) and raw[88:] == b"w"


def test_list_and_single_array(tmp_path: Path) -> None:
    f = str(tmp_path / "x.nd")
    sg.nd.save(f, [sg.nd.ones((2,)), sg.nd.zeros((1, 3), dtype="int32")])
    got = sg.nd.load(f)
    assert isinstance(got, list) and [a.shape for a in got] == [(2,), (1, 3)]
    sg.nd.save(f, sg.nd.full((2, 2), 7.0))
    (one,) = sg.nd.load(f)
    np.testing.assert_array_equal(one.asnumpy(), np.full((2, 2), 7.0))


def _predict(prefix: str) -> tuple[np.ndarray, np.ndarray]:
    sym, arg, aux = sg.model.load_checkpoint(str(GOLDEN / prefix), 1)
    io = sg.nd.load(str(GOLDEN / f"{prefix}-io.params"))
    data = io["data"]
    args = dict(arg, data=data, softmax_label=sg.nd.zeros((data.shape[0],)))
    exe = sym.bind(sg.cpu(), args, aux_states=aux, grad_req="null")
    return exe.forward(is_train=False)[0].asnumpy(), io["output"].asnumpy()


@pytest.mark.parametrize("prefix", ["cnn", "bn"])
def test_mxnet_checkpoint_predicts_the_same(prefix: str) -> None:
    got, want = _predict(prefix)
    assert want.shape == (8, 10)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_bn_checkpoint_uses_aux_states() -> None:
    """The BatchNorm outputs depend on the loaded moving statistics (not batch statistics)."""
    _, arg, aux = sg.model.load_checkpoint(str(GOLDEN / "bn"), 1)
    assert sorted(aux) == ["bn1_moving_mean", "bn1_moving_var"]
    assert np.all(aux["bn1_moving_var"].asnumpy() > 0.4)


@pytest.mark.parametrize("prefix", ["cnn", "bn"])
def test_resaved_checkpoint_is_byte_identical(prefix: str, tmp_path: Path) -> None:
    sym, arg, aux = sg.model.load_checkpoint(str(GOLDEN / prefix), 1)
    sg.model.save_checkpoint(str(tmp_path / prefix), 1, sym, arg, aux)
    assert ((tmp_path / f"{prefix}-0001.params").read_bytes()
            == (GOLDEN / f"{prefix}-0001.params").read_bytes())


def test_module_save_and_load_params(tmp_path: Path) -> None:
    sym, arg, aux = sg.model.load_checkpoint(str(GOLDEN / "bn"), 1)
    mod = sg.mod.Module(sym)
    mod.bind([("data", (8, 1, 28, 28))], for_training=False)
    mod.load_params(str(GOLDEN / "bn-0001.params"))
    f = str(tmp_path / "m.params")
    mod.save_params(f)
    assert Path(f).read_bytes() == (GOLDEN / "bn-0001.params").read_bytes()
    io = sg.nd.load(str(GOLDEN / "bn-io.params"))
    mod.forward(sg.io.DataBatch([io["data"]]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), io["output"].asnumpy(),
                               rtol=0, atol=1e-5)


def test_old_npz_params_still_load(tmp_path: Path) -> None:
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = tmp_path / "old-0001.params"
    with open(f, "wb") as out:
        np.savez(out, **{"arg:w": w, "aux:m": np.ones(3, np.float64)})
    arg, aux = sg.model.load_params(str(f))
    np.testing.assert_array_equal(arg["w"].asnumpy(), w)
    assert aux["m"].dtype == np.float64


def test_unsupported_dtype_is_refused_before_writing(tmp_path: Path) -> None:
    f = tmp_path / "x.params"
    f.write_bytes(b"previous")
    with pytest.raises(DataError, match=f"cannot save {f}: array c: dtype complex64"):
        sg.nd.save(str(f), {"a": sg.nd.ones(2), "c": np.zeros(2, np.complex64)})
    assert f.read_bytes() == b"previous"


def test_module_load_of_an_mxnet_checkpoint() -> None:
    mod = sg.mod.Module.load(str(GOLDEN / "cnn"), 1)
    mod.bind([("data", (8, 1, 28, 28))], for_training=False)
    io = sg.nd.load(str(GOLDEN / "cnn-io.params"))
    mod.forward(sg.io.DataBatch([io["data"]]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), io["output"].asnumpy(),
                               rtol=0, atol=1e-5)


def test_empty_files(tmp_path: Path) -> None:
    """As mx.nd.load: a file without names is a list, the empty file too (MXNet writes the
    same 32 bytes for {} and [])."""
    f = str(tmp_path / "e.params")
    sg.nd.save(f, {})
    assert Path(f).read_bytes() == struct.pack("<4Q", 0x112, 0, 0, 0)
    assert sg.nd.load(f) == []
    assert sg.model.load_params(f) == ({}, {})


def test_optimizer_states_save_and_load(tmp_path: Path) -> None:
    def module() -> sg.mod.Module:
        mod = sg.mod.Module(sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc"),
                            label_names=None)
        mod.bind([("data", (2, 4))])
        mod.init_params(sg.init.Constant(0.5))
        return mod
    first = module()
    with pytest.raises(sg.BindError, match="no optimizer states before init_optimizer"):
        first.save_checkpoint(str(tmp_path / "early"), 1, save_optimizer_states=True)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written
    first.init_optimizer(optimizer_params={"momentum": 0.9, "learning_rate": 0.1})
    first.forward(sg.io.DataBatch([sg.nd.ones((2, 4))]), is_train=True)
    first.backward([sg.nd.ones((2, 3))])
    first.update()
    f = str(tmp_path / "opt.states")
    first.save_optimizer_states(f)
    second = module()
    second.init_optimizer(optimizer_params={"momentum": 0.9, "learning_rate": 0.1})
    second.load_optimizer_states(f)
    want, got = first._updater.get_states(), second._updater.get_states()
    assert sorted(got) == sorted(want) and len(want) == 4  # 2 momenta, 2 counts
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))
    momentum = sg.nd.load(f)["state:0:0"].asnumpy()  # an ordinary array file
    assert np.abs(momentum).max() > 0
