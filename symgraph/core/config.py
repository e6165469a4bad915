"""Every ``SYMGRAPH_*`` environment variable, in one table: its type, default and meaning.

Code reads a setting through :func:`get` (never ``os.environ`` directly), so each variable is
parsed and validated in one place, and a bad value is an :class:`AttrError` that names the
variable, the value and what is accepted. The environment is read at each call, not cached at
import: a test or a launcher may set a variable after ``import symgraph``.

Example::

    >>> import os, symgraph as sg
    >>> os.environ["SYMGRAPH_DEBUG"] = "2"
    >>> sg.config.get("SYMGRAPH_DEBUG")
    2
    >>> del os.environ["SYMGRAPH_DEBUG"]
    >>> print(sg.config.describe())      # the table below, as text      # doctest: +SKIP
"""
from __future__ import annotations

import math
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from .base import AttrError


def _flag(text: str) -> Optional[bool]:
    """``0``/``1`` and their usual spellings; None when the text is none of them."""
    return {"0": False, "false": False, "no": False, "off": False,
            "1": True, "true": True, "yes": True, "on": True}.get(text.strip().lower())


def _positive_seconds(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _megabytes(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _level(text: str) -> Optional[int]:
    return int(text) if text.strip().isdigit() else None


def _count(text: str) -> Optional[int]:
    return int(text) if text.strip().isdigit() and int(text) >= 1 else None


def _path(text: str) -> Optional[str]:
    return text or None


def _flag_or_path(text: str) -> Any:
    """``0``/``1`` (as :func:`_flag`), or any other text as a file path."""
    flag = _flag(text)
    return text.strip() if flag is None else flag


def _secret(text: str) -> Optional[str]:
    return text if len(text.strip()) >= 16 else None


def _choice(*values: str) -> Callable[[str], Optional[str]]:
    def parse(text: str) -> Optional[str]:
        return text if text in values else None
    parse.__doc__ = " | ".join(values)
    return parse


@dataclass(frozen=True)
class Setting:
    """One variable: ``parse`` turns its text into a value, or None when the text is invalid."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    accepts: str
    doc: str
    secret: bool = False  # errors name the variable but never echo its value


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("SYMGRAPH_DEBUG", _level, 0, "an integer >= 0",
            "1 prints the IR after each pass; 2 also prints every generated CUDA module."),
    Setting("SYMGRAPH_DATA", _path, None, "a folder",
            "Where MNIST's IDX files are (the datasets, the CLI and the tests look there)."),
    Setting("SYMGRAPH_CACHE_DIR", _path, None, "a folder",
            "The compiled-kernel cache (default ~/.cache/symgraph)."),
    Setting("SYMGRAPH_NVCC_LOG", _path, None, "a file",
            "Appends one line per nvcc call (shows that a warm run compiles nothing)."),
    Setting("SYMGRAPH_NVCC_JOBS", _count, None, "an integer >= 1",
            "How many nvcc processes compile a large program's module at once, its kernels "
            "split into that many parts (default: the cores this process may use); 1 compiles "
            "every module in one nvcc call."),
    Setting("SYMGRAPH_NVCC_DEVICE_O", _choice("0", "1", "2", "3"), "3", "0 | 1 | 2 | 3",
            "nvcc's device-code optimisation level (cicc and ptxas); below 3 compiles about "
            "twice as fast and runs slower (the test suite's compile checks without a GPU)."),
    Setting("SYMGRAPH_CUDA_GRAPHS", _flag, True, "0 | 1",
            "0 launches every step eagerly instead of replaying CUDA graphs."),
    Setting("SYMGRAPH_REMAT", _flag, False, "0 | 1",
            "0 (default, as MXNet's MXNET_BACKWARD_DO_MIRROR) keeps every forward result the "
            "backward reads alive from forward to backward; 1 has the backward recompute cheap "
            "ones (elementwise ops, BatchNorm from its saved statistics) instead: about a third "
            "less memory for ResNet-50, about 5% more step time."),
    Setting("SYMGRAPH_TF32", _flag, False, "0 | 1",
            "1 lets cuBLAS and cuDNN use TF32 tensor cores for float32."),
    Setting("SYMGRAPH_HEAD_GEMM", _choice("pointers", "loop"), "pointers", "pointers | loop",
            "How a GEMM over attention heads kept in (B, T, H, D) arrays is issued: one cuBLAS "
            "batched call over arrays of matrix pointers, or a strided-batched call per head "
            "(per batch row when those are fewer)."),
    Setting("SYMGRAPH_CUDNN", _choice("auto", "0", "1"), "auto", "auto | 0 | 1",
            "0 never uses cuDNN (generated convolutions); 1 takes cuDNN without timing the "
            "generated branch; auto times both (as SYMGRAPH_AUTOTUNE says: 0 takes cuDNN)."),
    Setting("SYMGRAPH_AUTOTUNE", _choice("0", "1", "full"), "1", "0 | 1 | full",
            "How much convolution choosing measures. 0: cuDNN's heuristic first choice, "
            "nothing timed (fastest bind, steps may be slower); 1: only the heuristics' top "
            "candidates (2 legacy algorithms, 3 graph-API plans, cuDNN or generated) are timed, "
            "winners remembered in the cache folder so a second process times nothing; full: "
            "every candidate (cudnnFind, 8 plans per heuristics mode), also remembered."),
    Setting("SYMGRAPH_CUDNN_API", _choice("auto", "legacy"), "auto", "auto | legacy",
            "legacy times cuDNN's legacy algorithms only, not its graph API's engines."),
    Setting("SYMGRAPH_NHWC", _flag, True, "0 | 1",
            "0 keeps convolutions NCHW (no channels-last layout pass: CUDA's float16/bfloat16 "
            "ones, the compiled CPU backend's float32 ones)."),
    Setting("SYMGRAPH_CUDA_LIBS", _choice("system", "wheels"), "system", "system | wheels",
            "wheels loads cuBLAS/cuDNN/NCCL from the nvidia-* wheels before the toolkit's."),
    Setting("SYMGRAPH_CPU", _choice("numpy", "compiled"), "compiled", "numpy | compiled",
            "The CPU backend: compiled (the default) runs fused elementwise groups as numba "
            "kernels, convolutions and pooling through oneDNN or generated window kernels "
            "(runtime/cpu) and the other steps as their numpy reference; numpy runs every "
            "step's numpy reference (the reference the tests compare with)."),
    Setting("SYMGRAPH_ONEDNN", _flag_or_path, True, "0 | 1 | a path to libdnnl.so.3",
            "The compiled CPU backend's float32 convolutions and padded or average pooling: 1 "
            "runs them through oneDNN when the onednn-cpu-gomp wheel (or a libdnnl.so.3 at the "
            "path given) is there, 0 through im2col and numpy's BLAS and the numpy reference "
            "(runtime/cpu/onednn.py)."),
    Setting("SYMGRAPH_CPU_KEEP_FREED", _flag, True, "0 | 1",
            "1: the compiled CPU backend asks glibc to keep freed memory for reuse instead of "
            "handing large blocks back to the system (mallopt's mmap and trim thresholds), so "
            "a step's large arrays reuse pages already mapped; the process then holds its peak "
            "heap (runtime/cpu/memory.py). 0 leaves glibc's defaults."),
    Setting("SYMGRAPH_ALLOW_HOST", _flag, False, "0 | 1",
            "1 runs GPU steps that have no lowering on the host (with a warning) instead of "
            "refusing the bind."),
    Setting("SYMGRAPH_STAGE_THREADS", _flag, True, "0 | 1",
            "0 fills each device's input staging inline instead of on a helper thread."),
    Setting("SYMGRAPH_IO_PROCESSES", _flag, False, "0 | 1",
            "1 prepares ImageRecordIter's samples in preprocess_threads spawned worker "
            "processes instead of threads (threads share the GIL and stop scaling at 2-3 "
            "cores); the batches are the same."),
    Setting("SYMGRAPH_FLAT_BUCKETS", _flag, False, "0 | 1",
            "1 all-reduces gradients from one flat bucket per dtype."),
    Setting("SYMGRAPH_GLUON_REPO", _path,
            "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/", "a URL",
            "Where gluon.model_zoo downloads missing pretrained files from (MXNet's "
            "MXNET_GLUON_REPO)."),
    Setting("SYMGRAPH_PROGRAM_CACHE_MB", _megabytes, 1024.0, "megabytes >= 0",
            "Memory the programs compiled for imperative and hybridized code may keep (their "
            "arenas and workspaces); past it the least recently used are dropped (and compiled "
            "again when needed). 0 keeps only the program just used."),
    Setting("SYMGRAPH_DIST_TIMEOUT", _positive_seconds, 300.0, "seconds > 0",
            "How long a rendezvous or a collective waits for a peer."),
    Setting("SYMGRAPH_CPU_THREADS", _count, None, "an integer >= 1",
            "Threads the CPU backend uses: its BLAS calls (set around each program's run and "
            "restored after it) and the compiled kernels' pool (default: one less than the "
            "cores this process may use, at least 1, leaving a core to other work)."),
    Setting("SYMGRAPH_JOB_KEY", _secret, None, "a secret of at least 16 characters",
            "The job's shared secret: ranks prove it to each other (HMAC) at the rendezvous. "
            "'symgraph launch' makes one; otherwise export the same value on every rank.",
            secret=True),
)}


def get(name: str) -> Any:
    """The value of setting ``name`` from the environment, or its default when unset or empty.

    Raises AttrError for an unknown setting or a value the setting does not accept."""
    try:
        setting = SETTINGS[name]
    except KeyError:
        raise AttrError(f"config: unknown setting {name!r}; known: {sorted(SETTINGS)}") from None
    text = os.environ.get(name, "")
    if text == "":
        return setting.default
    value = setting.parse(text)
    if value is None:
        shown = f"<{len(text)} characters, not shown>" if setting.secret else repr(text)
        raise AttrError(f"environment: {name}={shown} is not valid; expected {setting.accepts}")
    return value


def is_set(name: str) -> bool:
    """Whether setting ``name`` is given (a non-empty variable) rather than left to its
    default; e.g. a default that falls back where a package is missing, while a value asked
    for by name keeps its error."""
    if name not in SETTINGS:
        raise AttrError(f"config: unknown setting {name!r}; known: {sorted(SETTINGS)}")
    return os.environ.get(name, "") != ""


@contextmanager
def override(name: str, text: str) -> Iterator[None]:
    """Run the body with setting ``name`` read as ``text`` (checked as the variable's value
    would be), then put the environment back as it was; e.g. a benchmark comparing two modes.

    Example::

        >>> with override("SYMGRAPH_DEBUG", "1"):
        ...     get("SYMGRAPH_DEBUG")
        1
    """
    before = os.environ.get(name)
    os.environ[name] = text
    try:
        get(name)  # a bad value or an unknown name is refused before the body runs
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def describe() -> str:
    """Every setting as ``NAME (accepts, default D): meaning``, one per line."""
    return "\n".join(f"{s.name} ({s.accepts}, default {s.default}): {s.doc}"
                     for s in SETTINGS.values())
