"""Loading compiled CPU kernels: one generated module per kernel, cached on disk.

A kernel's module (``render.py``) is written once to ``<cache folder>/cpu/<name>.py``, the
folder of the CUDA modules (``cuda/compiler.cache_dir``: private, 0700), and imported from
there; the name carries a hash of the source, so equal kernels share one file across graphs,
programs and processes. Its function is ``numba.njit(cache=True)``: numba keeps the machine
code next to the module (``__pycache__``), keyed by the argument types and numba's version, so
a second process loads it instead of compiling (:func:`cache_stats` counts both).

The source is written as a file and imported, not passed to ``exec``: numba's disk cache needs
a source file, and the file is what ``SYMGRAPH_DEBUG=2`` shows and a reader can open.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from ...core import config
from ...core.base import ExecutionError
from ...core.fileio import write_bytes
from .render import Kernel

_LOADED: dict[str, Callable] = {}  # kernel name -> numba dispatcher (this process)
PACKAGE = "symgraph_cpu_kernels"
"""The (virtual) package the kernel modules are imported under."""


def kernel_folder() -> Path:
    """Where kernel modules and numba's cache of them live."""
    from ..cuda.compiler import cache_dir  # (pure Python: imports no CUDA library)
    folder = cache_dir() / "cpu"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _written(path: Path, source: str) -> None:
    """``source`` at ``path``, written only when the file differs (rewriting it would change
    its time stamp and make numba's cache of it stale)."""
    try:
        if path.read_text() == source:
            return
    except OSError:
        pass
    write_bytes(path, source.encode())


def load(kernel: Kernel) -> Callable:
    """The numba dispatcher of ``kernel`` (compiled at its first call for the argument types,
    or loaded from numba's disk cache)."""
    found = _LOADED.get(kernel.name)
    if found is not None:
        return found
    try:
        import numba  # noqa: F401  (the module imports it; a clear error first)
    except ImportError:
        raise ExecutionError("SYMGRAPH_CPU=compiled needs numba: pip install numba") from None
    path = kernel_folder() / f"{kernel.name}.py"
    _written(path, kernel.source)
    if config.get("SYMGRAPH_DEBUG") >= 2:
        print(f"--- CPU kernel {path}\n{kernel.source}")
    spec = importlib.util.spec_from_file_location(f"{PACKAGE}.{kernel.name}", path)
    if spec is None or spec.loader is None:
        raise ExecutionError(f"cannot import the CPU kernel module {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[spec.name] = module
    fn = _LOADED[kernel.name] = module.KERNEL
    return fn


def loaded(name: str) -> Optional[Any]:
    """The dispatcher of kernel ``name`` if this process loaded it."""
    return _LOADED.get(name)


def forget() -> None:
    """Drop this process's loaded kernels (tests: the next load reads the disk cache)."""
    for name in _LOADED:
        sys.modules.pop(f"{PACKAGE}.{name}", None)
    _LOADED.clear()


def cache_stats() -> tuple[int, int]:
    """(loaded from numba's disk cache, compiled) over the kernels this process loaded."""
    hits = misses = 0
    for fn in _LOADED.values():
        hits += sum(fn.stats.cache_hits.values())
        misses += sum(fn.stats.cache_misses.values())
    return hits, misses
