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
    # Without a GPU no compiled kernel runs: the compile checks build device code at -O0, which
    # takes about half the CPU of -O3 (the bfloat16 module: 20 against 36 s; -O1: 23 s). ptxas
    # still assembles every kernel, so inline PTX is checked as at -O3.
    if not _have_gpu():
        os.environ.setdefault("SYMGRAPH_NVCC_DEVICE_O", "0")


# How many workers ``-n auto`` (pyproject's addopts) starts: none for one test file (--dist
# loadfile would give it all to one worker anyway), else one per CPU the run may use (each test
# runs BLAS on one thread, so logical CPUs count, where xdist's own rule counts physical cores),
# with a GPU at most 4, as the GPU tests share one device and are measured with 4 processes at
# once. PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides (xdist's own rule reads it).
GPU_WORKERS = 4


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    files = {str(arg).split("::")[0] for arg in config.args}
    if len(files) == 1 and os.path.isfile(files.pop()):
        return 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpus = min(cpus or 1, GPU_WORKERS) if _have_gpu() else (cpus or 1)
    return cpus if cpus > 1 else 0


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
