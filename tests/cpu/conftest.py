"""The compiled CPU backend's tests: ``compiled`` runs a test with ``SYMGRAPH_CPU=compiled``
and one kernel cache folder for the whole session (numba compiles each kernel once)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("numba")
    folder = tmp_path_factory.mktemp("kernels")
    folder.chmod(0o700)
    return folder


@pytest.fixture
def compiled(kernel_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SYMGRAPH_CPU=compiled with the session's kernel cache, every group compiled however
    small; returns the cache folder."""
    from symgraph.runtime.cpu import backend
    monkeypatch.setattr(backend, "MIN_ELEMENTS", 0)
    monkeypatch.setenv("SYMGRAPH_CPU", "compiled")
    monkeypatch.setenv("SYMGRAPH_CACHE_DIR", str(kernel_cache))
    return kernel_cache
