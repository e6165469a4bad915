"""Loading a graph never loads or calls native code unless code allowed it,
and an aot node's out_shape is checked against what its function is declared to write."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from tests.safety.native_libs import MARKED_SRC, build, build_custom_add


def _twice_json(code_lib: str, file_lib: str, fname: str = "Twice",
                out_shape: tuple = (3,)) -> str:
    """JSON of ``Custom(x, func=file_lib:fname)``, made in code on ``code_lib`` (a copy), so that
    ``file_lib`` itself is never named by code in this process."""
    sym = sg.sym.Custom(sg.sym.var("x"), func=f"{code_lib}:Twice", func_type="aot",
                        out_shape=out_shape, out_dtype="float32", name="tw")
    real = os.path.realpath(code_lib)
    return sym.tojson().replace(f"{real}:Twice", f"{file_lib}:{fname}")


@pytest.fixture
def libs(tmp_path: Path, monkeypatch) -> dict:
    """Two copies of the marked library: one named by code, one only by graph files."""
    code_lib = build(tmp_path, "code_twice", MARKED_SRC)
    file_lib = str(tmp_path / "file_twice.so")
    shutil.copy(code_lib, file_lib)
    mark = tmp_path / "loaded.mark"
    monkeypatch.setenv("SG_MARK", str(mark))
    yield {"code": code_lib, "file": file_lib, "mark": mark, "dir": tmp_path}
    sg.operator.unregister_custom_ops_library(file_lib)


def test_json_naming_an_unallowed_library_is_refused_and_nothing_loaded(libs) -> None:
    text = _twice_json(libs["code"], libs["file"])
    libs["mark"].unlink(missing_ok=True)
    with pytest.raises(sg.GraphError) as err:
        sg.sym.load_json(text)
    msg = str(err.value)
    assert "Twice" in msg and libs["file"] in msg and "register_custom_ops_library" in msg
    assert not libs["mark"].exists(), "the library's constructor ran on load"


def test_checkpoint_and_file_loads_are_refused(libs) -> None:
    text = _twice_json(libs["code"], libs["file"])
    prefix = libs["dir"] / "ck"
    sym_file = Path(f"{prefix}-symbol.json")
    sym_file.write_text(text)
    sg.model.save_params(f"{prefix}-0001.params", {}, {})
    before = sym_file.read_bytes()
    libs["mark"].unlink(missing_ok=True)
    with pytest.raises(sg.GraphError, match="file_twice.so"):
        sg.sym.load(str(sym_file))
    with pytest.raises(sg.GraphError, match="file_twice.so"):
        sg.model.load_checkpoint(str(prefix), 1)
    assert not libs["mark"].exists()
    assert sym_file.read_bytes() == before


def test_libc_functions_cannot_be_named(libs) -> None:
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    for fname in ("abort", "free", "system"):
        with pytest.raises(sg.GraphError, match=f"native function {fname} of .*libc"):
            sg.sym.load_json(_twice_json(libs["code"], libc, fname))


def test_only_declared_functions_of_an_allowed_library(libs) -> None:
    sg.operator.register_custom_ops_library(libs["file"], ["Twice"])
    assert libs["mark"].exists()  # loaded by the call, in code
    sym = sg.sym.load_json(_twice_json(libs["code"], libs["file"]))
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array([1., 2., 3.])})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [2., 4., 6.])
    # "Other" is exported by the same library (it calls abort) but was not declared.
    with pytest.raises(sg.GraphError, match="native function Other of .*file_twice.so"):
        sg.sym.load_json(_twice_json(libs["code"], libs["file"], "Other"))


def test_relative_paths_in_files_are_refused(libs) -> None:
    sg.operator.register_custom_ops_library(libs["file"], ["Twice"])
    text = _twice_json(libs["code"], "./file_twice.so")
    old = os.getcwd()
    os.chdir(libs["dir"])
    try:
        with pytest.raises(sg.GraphError, match="'./file_twice.so' .*relative"):
            sg.sym.load_json(text)
    finally:
        os.chdir(old)


def test_code_paths_are_canonical_when_named(libs, tmp_path: Path) -> None:
    """A relative path in code is resolved once, when the symbol is made; running later from
    another directory calls the same library."""
    old = os.getcwd()
    os.chdir(libs["dir"])
    try:
        sym = sg.sym.Custom(sg.sym.var("x"), func="./code_twice.so:Twice", func_type="aot",
                            out_shape=(2,), out_dtype="float32", name="tw")
    finally:
        os.chdir(old)
    assert os.path.realpath(libs["code"]) + ":Twice" in sym.tojson()
    other = tmp_path / "elsewhere"
    other.mkdir()
    os.chdir(other)
    try:
        exe = sym.bind(sg.cpu(), {"x": sg.nd.array([1., 5.])})
        np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [2., 10.])
    finally:
        os.chdir(old)


def test_registration_is_all_or_nothing(libs) -> None:
    with pytest.raises(sg.AttrError, match="no exported function 'Missing'"):
        sg.operator.register_custom_ops_library(libs["file"], ["Twice", "Missing"])
    with pytest.raises(sg.GraphError, match="not allowed"):
        sg.sym.load_json(_twice_json(libs["code"], libs["file"]))
    with pytest.raises(sg.AttrError, match="functions must be"):
        sg.operator.register_custom_ops_library(libs["file"], "Twice")


@pytest.fixture
def custom_add(tmp_path: Path) -> str:
    lib = build_custom_add(tmp_path)
    decl = sg.operator.AotFunction(writes=sg.operator.same_shape)
    sg.operator.register_custom_ops_library(lib, {"CustomAdd": decl})
    yield lib
    sg.operator.unregister_custom_ops_library(lib)


@pytest.mark.parametrize("out_shape", [(100,), (2,), (3, 1)])
def test_out_shape_must_match_the_declared_writes(custom_add: str, out_shape: tuple) -> None:
    """custom_add reads its inputs over the output's size: out_shape (100,) on (3,) inputs
    would read past them. The declaration makes it a ShapeError naming the node, at bind."""
    sym = sg.sym.Custom(sg.sym.var("a"), sg.sym.var("b"), func=f"{custom_add}:CustomAdd",
                        func_type="aot", out_shape=out_shape, out_dtype="float32", name="add")
    text = sym.tojson()
    for s in (sym, sg.sym.load_json(text)):
        a, b = sg.nd.array([1., 2., 3.]), sg.nd.array([4., 5., 6.])
        with pytest.raises(sg.ShapeError,
                           match=r"add \(Custom\): out_shape .* differs from what CustomAdd in "
                                 r".*custom_add_cpu.so is declared to write, \(3,\)"):
            s.bind(sg.cpu(), {"a": a, "b": b})
        np.testing.assert_array_equal(a.asnumpy(), [1., 2., 3.])
        np.testing.assert_array_equal(b.asnumpy(), [4., 5., 6.])
        assert s.tojson() == text


def test_inputs_of_different_shapes_are_refused(custom_add: str) -> None:
    sym = sg.sym.Custom(sg.sym.var("a"), sg.sym.var("b"), func=f"{custom_add}:CustomAdd",
                        func_type="aot", out_shape=lambda a, b: a, out_dtype="float32",
                        name="add")
    with pytest.raises(sg.ShapeError, match=r"add \(Custom\): input x1 has shape \(2,\)"):
        sym.simple_bind(sg.cpu(), grad_req="null", a=(3,), b=(2,))


def test_declared_function_runs(custom_add: str) -> None:
    sym = sg.sym.Custom(sg.sym.var("a"), sg.sym.var("b"), func=f"{custom_add}:CustomAdd",
                        func_type="aot", out_shape=(3,), out_dtype="float32", name="add")
    again = sg.sym.load_json(sym.tojson())
    exe = again.bind(sg.cpu(), {"a": sg.nd.array([1., 2., 3.]), "b": sg.nd.array([4., 5., 6.])})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [5., 7., 9.])
