"""DataLoader workers that fail are reported at once and by name: a worker process killed by the
OS (not the whole 120 s timeout and a bare TimeoutError), an exception whose constructor takes
two arguments (re-raised with its text, not lost), and two thread-pool loaders never see each
other's dataset."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from symgraph.core.base import ExecutionError
from symgraph.gluon.data import ArrayDataset, DataLoader


class _Dies:
    """Sample 3 kills the worker process that reads it."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> np.ndarray:
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return np.full(2, i, np.float32)


class TwoArgError(Exception):
    def __init__(self, index: int, why: str) -> None:
        super().__init__(f"sample {index}: {why}")
        self.index, self.why = index, why


class _Raises:
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> np.ndarray:
        if i == 2:
            raise TwoArgError(i, "bad JPEG")
        return np.zeros(2, np.float32)


def test_dead_worker_is_reported_promptly_with_its_exit_code() -> None:
    loader = DataLoader(_Dies(), batch_size=2, num_workers=2, timeout=120)
    start = time.monotonic()
    with pytest.raises(ExecutionError, match=r"DataLoader worker .*pid \d+\) died with exit "
                                             r"code -9 \(killed by signal 9\)"):
        list(loader)
    assert time.monotonic() - start < 20


@pytest.mark.parametrize("thread_pool", [False, True])
def test_two_argument_exception_in_a_worker_keeps_its_text(thread_pool: bool) -> None:
    loader = DataLoader(_Raises(), batch_size=2, num_workers=2, thread_pool=thread_pool,
                        timeout=30)
    start = time.monotonic()
    with pytest.raises((TwoArgError, ExecutionError), match="sample 2: bad JPEG"):
        list(loader)
    assert time.monotonic() - start < 20


def test_thread_pool_loaders_keep_their_own_dataset() -> None:
    a = DataLoader(ArrayDataset(np.zeros((64, 3), np.float32)), batch_size=4, num_workers=2,
                   thread_pool=True)
    b = DataLoader(ArrayDataset(np.ones((64, 3), np.float32)), batch_size=4, num_workers=2,
                   thread_pool=True)
    iter_a, iter_b = iter(a), iter(b)  # both pools exist before either finishes
    for batch_a, batch_b in zip(iter_a, iter_b):
        assert not batch_a.asnumpy().any() and batch_b.asnumpy().all()


def test_slow_batch_times_out_with_a_typed_error() -> None:
    class Slow:
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> np.ndarray:
            time.sleep(3)
            return np.zeros(1, np.float32)
    with pytest.raises(ExecutionError, match=r"no batch from the workers within 0.5 s"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, thread_pool=True, timeout=0.5))
