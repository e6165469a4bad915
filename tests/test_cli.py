"""The ``symgraph`` command: viz (SVG or .dot fallback), summary, train on a tiny MNIST subset."""
from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

import symgraph as sg
from symgraph import cli


def _saved(tmp_path):
    x = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=4, name="fc")
    net = sg.sym.SoftmaxOutput(x, name="softmax")
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    return path


def test_viz_svg_or_dot(tmp_path, capsys, monkeypatch):
    pytest.importorskip("graphviz")
    path, out = _saved(tmp_path), tmp_path / "net.svg"
    if shutil.which("dot"):
        assert cli.main(["viz", str(path), "--shape", "data=1,8", "-o", str(out)]) == 0
        root = ET.parse(out).getroot()
        assert root.tag.endswith("svg")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    out2 = tmp_path / "other.svg"
    assert cli.main(["viz", str(path), "--shape", "data=1,8", "-o", str(out2)]) == 0
    note = capsys.readouterr().out.strip().splitlines()[-1]
    assert note.startswith("note: Graphviz 'dot' not found")
    assert not out2.exists()
    assert (tmp_path / "other.dot").read_text().startswith("digraph")


def test_summary_and_errors(tmp_path, capsys):
    path = _saved(tmp_path)
    assert cli.main(["summary", str(path), "--shape", "data=1,8"]) == 0
    assert f"Total params: {8 * 4 + 4}" in capsys.readouterr().out
    assert cli.main(["summary", str(tmp_path / "missing.json"), "--shape", "data=1,8"]) == 2
    assert "error:" in capsys.readouterr().err
    with pytest.raises(Exception, match="NAME=D1"):
        cli.parse_shapes(["data:1,2"])


def test_train_writes_checkpoint(tmp_path, capsys):
    from tests.datasets.test_mnist import _write_set
    data = tmp_path / "data"
    data.mkdir()
    _write_set(data, n=100)  # a small MNIST-format set: the runner end to end, quickly
    prefix = str(tmp_path / "mlp")
    rc = cli.main(["train", "mlp", "--data-dir", str(data), "--epochs", "2",
                   "--prefix", prefix, "--log-every", "1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "mlp: test accuracy" in out and "epoch time" in out
    assert out.count("Validation-accuracy") == 2 and "Speed:" in out
    for name in ("mlp-0001.params", "mlp-0002.params", "mlp-symbol.json"):
        assert (tmp_path / name).exists()


def test_train_missing_data(tmp_path, capsys):
    rc = cli.main(["train", "mlp", "--data-dir", str(tmp_path), "--epochs", "1"])
    assert rc == 2
    assert "not found" in capsys.readouterr().err


def test_import_is_light():
    import subprocess
    import sys
    code = ("import sys, symgraph; print(sorted(m for m in ('graphviz', 'tqdm', 'matplotlib') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert out.stdout.strip() == "[]"
