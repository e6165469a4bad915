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

from tests.docs.pages import ROOT, runnable_code, tutorial_pages

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


@pytest.mark.parametrize("page", tutorial_pages(), ids=lambda p: p.stem)
def test_tutorial_runs_as_written(page: Path, tmp_path: Path) -> None:
    missing = _missing(page)
    if missing:
        pytest.skip(f"{page.name} needs {', '.join(missing)}")
    for rel in FILES.get(page.name, ()):
        shutil.copy(ROOT / "tests" / "data" / rel, tmp_path)
    script = tmp_path / f"tutorial_{page.stem}.py"  # onnx.py would shadow onnx
    script.write_text(runnable_code(page))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{page.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"


def test_every_tutorial_page_has_code() -> None:
    """A tutorial without runnable code would pass the test above by not being tested."""
    pages = {p.name for p in tutorial_pages()}
    listed = {p.name for p in (ROOT / "docs" / "tutorials").glob("*.md")} - {"index.md"}
    assert listed <= pages, f"tutorials with no python block: {sorted(listed - pages)}"
