"""Packaging: the wheel installs into a fresh venv and trains from an unrelated folder.

The venv shares the system site-packages (numpy, networkx) so nothing is downloaded; the wheel
is installed without dependencies. PYTHONPATH is cleared so the worktree cannot be imported.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SYMGRAPH_DATA")}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    src = out / "src"  # setuptools builds in the source tree: keep the checkout clean
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "out"))
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", out, src], cwd=out)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = out.glob("symgraph-*.whl")
    return whl


def test_wheel_contents(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in ("symgraph/py.typed", "symgraph/frontend/symbol.pyi",
                 "symgraph/runtime/ndarray.pyi",
                 "symgraph/interop/models/custom_add.c",
                 "symgraph/interop/models/custom_add.cu",
                 "symgraph/interop/models/runner.py",
                 "symgraph/runtime/cuda/libs.py"):
        assert want in names, want
    # a top-level ``models`` package would shadow users' own models/ folders
    assert not any(n.startswith("models/") for n in names)


def test_wheel_trains_mlp_from_another_folder(wheel: Path, tmp_path: Path,
                                              mnist_dir: Path) -> None:
    venv = tmp_path / "venv"
    r = _run([sys.executable, "-m", "venv", "--system-site-packages", venv], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    py, exe = venv / "bin" / "python", venv / "bin" / "symgraph"
    r = _run([py, "-m", "pip", "install", "--no-deps", "--no-index", wheel], cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp_path / "elsewhere"
    (work / "models").mkdir(parents=True)  # a user's own models/ folder must not matter
    r = _run([py, "-c", "import symgraph, symgraph.interop.models.runner; print(symgraph.__file__)"],
             cwd=work)
    assert r.returncode == 0 and str(venv) in r.stdout, r.stdout + r.stderr
    r = _run([exe, "train", "mlp", "--epochs", "2", "--num-train", "5000", "--num-test", "500",
              "--data-dir", mnist_dir, "--log-every", "1000"], cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mlp: test accuracy" in r.stdout, r.stdout
    acc = float(r.stdout.split("test accuracy")[1].split("%")[0])
    assert acc > 70.0, r.stdout
    # the README's first example, as a user pastes it, against the installed package
    readme = (ROOT / "README.md").read_text()
    snippet = readme.split("```python\n", 1)[1].split("```", 1)[0]
    r = _run([py, "-c", snippet], cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "'fc1_weight': (128, 784)" in r.stdout and "(128, 784)" in r.stdout.splitlines()[-1]
