"""Expensive session artefacts built once per test run, also when pytest-xdist runs the tests in
several worker processes (each worker has its own session, so a session fixture alone would
build the artefact once per worker).

Under xdist the first worker to ask builds into a folder shared by the run's workers, holding an
exclusive lock; the others wait for it and reuse the folder. Without xdist the folder is the
session's own temporary folder.

Example::

    @pytest.fixture(scope="session")
    def site(tmp_path_factory):
        return shared_build(tmp_path_factory, "site", lambda out: build_site(out))
"""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    # xdist gives each worker <run folder>/popen-gwN as its base: the parent is this run's alone
    # (without xdist the parent is every run's, so the session's own folder is used instead)
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_build(factory: pytest.TempPathFactory, name: str,
                 build: Callable[[Path], Any]) -> tuple[Path, Any]:
    """(folder, result) of ``build(folder)``, run once per test run under the name ``name``.

    ``result`` must be JSON-serialisable: the workers that did not build read it back. An
    exception in ``build`` is not cached: the next worker to ask tries again.
    """
    root = _shared_root(factory)
    folder, done = root / f"shared-{name}", root / f"shared-{name}.json"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.exists():
            return folder, json.loads(done.read_text())
        folder.mkdir(exist_ok=True)
        result = build(folder)
        done.write_text(json.dumps(result))
        return folder, result
