"""The ``symgraph`` command: viz (SVG or .dot fallback), summary, train on a tiny MNIST subset."""
from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

import symgraph as sg
from symgraph.interop import cli


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
    assert note.startswith("note: Graphviz's 'dot' program not found (install the system "
                           "package graphviz: apt install graphviz")
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


# -- argparse front end: --help everywhere, one-line errors in CLI syntax, exit 2 ---------------

COMMANDS = ("train", "bench", "viz", "summary")


def _exit(argv, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


@pytest.mark.parametrize("argv", [["--help"]] + [[c, "--help"] for c in COMMANDS])
def test_help_on_every_command(argv, capsys):
    code, out, err = _exit(argv, capsys)
    assert code == 0 and err == ""
    assert out.startswith(f"usage: symgraph{' ' + argv[0] if len(argv) > 1 else ''} ")
    if argv[0] == "train":
        for flag in ("--download", "--epochs", "--batch-size", "--num-train", "MODEL"):
            assert flag in out


def test_version(capsys):
    code, out, _ = _exit(["--version"], capsys)
    assert code == 0 and out.strip() == f"symgraph {sg.__version__}"


@pytest.mark.parametrize("argv, words", [
    (["train", "nosuch"], ["symgraph train: error:", "invalid choice: 'nosuch'", "'mlp'"]),
    (["train"], ["symgraph train: error:", "MODEL"]),
    (["train", "mlp", "--epochs", "0"], ["--epochs", "positive integer, got 0"]),
    (["viz", "g.json", "-o", "out.xyz"], ["symgraph viz: error:", "-o/--output",
                                          "'xyz'", ".svg", ".png"]),
    (["bench", "mlp", "--batch-size", "-1"], ["symgraph bench: error:", "--batch-size",
                                              "positive integer, got -1"]),
    (["summary", "g.json", "--shape", "data:1,784"], ["--shape", "'data:1,784'",
                                                      "--shape data=1,784"]),
    (["summary", "g.json"], ["symgraph summary: error:", "--shape data=1,784"]),
    (["viz", "g.json", "--compiled"], ["symgraph viz: error:", "--compiled",
                                       "--shape data=1,784"]),
    (["nosuch"], ["symgraph: error:", "invalid choice"]),
    (["train", "mlp", "--kv-store", "nosuch"], ["--kv-store", "invalid choice: 'nosuch'",
                                                 "'dist_sync'"]),
    (["train", "mlp", "--amp", "fp8"], ["--amp", "invalid choice: 'fp8'", "'bf16'"]),
])
def test_bad_arguments_one_error_line(argv, words, capsys):
    code, out, err = _exit(argv, capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "Traceback" not in err and "shape={" not in err


def test_console_script_no_traceback(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "symgraph", "bench", "mlp", "--batch-size", "-1"],
                       capture_output=True, text=True, cwd=tmp_path,
                       env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "symgraph bench: error: argument --batch-size: must be a positive integer, got -1 "
        "(see symgraph bench --help)"]


def test_runtime_errors_name_the_flag(tmp_path, capsys):
    path = _saved(tmp_path)
    # FullyConnected cannot decide the weight's input size without the data shape
    x = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=4, name="fc")
    partial = tmp_path / "p.json"
    x.save(str(partial))
    assert cli.main(["viz", str(partial), "--compiled", "--shape", "fc_bias=4",
                     "-o", str(tmp_path / "p.dot")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symgraph viz: error: ShapeError: ") and "'data'" in err
    assert "--shape NAME=D1,D2" in err
    assert "infer_shape" not in err
    assert cli.main(["train", "mlp", "--data-dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "--download" in err and len(err.strip().splitlines()) == 1
    assert path.exists()


def test_download_without_network(tmp_path, capsys, monkeypatch):
    import urllib.error
    import urllib.request

    def offline(url, *a, **k):
        raise urllib.error.URLError("no network here")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    rc = cli.main(["train", "mlp", "--download", "--data-dir", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 2 and "could not fetch MNIST" in err and "no network here" in err
    # one line naming what was fetched from where into which folder
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sg.datasets.mnist.DEFAULT_URL in err and str(tmp_path / "m") in err
    assert not any((tmp_path / "m").iterdir())  # nothing half-written


def test_download_then_train(tmp_path, capsys, monkeypatch):
    import urllib.request
    from tests.datasets.test_mnist import _mirror
    src = _mirror(tmp_path, monkeypatch)  # fake files with matching checksums
    served = []

    def from_mirror(url, *a, **k):
        served.append(url)
        return open(src / url.rsplit("/", 1)[1], "rb")
    monkeypatch.setattr(urllib.request, "urlopen", from_mirror)
    dest = tmp_path / "mnist"
    rc = cli.main(["train", "mlp", "--download", "--data-dir", str(dest), "--epochs", "1"])
    out = capsys.readouterr().out
    assert rc == 0 and len(served) == 4 and "mlp: test accuracy" in out
    assert out.count("Validation-accuracy") == 1  # the test set is scored once per epoch


def _fc_relu(tmp_path):
    x = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=4, name="fc1")
    x = sg.sym.Activation(x, act_type="relu", name="relu1")
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(x, num_hidden=3, name="fc2"), name="sm")
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    return path


def test_viz_compiled_titles_and_weight_shapes(tmp_path, capsys):
    pytest.importorskip("graphviz")
    path, out = _fc_relu(tmp_path), tmp_path / "net.dot"
    assert cli.main(["viz", str(path), "--compiled", "--shape", "data=2,8", "--show-weights",
                     "-o", str(out)]) == 0
    src = out.read_text()
    assert "fc1 (FullyConnected) + relu1 (Activation)" in src  # user-level, not fused_...
    assert "fused: 2 ops" in src and 'label="fused_' not in src
    assert 'label="4x8"' in src  # fc1_weight is (4, 8): the whole shape, not 8
    assert 'label=8' in src or 'label="8"' in src  # data (2, 8): batch axis dropped


def test_viz_png_resolution(tmp_path, monkeypatch):
    graphviz = pytest.importorskip("graphviz")
    seen = {}
    monkeypatch.setattr(graphviz.Digraph, "pipe",
                        lambda self, format: seen.setdefault("src", self.source) and b"PNG")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/dot")
    out = tmp_path / "net.png"
    assert cli.main(["viz", str(_fc_relu(tmp_path)), "-o", str(out)]) == 0
    assert "dpi=150" in seen["src"] and out.read_bytes() == b"PNG"
    assert cli.main(["viz", str(_fc_relu(tmp_path)), "-o", str(out), "--dpi", "300"]) == 0


def test_train_scores_the_test_set_once_per_epoch(tmp_path, capsys, monkeypatch):
    from tests.datasets.test_mnist import _write_set
    from symgraph.training.base_module import BaseModule
    _write_set(tmp_path, n=60)
    calls = []
    real = BaseModule.score

    def counting(self, eval_data, *a, **k):
        calls.append(getattr(eval_data, "num_data", None))
        return real(self, eval_data, *a, **k)
    monkeypatch.setattr(BaseModule, "score", counting)
    assert cli.main(["train", "mlp", "--data-dir", str(tmp_path), "--epochs", "2"]) == 0
    assert calls == [58, 58]  # the 58 test images, once after each epoch
    out = capsys.readouterr().out
    last = [line for line in out.splitlines() if "Validation-accuracy" in line][-1]
    reported = float(out.split("test accuracy ")[1].split("%")[0])
    assert reported == pytest.approx(float(last.split("=")[1]) * 100, abs=0.01)


def test_shape_of_no_input_is_a_usage_error(tmp_path, capsys):
    """``--shape`` naming no input of the graph: one error line listing the inputs, exit 2
    (the library alone ignores unknown names and leaves the table's shapes unknown)."""
    path = _fc_relu(tmp_path)
    for argv in (["summary", str(path), "--shape", "dta=2,8"],
                 ["viz", str(path), "--shape", "dta=2,8", "--compiled", "-o",
                  str(tmp_path / "x.dot")]):
        code, out, err = _exit(argv, capsys)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert "--shape dta=2,8" in err and "no input 'dta'" in err and "data" in err
    assert not (tmp_path / "x.dot").exists()


def test_prefix_folder_is_checked_before_training(tmp_path, capsys, monkeypatch):
    from tests.datasets.test_mnist import _write_set
    from symgraph.training.base_module import BaseModule
    _write_set(tmp_path, n=60)
    monkeypatch.setattr(BaseModule, "fit", lambda *a, **k: pytest.fail("trained"))
    prefix = tmp_path / "missing" / "mlp"
    assert cli.main(["train", "mlp", "--data-dir", str(tmp_path), "--prefix", str(prefix)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symgraph train: error: DataError: --prefix ")
    assert str(tmp_path / "missing") in err and not (tmp_path / "missing").exists()


def test_no_data_folder_hint_in_flag_syntax(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SYMGRAPH_DATA", raising=False)
    for argv in (["train", "mlp"], ["train", "mlp", "--download"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.strip() == ("symgraph train: error: DataError: no MNIST folder: give "
                               "--data-dir DIR (or set SYMGRAPH_DATA); add --download to "
                               "fetch MNIST into it")
    assert cli.main(["train", "mlp", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "add --download" in err and "data_dir=" not in err and "sg.datasets" not in err
