"""Test-wide settings: verify the graph after every pass; poison freed buffers; a fixed seed; the
MNIST folder; ``SYMGRAPH_TEST_SHARD=i/n`` runs one of n interleaved shards (parallel GPU runs)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import threadpoolctl

import symgraph.runtime.backend.numpy_backend
import symgraph.compiler.passes

# BLAS on one thread for the whole run, here and in the processes tests start: the tests check
# values, and OpenBLAS threads spinning against any other busy process on a 2-core machine made
# the run several times slower (the backend's own runs keep their budget,
# runtime/backend/threads.py; tests of that budget set the counts they need themselves).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
threadpoolctl.threadpool_limits(1, user_api="blas")

symgraph.compiler.passes.VERIFY = True
symgraph.runtime.backend.numpy_backend.POISON = True  # reading a freed buffer gives NaN


def _gpu_count() -> int:
    try:
        import pycuda.driver as drv
        drv.init()
        return drv.Device.count()
    except Exception:
        return 0


def _have_gpu() -> bool:
    return _gpu_count() > 0


def pytest_configure(config: pytest.Config) -> None:
    # Without a GPU no compiled kernel runs: the compile checks build device code at -O1, which
    # takes half the time of -O3 (the every-kernel module: 16 against 36 s of CPU)
    if not _have_gpu():
        os.environ.setdefault("SYMGRAPH_NVCC_DEVICE_O", "1")


@pytest.hookimpl(trylast=True)  # after -m/-k deselection, so shards split what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    shard = os.environ.get("SYMGRAPH_TEST_SHARD")  # "i/n": every n-th test from the i-th
    if shard:
        i, n = (int(v) for v in shard.split("/"))
        dropped = [item for k, item in enumerate(items) if k % n != i]
        items[:] = [item for k, item in enumerate(items) if k % n == i]
        config.hook.pytest_deselected(items=dropped)
    if any("gpu" in item.keywords for item in items) and not _have_gpu():
        skip = pytest.mark.skip(reason="needs a CUDA GPU and pycuda")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    if any("multigpu" in item.keywords for item in items) and _gpu_count() < 2:
        skip = pytest.mark.skip(reason="needs at least 2 CUDA GPUs")
        for item in items:
            if "multigpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def mnist_dir() -> Path:
    """The MNIST folder from SYMGRAPH_DATA, else ../shared/data/mnist beside the repo."""
    candidates = [os.environ.get("SYMGRAPH_DATA"),
                  Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"]
    for c in candidates:
        if c and (Path(c) / "train-images-idx3-ubyte.gz").exists():
            return Path(c)
    pytest.skip(f"MNIST not found in SYMGRAPH_DATA ({candidates[0] or 'unset'}) nor in "
                f"{candidates[1]}: set SYMGRAPH_DATA to a folder holding the MNIST files")
