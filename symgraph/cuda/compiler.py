"""One module per compiled graph: one ``nvcc --cubin`` call, cached on disk.

The cache key hashes the module source, the target architecture, the compiler options and the
identity of the nvcc binary (its resolved path, size and modification time: reading the version
would itself run nvcc). Cache files live in ``$SYMGRAPH_CACHE_DIR`` or ``~/.cache/symgraph`` and
are written atomically, so concurrent processes never see a partial cubin. ``NVCC_CALLS`` counts
compilations in this process; ``SYMGRAPH_NVCC_LOG=<file>`` appends one line per call (tests use it
to prove that a warm second process never runs nvcc).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from ..base import ExecutionError
from .codegen import Rendered

OPTIONS = ("-O3", "-std=c++17")
NVCC_CALLS = 0

PRELUDE = """// symgraph generated module. Kernels take (outputs..., inputs..., long long n).
#include <math.h>
"""


def module_source(kernels: Sequence[Rendered]) -> str:
    """All kernels in one translation unit; kernels and helpers each emitted once (their names
    carry a hash of their body, so equal names mean equal code)."""
    helpers: dict[str, str] = {}
    seen: dict[str, str] = {}
    for k in kernels:
        for name, src in k.helpers:
            helpers.setdefault(name, src)
        seen.setdefault(k.name, k.source)
    return PRELUDE + "\n".join(list(helpers.values()) + list(seen.values()))


def cache_dir() -> Path:
    d = os.environ.get("SYMGRAPH_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                              "symgraph")
    return Path(d)


def find_nvcc() -> str | None:
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return os.path.realpath(cand)
    return None


def cache_key(source: str, arch: str, nvcc: str, options: Sequence[str] = ()) -> str:
    st = os.stat(nvcc)
    ident = f"{nvcc}|{st.st_size}|{st.st_mtime_ns}|{arch}|{' '.join((*OPTIONS, *options))}"
    return hashlib.sha256((ident + "\n" + source).encode()).hexdigest()


def numbered(source: str) -> str:
    """``source`` with line numbers, as compile errors show it."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i + 1:>{width}} | {line}" for i, line in enumerate(lines))


def run_nvcc(source: str, arch: str, nvcc: str, options: Sequence[str] = ()) -> bytes:
    """Compile ``source`` to a cubin; errors show the numbered source and nvcc's message."""
    global NVCC_CALLS
    NVCC_CALLS += 1
    log = os.environ.get("SYMGRAPH_NVCC_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {arch}\n")
    with tempfile.TemporaryDirectory(prefix="symgraph-nvcc-") as tmp:
        src, out = os.path.join(tmp, "module.cu"), os.path.join(tmp, "module.cubin")
        with open(src, "w") as f:
            f.write(source)
        cmd = [nvcc, "--cubin", f"-arch={arch}", *OPTIONS, *options, "-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ExecutionError(f"nvcc failed ({' '.join(cmd)}):\n{proc.stderr}\n"
                                 f"generated source:\n{numbered(source)}")
        with open(out, "rb") as f:
            return f.read()


def compile_module(source: str, arch: str, options: Sequence[str] = ()) -> bytes:
    """The cubin for ``source`` on ``arch`` (e.g. ``sm_90``), from the cache when possible;
    ``options`` are extra nvcc flags (``sg.rtc`` users' own)."""
    if os.environ.get("SYMGRAPH_DEBUG", "0") >= "2":
        print(f"// ---- symgraph CUDA module ({arch}) ----\n{numbered(source)}", file=sys.stderr)
    nvcc = find_nvcc()
    if nvcc is None:
        raise ExecutionError("nvcc not found on PATH or in /usr/local/cuda/bin: the CUDA backend "
                             "compiles its kernels with it")
    path = cache_dir() / f"{cache_key(source, arch, nvcc, options)}.cubin"
    if path.exists():
        return path.read_bytes()
    cubin = run_nvcc(source, arch, nvcc, options)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(cubin)
    os.replace(tmp, path)
    return cubin
