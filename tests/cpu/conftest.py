"""The compiled CPU backend's tests: ``compiled`` runs a test with ``SYMGRAPH_CPU=compiled``
and one kernel cache folder for the whole session (numba compiles each kernel once)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

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


@pytest.fixture
def dnnl(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """oneDNN loaded afresh (``runtime/cpu/onednn.py``); skipped, naming the wheel, where it
    is not installed."""
    from symgraph.runtime.cpu import onednn
    monkeypatch.delenv("SYMGRAPH_ONEDNN", raising=False)
    onednn._load.cache_clear()
    if onednn.library() is None:
        pytest.skip(f"oneDNN is not available: {onednn.why_not()} "
                    f"(pip install {onednn.DIST})")
    yield
    onednn._load.cache_clear()


@pytest.fixture
def no_onednn(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``SYMGRAPH_ONEDNN=0``: the compiled backend's own convolution and pooling kernels."""
    from symgraph.runtime.cpu import onednn
    monkeypatch.setenv("SYMGRAPH_ONEDNN", "0")
    onednn._load.cache_clear()
    yield
    onednn._load.cache_clear()
