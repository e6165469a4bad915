"""Every tutorial runs as written: its ``python`` blocks, top to bottom, in a fresh process on
the CPU, in an empty folder (files it writes stay there). A page that needs a program or package
the machine lacks (gcc for the compiled custom op, onnxruntime) skips and says which."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.pages import DOCS, ROOT, mxnet_code, runnable_code, tutorial_pages
from tests.test_mxnet_interop import mxnet_python

# page -> (programs, modules) it needs beyond symgraph's own dependencies
NEEDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "custom_ops.md": (("gcc",), ()),
    "onnx.md": ((), ("onnx", "onnxruntime")),
}
# page -> files of tests/data it reads from its working folder (written by MXNet 1.9.1)
FILES: dict[str, tuple[str, ...]] = {
    "mxnet_checkpoints.md": ("mxnet/bn-symbol.json", "mxnet/bn-0001.params",
                             "mxnet/bn-io.params"),
}
TIMEOUT_S = 120


def _missing(page: Path) -> list[str]:
    progs, mods = NEEDS.get(page.name, ((), ()))
    return ([p for p in progs if shutil.which(p) is None]
            + [m for m in mods if importlib.util.find_spec(m) is None])


def run_page(page: Path, folder: Path, python: str = sys.executable, code: str = "") -> str:
    """Run ``code`` (default: the page's python blocks) in ``folder``; returns its stdout."""
    for rel in FILES.get(page.name, ()):
        shutil.copy(ROOT / "tests" / "data" / rel, folder)
    script = folder / f"tutorial_{page.stem}.py"  # onnx.py would shadow onnx
    script.write_text(code or runnable_code(page))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([python, str(script)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, \
        f"{page.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


@pytest.mark.parametrize("page", tutorial_pages(), ids=lambda p: p.stem)
def test_tutorial_runs_as_written(page: Path, tmp_path: Path) -> None:
    missing = _missing(page)
    if missing:
        pytest.skip(f"{page.name} needs {', '.join(missing)}")
    run_page(page, tmp_path)


@pytest.mark.mxnet
def test_mxnet_side_of_the_checkpoint_tutorial(tmp_path: Path) -> None:
    """The page's MXNet 1.9.1 blocks run in MXNet, after (and on the files of) its symgraph
    code: MXNet writes a checkpoint, and reads the one symgraph wrote."""
    exe = mxnet_python()
    if exe is None:
        pytest.skip("MXNet 1.9.1 not available (set SYMGRAPH_MXNET_PYTHON)")
    page = DOCS / "tutorials" / "mxnet_checkpoints.md"
    run_page(page, tmp_path)
    blocks = mxnet_code(page)
    assert len(blocks) == 2
    out = run_page(page, tmp_path, exe, "\n\n".join(blocks))
    assert (tmp_path / "from_mxnet-0001.params").exists()
    assert "conv1_weight" in out and "[[0. 1. 2.]" in out


def test_every_tutorial_page_has_code() -> None:
    """A tutorial without runnable code would pass the test above by not being tested."""
    pages = {p.name for p in tutorial_pages()}
    listed = {p.name for p in (ROOT / "docs" / "tutorials").glob("*.md")} - {"index.md"}
    assert listed <= pages, f"tutorials with no python block: {sorted(listed - pages)}"
