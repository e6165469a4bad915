"""Every ``SYMGRAPH_*`` variable is read through ``symgraph.config``: parsed in one place, bad
values refused by name."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import symgraph as sg
from symgraph.core import config
from symgraph.core.base import AttrError

ROOT = Path(__file__).resolve().parents[1] / "symgraph"


def _environ_reads(path: Path) -> list[str]:
    """``os.environ``/``os.getenv`` reads of a SYMGRAPH_ name (or of a constant holding one)."""
    tree = ast.parse(path.read_text())
    consts = {t.id: n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Call, ast.Subscript)):
            continue
        text = ast.unparse(node)
        if "environ" not in text and "getenv" not in text:
            continue
        # (string constants only: ``dict(os.environ, SYMGRAPH_X=...)`` makes a child's
        # environment, it reads nothing)
        names = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
                 and str(n.value).startswith("SYMGRAPH_")]
        names += [consts[n.id] for n in ast.walk(node) if isinstance(n, ast.Name)
                  and str(consts.get(n.id, "")).startswith("SYMGRAPH_")]
        found += [f"{path.name}:{node.lineno} {n}" for n in names]
    return found


def test_no_module_reads_a_symgraph_variable_itself() -> None:
    # the package and the benchmarks (a benchmark that parses a setting itself reports it
    # differently from what the library does, e.g. CUDA graphs "on" for GRAPHS=off)
    files = [p for p in ROOT.rglob("*.py") if p.name != "config.py"]
    files += sorted((ROOT.parent / "benchmarks").glob("*.py"))
    assert len(files) > 250
    reads = [r for p in files for r in _environ_reads(p)]
    assert reads == []


def test_environ_scan_sees_direct_and_constant_reads(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('import os\nNAME = "SYMGRAPH_X"\nos.environ.get("SYMGRAPH_Y")\n'
                   'os.getenv(NAME)\nos.environ["SYMGRAPH_Z"]\n'
                   'env = dict(os.environ, SYMGRAPH_W="1")\nos.environ.get("HOME")\n')
    assert _environ_reads(src) == ["m.py:3 SYMGRAPH_Y", "m.py:4 SYMGRAPH_X",
                                   "m.py:5 SYMGRAPH_Z"]


def test_every_variable_the_source_names_is_a_setting() -> None:
    named = {n for p in ROOT.rglob("*.py") for n in re.findall(r"SYMGRAPH_[A-Z_0-9]+",
                                                               p.read_text())}
    assert named - set(config.SETTINGS) == set()


@pytest.mark.parametrize("name,text,value", [
    ("SYMGRAPH_DEBUG", "2", 2), ("SYMGRAPH_DEBUG", "", 0), ("SYMGRAPH_CUDA_GRAPHS", "0", False),
    ("SYMGRAPH_CUDA_GRAPHS", "yes", True), ("SYMGRAPH_TF32", "1", True),
    ("SYMGRAPH_DIST_TIMEOUT", "2.5", 2.5), ("SYMGRAPH_CUDNN", "legacy-not", None),
    ("SYMGRAPH_CUDNN_API", "legacy", "legacy"), ("SYMGRAPH_DIST_TIMEOUT", "nan", None),
    ("SYMGRAPH_DIST_TIMEOUT", "inf", None), ("SYMGRAPH_DIST_TIMEOUT", "-5", None),
    ("SYMGRAPH_DIST_TIMEOUT", "abc", None), ("SYMGRAPH_DEBUG", "high", None),
    ("SYMGRAPH_NHWC", "2", None)])
def test_values_parse_or_are_refused_by_name(monkeypatch: pytest.MonkeyPatch, name: str,
                                             text: str, value: object) -> None:
    monkeypatch.setenv(name, text)
    if value is None:
        with pytest.raises(sg.AttrError, match=f"{name}={text!r}"):
            config.get(name)
    else:
        assert config.get(name) == value


def test_unknown_setting_and_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(sg.AttrError, match="SYMGRAPH_NOPE"):
        config.get("SYMGRAPH_NOPE")
    for name in config.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert config.get("SYMGRAPH_CUDA_GRAPHS") is True and config.get("SYMGRAPH_DEBUG") == 0
    assert all(name in config.describe() for name in config.SETTINGS)


def test_debug_level_reaches_the_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_DEBUG", "1")
    from symgraph.compiler import passes
    assert passes.debug_level() == 1


def test_is_set_tells_a_given_value_from_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMGRAPH_CPU", raising=False)
    assert not config.is_set("SYMGRAPH_CPU")
    monkeypatch.setenv("SYMGRAPH_CPU", "")
    assert not config.is_set("SYMGRAPH_CPU")  # empty is unset, as get() reads it
    monkeypatch.setenv("SYMGRAPH_CPU", "compiled")
    assert config.is_set("SYMGRAPH_CPU")
    with pytest.raises(AttrError, match="unknown setting"):
        config.is_set("SYMGRAPH_NOT_A_SETTING")
