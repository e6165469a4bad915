"""One ``nvcc --cubin`` call per module source, cached on disk (a large program's module is split
into several sources compiled at once: ``module_parts``).

The cache key hashes the module source, the target architecture, the compiler options and the
identity of the nvcc binary (its resolved path, size and modification time: reading the version
would itself run nvcc). ``NVCC_CALLS`` counts compilations in this process;
``SYMGRAPH_NVCC_LOG=<file>`` appends one line per call (tests use it to prove that a warm second
process never runs nvcc).

The cache is trusted only as far as it can be: it lives in ``$SYMGRAPH_CACHE_DIR`` or
``~/.cache/symgraph``, created 0700; a folder that is not ours or that others can write to is
refused with a warning and a private folder is used instead (anyone who can write there could
plant a cubin that the GPU would run). Each entry is ``MAGIC + sha256(cubin) + cubin``, written
through ``fileio.atomic_write`` (no partial file, no ``.tmp`` left); an entry whose hash does not
match (truncated, empty, overwritten) is ignored and recompiled, never loaded.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Callable, Optional, Sequence

from ...core import config
from ...core.base import DataError, ExecutionError
from ...core.fileio import write_bytes
from .codegen import Rendered

OPTIONS = ("-O3", "-std=c++17")
NVCC_CALLS = 0
_COUNT_LOCK = threading.Lock()  # the parts of one module are compiled from several threads

PRELUDE = """// symgraph generated module. Kernels take (outputs..., inputs..., long long n).
#include <math.h>
// Every element read is sg_ld(x): a float for every float storage type (the narrow types'
// overloads come with the kernels that use them); sg_pack is the 16-byte vector of lanes.
__device__ __forceinline__ float sg_ld(float v) { return v; }
template <class T, int N> struct alignas(sizeof(T) * N) sg_pack { T v[N]; };
// digamma (the expr primitive `digamma`): reflection below 1/2, the recurrence up to 6, then
// the asymptotic series (relative error below 1e-9 in double, float rounding here).
__device__ __forceinline__ float sg_digamma(float x) {
    float acc = 0.f;
    if (x < 0.5f) { acc = -3.14159265358979f / tanf(3.14159265358979f * x); x = 1.f - x; }
    while (x < 6.f) { acc -= 1.f / x; x += 1.f; }
    const float r = 1.f / (x * x);
    return acc + logf(x) - 0.5f / x
        - r * (1.f / 12 - r * (1.f / 120 - r * (1.f / 252 - r * (1.f / 240 - r / 132))));
}
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


CACHE_MAGIC = b"SGCUBIN1"
MAX_ENTRY = 1 << 30
_CHECKED: dict[str, Path] = {}


def _not_private(folder: Path) -> Optional[str]:
    """Why ``folder`` may not hold the cache (None if it is ours and only ours to write)."""
    try:
        st = os.stat(folder)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"belongs to user id {st.st_uid}, not to this user ({os.getuid()})"
    if st.st_mode & 0o022:
        return f"has mode {stat.S_IMODE(st.st_mode):o}: other users can write to it"
    return None


def _make_private(folder: Path) -> Optional[str]:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot be created ({exc.strerror})"
    return _not_private(folder)


def cache_dir() -> Path:
    """The cache folder: ``$SYMGRAPH_CACHE_DIR`` or ``~/.cache/symgraph`` when it is private,
    else (with a warning naming the folder and the reason) a private fallback."""
    wanted = Path(config.get("SYMGRAPH_CACHE_DIR") or
                  os.path.join(os.path.expanduser("~"), ".cache", "symgraph"))
    problem = _make_private(wanted)
    if problem is None:
        return wanted
    if str(wanted) in _CHECKED and _not_private(_CHECKED[str(wanted)]) is None:
        return _CHECKED[str(wanted)]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    fallback = Path(tempfile.gettempdir()) / f"symgraph-cache-{uid}"
    if _make_private(fallback) is not None:
        fallback = Path(tempfile.mkdtemp(prefix="symgraph-cache-"))
    warnings.warn(f"symgraph kernel cache {wanted} {problem}; using {fallback} instead",
                  RuntimeWarning, stacklevel=2)
    _CHECKED[str(wanted)] = fallback
    return fallback


def read_entry(path: Path) -> Optional[bytes]:
    """The cubin stored at ``path`` if its hash verifies, else None (missing or damaged)."""
    try:
        if os.stat(path).st_size > MAX_ENTRY:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    head = len(CACHE_MAGIC) + 32
    if len(raw) <= head or not raw.startswith(CACHE_MAGIC):
        return None
    body = raw[head:]
    return body if hashlib.sha256(body).digest() == raw[len(CACHE_MAGIC):head] else None


def cached(key: str, compile_fn: Callable[[], bytes], folder: Optional[Path] = None) -> bytes:
    """The verified cache entry ``key``, or ``compile_fn()`` stored under it. A failed write
    only costs the next process a compilation (warned), never a wrong entry."""
    if not re.fullmatch(r"[0-9a-f]{16,128}", key):
        raise ExecutionError(f"kernel cache key {key!r} is not a hex digest")
    path = (folder or cache_dir()) / f"{key}.cubin"
    body = read_entry(path)
    if body is not None:
        return body
    cubin = compile_fn()
    try:
        write_bytes(path, CACHE_MAGIC + hashlib.sha256(cubin).digest() + cubin)
    except (OSError, DataError) as exc:
        warnings.warn(f"symgraph kernel cache: could not write {path}: {exc}", RuntimeWarning,
                      stacklevel=2)
    return cubin


def nvcc_candidates() -> list[str]:
    """Where nvcc is looked for: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    return [c for c in (shutil.which("nvcc"), home and os.path.join(home, "bin", "nvcc"),
                        "/usr/local/cuda/bin/nvcc") if c]


def find_nvcc() -> str | None:
    for cand in nvcc_candidates():
        if cand and os.path.exists(cand):
            return os.path.realpath(cand)
    return None


def flags(options: Sequence[str] = ()) -> tuple[str, ...]:
    """nvcc's options: ours, the device optimisation level when ``SYMGRAPH_NVCC_DEVICE_O``
    lowers it, then the caller's."""
    level = config.get("SYMGRAPH_NVCC_DEVICE_O")
    device = () if level == "3" else ("-Xcicc", f"-O{level}", "-Xptxas", f"-O{level}")
    return (*OPTIONS, *device, *options)


def cache_key(source: str, arch: str, nvcc: str, options: Sequence[str] = ()) -> str:
    st = os.stat(nvcc)
    ident = f"{nvcc}|{st.st_size}|{st.st_mtime_ns}|{arch}|{' '.join(flags(options))}"
    return hashlib.sha256((ident + "\n" + source).encode()).hexdigest()


def numbered(source: str) -> str:
    """``source`` with line numbers, as compile errors show it."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i + 1:>{width}} | {line}" for i, line in enumerate(lines))


def run_nvcc(source: str, arch: str, nvcc: str, options: Sequence[str] = ()) -> bytes:
    """Compile ``source`` to a cubin; errors show the numbered source and nvcc's message."""
    global NVCC_CALLS
    log = config.get("SYMGRAPH_NVCC_LOG")
    with _COUNT_LOCK:
        NVCC_CALLS += 1
        if log:
            with open(log, "a") as f:
                f.write(f"{os.getpid()} {arch}\n")
    with tempfile.TemporaryDirectory(prefix="symgraph-nvcc-") as tmp:
        src, out = os.path.join(tmp, "module.cu"), os.path.join(tmp, "module.cubin")
        with open(src, "w") as f:
            f.write(source)
        cmd = [nvcc, "--cubin", f"-arch={arch}", *flags(options), "-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ExecutionError(f"nvcc failed ({' '.join(cmd)}):\n{proc.stderr}\n"
                                 f"generated source:\n{numbered(source)}")
        with open(out, "rb") as f:
            return f.read()


def compile_module(source: str, arch: str, options: Sequence[str] = ()) -> bytes:
    """The cubin for ``source`` on ``arch`` (e.g. ``sm_90``), from the cache when possible;
    ``options`` are extra nvcc flags (``sg.rtc`` users' own)."""
    if config.get("SYMGRAPH_DEBUG") >= 2:
        print(f"// ---- symgraph CUDA module ({arch}) ----\n{numbered(source)}", file=sys.stderr)
    nvcc = find_nvcc()
    if nvcc is None:
        raise ExecutionError(
            f"nvcc not found (looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin): the "
            f"CUDA backend compiles its kernels with it; install the CUDA toolkit (12.x) or put "
            f"its bin folder on PATH (pip install 'symgraph[cuda]' brings pycuda and the "
            f"libraries, not the compiler)")
    return cached(cache_key(source, arch, nvcc, options),
                  lambda: run_nvcc(source, arch, nvcc, options))
