"""The documentation site, built once per test session for the build and browser tests.

Sphinx, MyST and Furo come with the ``docs`` extra (and the ``test`` extra); without them the
tests that need the site skip, naming the extra, except under CI (``CI=true``), where a missing
tool is a failure, so the site is always checked there.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.pages import DOCS, ROOT
from tests.run_once import shared_build

SPHINX_MODULES = ("sphinx", "myst_parser", "furo")
BUILD_TIMEOUT_S = 600


def require(missing: list[str], what: str) -> None:
    """Skip (or, in CI, fail) when ``missing`` is not empty."""
    if not missing:
        return
    msg = f"{what} needs {', '.join(missing)}"
    if os.environ.get("CI") == "true":
        pytest.fail(msg + " (CI installs them: .ci/run)")
    pytest.skip(msg)


def _build_site(out: Path) -> tuple[int, str]:
    """(return code, output) of ``sphinx-build -W`` over a copy of docs/ into ``out/html``."""
    # a copy of the sources: the build writes the operator pages into its source folder, and
    # test runs in parallel processes must not write into the checkout's docs/ at once
    src = out / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "ops", "__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / "doctrees"), str(src), str(out / "html")],
        env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(html folder, Sphinx's output) of ``sphinx-build -W`` over docs/, once per test run
    (the build and browser tests may run in different xdist workers)."""
    missing = [m for m in SPHINX_MODULES if importlib.util.find_spec(m) is None]
    require([f"{m} (pip install -e '.[docs]')" for m in missing], "building the docs")
    out, (code, log) = shared_build(tmp_path_factory, "site", _build_site)
    assert code == 0, f"sphinx-build -W failed:\n{log[-9000:]}"
    return out / "html", log
