"""Finding the GPU pieces: pycuda, cuBLAS, cuDNN and NCCL.

The shared libraries are looked up first on the loader's search path (``LD_LIBRARY_PATH``,
ldconfig), then in ``$CUDA_HOME/lib64`` and ``/usr/local/cuda/lib64``, then in the ``nvidia-*``
wheels (``site-packages/nvidia/<pkg>/lib``, what ``pip install 'symgraph[cuda]'`` and PyTorch
install), so a PyTorch user's environment works without a system cuDNN. The toolkit comes first
because it was measured faster: on the H100 the seed CNN's step took 0.222/0.500 ms (batch
64/256) with the wheels PyTorch installs and 0.195/0.405 ms with the CUDA 13 toolkit's libraries
(``docs/performance.md``). ``SYMGRAPH_CUDA_LIBS=wheels`` puts the wheels first.
A library that cannot be found raises :class:`GPUUnavailable`, whose message says which files
were looked for, where, and how to install them. Pure Python: importable without a GPU.
"""
from __future__ import annotations

import ctypes
import os
import site
import sys
from dataclasses import dataclass
from typing import Any, Optional

from ...core import config
from ...core.base import ExecutionError

INSTALL_HINT = "pip install 'symgraph[cuda]'"


class GPUUnavailable(ExecutionError, ImportError):
    """A GPU piece (pycuda or a CUDA library) is missing; also an ImportError, so code that
    probes for the CUDA backend with ``except ImportError`` keeps working."""


@dataclass(frozen=True)
class Library:
    """Where one CUDA library lives: its ``nvidia`` wheel folder, file names (newest first) and
    libraries of the same wheel it needs loaded before it."""

    title: str
    wheel_dir: str
    pip_name: str
    sonames: tuple[str, ...]
    deps: tuple[str, ...] = ()


LIBRARIES = {
    "cublas": Library("cuBLAS", "cublas", "nvidia-cublas-cu12",
                      ("libcublas.so.13", "libcublas.so.12", "libcublas.so"),
                      ("libcublasLt.so.13", "libcublasLt.so.12")),
    "cudnn": Library("cuDNN 9", "cudnn", "nvidia-cudnn-cu12", ("libcudnn.so.9", "libcudnn.so")),
    "nccl": Library("NCCL", "nccl", "nvidia-nccl-cu12", ("libnccl.so.2", "libnccl.so")),
}

_LOADED: dict[str, Any] = {}


def site_dirs() -> list[str]:
    """site-packages folders in search order (virtualenv first, then user, then sys.path)."""
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # old virtualenv's site module
        pass
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return list(dict.fromkeys(d for d in dirs if d))


def wheel_dirs(lib: Library) -> list[str]:
    """``<site-packages>/nvidia/<pkg>/lib`` folders that exist."""
    found = [os.path.join(d, "nvidia", lib.wheel_dir, "lib") for d in site_dirs()]
    return [d for d in found if os.path.isdir(d)]


def system_dirs() -> list[str]:
    """Toolkit folders tried after the loader's own search path."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    dirs = [os.path.join(home, "lib64")] if home else []
    return dirs + ["/usr/local/cuda/lib64"]


def candidates(key: str) -> list[str]:
    """Every path or bare name tried for library ``key``, in order: the loader's path and the
    toolkit first, the wheels last, unless ``SYMGRAPH_CUDA_LIBS=wheels`` puts the wheels first
    (to compare a PyTorch environment's library versions with the toolkit's)."""
    lib = LIBRARIES[key]
    wheels = [os.path.join(d, n) for d in wheel_dirs(lib) for n in lib.sonames]
    system = list(lib.sonames)  # bare names: the dynamic loader's search path
    system += [os.path.join(d, n) for d in system_dirs() for n in lib.sonames]
    if config.get("SYMGRAPH_CUDA_LIBS") == "wheels":
        return wheels + system
    return system + wheels


def _try(path: str) -> Optional[Any]:
    if os.sep in path and not os.path.exists(path):
        return None
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None


def _load_deps(lib: Library, folder: str) -> None:
    # The wheels' libraries find their siblings through RPATH, but older wheels do not: load
    # them from the same folder first so the dynamic loader resolves them by soname.
    for dep in lib.deps:
        if _try(os.path.join(folder, dep)) is not None:
            return


def missing_message(key: str) -> str:
    """The error text for a library that was not found."""
    lib = LIBRARIES[key]
    wheels = [os.path.join(d, "nvidia", lib.wheel_dir, "lib") for d in site_dirs()]
    return (f"{lib.title} not found: looked for {', '.join(lib.sonames)} in the {lib.pip_name} "
            f"wheel ({', '.join(wheels) or 'no site-packages'}), on the loader's path "
            f"(LD_LIBRARY_PATH, ldconfig) and in {', '.join(system_dirs())}; install it with "
            f"{INSTALL_HINT} (or pip install {lib.pip_name})")


def load(key: str, required: bool = True) -> Optional[Any]:
    """Load CUDA library ``key`` (``'cublas'``, ``'cudnn'``, ``'nccl'``) once, in
    :func:`candidates` order.

    Returns the ``ctypes.CDLL``; ``None`` when it is missing and ``required`` is False; raises
    :class:`GPUUnavailable` naming the files and folders searched otherwise."""
    if key in _LOADED:
        return _LOADED[key]
    lib = LIBRARIES[key]
    for path in candidates(key):
        if os.sep in path:
            _load_deps(lib, os.path.dirname(path))
        handle = _try(path)
        if handle is not None:
            _LOADED[key] = handle
            return handle
    if required:
        raise GPUUnavailable(missing_message(key))
    return None


def require_pycuda() -> None:
    """Import pycuda's driver, or raise :class:`GPUUnavailable` saying how to install it."""
    try:
        import pycuda.driver  # noqa: F401
    except ImportError as exc:
        raise GPUUnavailable(
            f"the CUDA backend needs pycuda, which could not be imported ({exc}); install it "
            f"with {INSTALL_HINT} (pycuda also needs the CUDA toolkit's nvcc and an NVIDIA "
            f"driver)") from exc
