"""Test inputs and test scaffolding (``mx.test_utils``): random arrays and shapes, a reference
reduction, the default context, MNIST/CIFAR-10 access, ``DummyIter``, and the ``environment``,
``retry`` and ``discard_stderr`` helpers.

Random values come from numpy's global generator, as MXNet's do, so a test's seed decides them.

Example::

    >>> from symgraph.interop.test_utils import environment, rand_shape_nd
    >>> len(rand_shape_nd(3, dim=4))
    3
    >>> with environment("SYMGRAPH_DEBUG", "0"):
    ...     pass
"""
from __future__ import annotations

import contextlib
import functools
import os
import platform
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.base import AttrError, DataError
from ...core.context import Context, current_context, set_current_context
from ...training.io import DataBatch, DataIter, MNISTIter
from ...runtime.ndarray import NDArray, array
from ...core.util import get_gpu_count, setenv

Shape = tuple[int, ...]


def default_context() -> Context:
    """The context tests run on: the thread's default (``with ctx:`` or
    :func:`set_default_context`), the CPU unless changed."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` this thread's default context (what ``sg.nd`` and the checks use)."""
    if not isinstance(ctx, Context):
        raise AttrError(f"set_default_context: expected a Context, got {ctx!r}")
    set_current_context(ctx)


def list_gpus() -> range:
    """The ids of the visible GPUs (empty without one)."""
    return range(get_gpu_count())


def is_aarch64_run() -> bool:
    """Whether this machine is 64-bit ARM (MXNet's tests skip some cases there).

    Example: ``is_aarch64_run()`` is False on an x86-64 machine."""
    return "aarch64" in platform.machine()


def random_arrays(*shapes: Sequence[int]) -> Union[np.ndarray, list[np.ndarray]]:
    """Standard-normal float32 arrays of ``shapes`` (one array when one shape is given)."""
    arrays = [np.asarray(np.random.randn(*s), dtype=np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes: Sequence[int], low: float = 0.0, high: float = 1.0,
                          dtype: Any = np.float32) -> list[np.ndarray]:
    """Uniform arrays on ``[low, high)`` of ``shapes`` (always a list)."""
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population: Sequence[Any], k: int) -> list[Any]:
    """``k`` distinct elements of ``population`` in random order."""
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} outside [0, {len(population)}]")
    chosen = list(population)
    np.random.shuffle(chosen)
    return chosen[:k]


def rand_ndarray(shape: Sequence[int], stype: str = "default", density: Optional[float] = None,
                 dtype: Any = None, modifier_func: Any = None, shuffle_csr_indices: bool = False,
                 distribution: Any = None, ctx: Optional[Context] = None) -> NDArray:
    """A standard-normal NDArray of ``shape`` on ``ctx`` (default float32). Only dense
    storage exists in symgraph: another ``stype`` is an AttrError."""
    if stype != "default":
        raise AttrError(f"rand_ndarray: stype={stype!r} is sparse storage, which symgraph "
                        f"does not have; only 'default'")
    values = np.asarray(np.random.randn(*shape), dtype=np.float32)
    return array(values, ctx or default_context(), dtype or np.float32)


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False) -> Shape:
    """A random 2-d shape, each dimension in ``[1, dim]`` (``[0, dim]`` with zero sizes)."""
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10,
                  allow_zero_size: bool = False) -> Shape:
    """A random 3-d shape, each dimension in ``[1, dim]`` (``[0, dim]`` with zero sizes)."""
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, d + 1) for d in (dim0, dim1, dim2))


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False) -> Shape:
    """A random ``num_dim``-d shape, each dimension in ``[1, dim]`` (or from 0)."""
    return tuple(np.random.randint(0 if allow_zero_size else 1, dim + 1, size=num_dim))


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int) -> tuple[int, int]:
    """A random integer point of ``[x_low, x_high) x [y_low, y_high)``."""
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def np_reduce(dat: np.ndarray, axis: Any, keepdims: bool,
              numpy_reduce_func: Callable[..., np.ndarray]) -> np.ndarray:
    """Reduce ``dat`` over ``axis`` (an int, a sequence or None for all) with a one-axis
    numpy reduction such as ``np.sum``, applied axis by axis from the last."""
    axes = [axis] if isinstance(axis, int) else \
        list(range(dat.ndim)) if axis is None else list(axis)
    axes = sorted(a % dat.ndim for a in axes) if dat.ndim else []
    out = dat
    for a in reversed(axes):
        out = numpy_reduce_func(out, axis=a)
    if keepdims:
        out = np.asarray(out).reshape([1 if i in axes else n for i, n in enumerate(dat.shape)])
    return out


class DummyIter(DataIter):
    """Yields the first batch of ``real_iter`` forever (for timing a model without I/O)."""

    def __init__(self, real_iter: DataIter) -> None:
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self._data_desc = real_iter.provide_data
        self._label_desc = real_iter.provide_label
        self.the_batch: DataBatch = next(real_iter)

    @property
    def provide_data(self) -> list:
        return self._data_desc

    @property
    def provide_label(self) -> list:
        return self._label_desc

    def next(self) -> DataBatch:
        return self.the_batch

    def reset(self) -> None:
        """Nothing to rewind: the same batch comes back."""


def get_mnist_iterator(batch_size: int, input_shape: Sequence[int], num_parts: int = 1,
                       part_index: int = 0, path: Optional[str] = None) -> tuple[MNISTIter, ...]:
    """``(train, val)`` MNIST iterators; ``input_shape`` of 3 dimensions gives ``(N, 1, 28,
    28)`` batches, else flat ``(N, 784)``. Files come from ``path``, ``$SYMGRAPH_DATA`` or
    ``~/.symgraph/datasets/mnist`` (downloaded when missing and a network is there)."""
    from ...training.datasets.mnist import FILES, find_mnist
    from ...gluon.data.vision.datasets import check_files, default_root
    folder = Path(os.path.expanduser(path)) if path is not None else default_root("mnist")
    iters = []
    for split in ("train", "test"):
        check_files(folder, split, who="get_mnist_iterator", param="path")
        iters.append(MNISTIter(str(find_mnist(folder, FILES[f"{split}_images"])),
                               str(find_mnist(folder, FILES[f"{split}_labels"])), batch_size,
                               shuffle=split == "train", flat=len(input_shape) != 3,
                               num_parts=num_parts, part_index=part_index))
    return tuple(iters)


CIFAR_FILES = ("train.rec", "test.rec", "train.lst", "test.lst")


def get_cifar10(path: str = "data/cifar") -> str:
    """The folder holding CIFAR-10 as RecordIO (``train.rec``, ``test.rec`` and their
    ``.lst``), as MXNet's ``get_cifar10`` leaves it. symgraph does not download it: missing
    files are a DataError naming them (``sg.gluon.data.vision.CIFAR10`` reads the binary
    release instead)."""
    missing = [f for f in CIFAR_FILES if not (Path(path) / f).is_file()]
    if missing:
        raise DataError(f"get_cifar10: {missing} missing in {Path(path).resolve()}; put MXNet's "
                        f"cifar10.zip (data.mxnet.io/mxnet/data/cifar10.zip) there, unpacked")
    return path


@contextlib.contextmanager
def environment(*args: Any) -> Iterator[None]:
    """Set environment variables for the ``with`` block, restoring them afterwards (also on
    an exception): ``environment(name, value)`` or ``environment({name: value, ...})``; a
    value of None unsets the variable."""
    if len(args) == 2:
        changes: Mapping[str, Optional[str]] = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], Mapping):
        changes = args[0]
    else:
        raise ValueError(f"environment: expected (name, value) or a dict, got {args!r}")
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            setenv(k, v)
        yield
    finally:
        for k, v in saved.items():
            setenv(k, v)


def retry(n: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for stochastic tests: run up to ``n`` times until no AssertionError."""
    if n <= 0:
        raise ValueError(f"retry: n={n} must be positive")

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for i in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if i == n - 1:
                        raise
        return wrapper
    return decorate


@contextlib.contextmanager
def discard_stderr() -> Iterator[None]:
    """Send what is written to file descriptor 2 (C code's messages too) to the null device
    for the ``with`` block."""
    fd = 2  # the descriptor itself: sys.stderr may be a Python-level capture of it
    sys.stderr.flush()
    saved, null = os.dup(fd), os.open(os.devnull, os.O_WRONLY)  # the null device: no file
    try:
        os.dup2(null, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)
