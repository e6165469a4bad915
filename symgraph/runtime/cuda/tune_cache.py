"""Measured choices remembered on disk, and how much a ``SYMGRAPH_AUTOTUNE`` mode measures.

A convolution call's cuDNN engine and a convolution's cuDNN-or-generated branch are chosen by
timing candidates on the device (``conv_choice``, ``cudnn.ConvPlan``). Each winner is stored in
one small JSON file beside the kernel cache (``compiler.cache_dir()``), keyed by a hash of
everything the winner depends on: the device (name, compute capability), the driver and CUDA
versions, cuDNN's version, the call's geometry (shapes, strides, pads, dilations, groups), its
dtype and layout, and the autotune mode. A second process with the same key measures nothing.

The file is written whole through ``fileio.atomic_write`` (temp file + ``os.replace``) after
re-reading it, so that processes tuning side by side keep each other's entries. An unreadable
or damaged file is warned about once, treated as empty and rewritten; at most ``MAX_ENTRIES``
are kept (the oldest go first).

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> cache = TuneCache(Path(tempfile.mkdtemp()))
    >>> k = choice_key({"device": "H200"}, "engine", kind="fwd")
    >>> cache.remember(k, lambda: {"algo": 1})
    {'algo': 1}
    >>> TuneCache(cache.folder).get(k)   # another process: read back, nothing measured
    {'algo': 1}
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ...core import config
from ...core.base import DataError
from ...core.fileio import write_text

FORMAT = 1
FILE_NAME = f"autotune-v{FORMAT}.json"
MAX_ENTRIES = 4096  # a ResNet-50 training step stores about 200; the file stays under 1 MiB
MAX_BYTES = 4 << 20  # a larger file is not ours to parse


@dataclass(frozen=True)
class Policy:
    """What one ``SYMGRAPH_AUTOTUNE`` mode lists and times.

    ``legacy``: how many of cuDNN's legacy algorithms are candidates, ``find``: whether they
    come from ``cudnnFind*`` (which times every algorithm itself) or from its heuristics
    (``*_v7``, no timing); ``fft``: whether a float32 call also lists the legacy FFT algorithm
    wherever the heuristics call it supported; ``graph``: graph-API plans built per heuristics
    mode (cuDNN's ``cudnnBackendHeurMode_t`` value -> plans); ``single``: take the first
    candidate, timing nothing; ``cached``: read and write the disk cache."""

    legacy: int
    find: bool
    fft: bool
    graph: tuple
    single: bool
    cached: bool


HEUR_A, HEUR_B, HEUR_FALLBACK = 3, 1, 2
POLICIES: dict[str, Policy] = {
    # cuDNN's heuristic first choice, as PyTorch without cudnn.benchmark: graph mode A's first
    # plan (the fast implicit-GEMM engines), else the legacy heuristic's first algorithm.
    "0": Policy(legacy=1, find=False, fft=False, graph=((HEUR_A, 1),), single=True,
                cached=False),
    # the heuristics' close candidates only: their top two legacy algorithms, mode A's top two
    # plans and mode B's first (mode B's first differed from A's in ResNet-50's 1x1 layers);
    # and for float32 the FFT algorithm, which the heuristics rank low where it wins: the seed
    # CNN's 3x3 backward calls at batch 1024 took 0.14 / 0.22 ms by FFT against 0.32 / 0.35 ms
    # by the heuristics' top two (H200), a 33% slower training step without it.
    "1": Policy(legacy=2, find=False, fft=True, graph=((HEUR_A, 2), (HEUR_B, 1)),
                single=False, cached=True),
    # every candidate: cudnnFind's three fastest and eight plans of each heuristics mode.
    "full": Policy(legacy=3, find=True, fft=False,
                   graph=((HEUR_A, 8), (HEUR_B, 8), (HEUR_FALLBACK, 8)), single=False,
                   cached=True),
}


def policy() -> Policy:
    """The current mode's policy (``SYMGRAPH_AUTOTUNE``, validated by ``config``)."""
    return POLICIES[config.get("SYMGRAPH_AUTOTUNE")]


def jsonable(value: Any) -> Any:
    """``value`` with dataclasses as dicts and tuples as lists (what a key hashes)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"type": type(value).__name__, **jsonable(dataclasses.asdict(value))}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def choice_key(identity: dict, what: str, **parts: Any) -> str:
    """The cache key of choice ``what`` (e.g. ``"cudnn-engine"``) on the device and libraries
    ``identity`` (``device_identity``) for the call that ``parts`` describe (geometry, dtype,
    layout...): a hash of all of them and of the autotune mode."""
    text = json.dumps({"id": jsonable(identity), "what": what, "parts": jsonable(parts),
                       "mode": config.get("SYMGRAPH_AUTOTUNE"), "format": FORMAT},
                      sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class TuneCache:
    """The remembered choices in ``folder``: ``get`` and ``put`` (which writes the file)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE_NAME
        self._entries: Optional[dict] = None
        self._warned = False

    def _read(self) -> dict:
        """The file's entries; {} (warned once) when it is missing, unreadable or damaged."""
        try:
            if self.path.stat().st_size > MAX_BYTES:
                raise ValueError(f"larger than {MAX_BYTES} bytes")
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            if not (isinstance(doc, dict) and doc.get("format") == FORMAT
                    and isinstance(doc.get("entries"), dict)):
                raise ValueError(f"not a format-{FORMAT} autotune file")
            return doc["entries"]
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeError are ValueErrors
            if not self._warned:
                self._warned = True
                warnings.warn(f"symgraph autotune cache {self.path} cannot be used ({exc}); "
                              f"choices are measured again and the file rewritten",
                              RuntimeWarning, stacklevel=3)
            return {}

    def get(self, key: str) -> Any:
        """The choice stored under ``key``, or None."""
        if self._entries is None:
            self._entries = self._read()
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON data) under ``key`` and write the file (merged with what other
        processes wrote meanwhile). A failed write is warned about: the next process measures
        again, nothing is wrong."""
        entries = {**self._read(), **(self._entries or {})}
        entries.pop(key, None)
        entries[key] = value  # last: the newest survives the bound
        for old in list(entries)[:max(0, len(entries) - MAX_ENTRIES)]:
            del entries[old]
        self._entries = entries
        try:
            write_text(self.path, json.dumps({"format": FORMAT, "entries": entries}))
        except DataError as exc:
            warnings.warn(f"symgraph autotune cache: {exc}", RuntimeWarning, stacklevel=2)

    def remember(self, key: str, measure: Callable[[], Any]) -> Any:
        """The choice under ``key``, or ``measure()`` stored under it."""
        got = self.get(key)
        if got is None:
            got = measure()
            self.put(key, got)
        return got


_SHARED: dict[str, TuneCache] = {}


def shared() -> TuneCache:
    """This process's cache of the current cache folder (one per folder)."""
    from .compiler import cache_dir
    folder = cache_dir()
    got = _SHARED.get(str(folder))
    if got is None:
        got = _SHARED[str(folder)] = TuneCache(folder)
    return got


def device_identity(device_id: int, cudnn_version: int) -> dict:
    """What a measured choice depends on besides the call: the GPU's name and compute
    capability, the driver's and the CUDA runtime's versions, cuDNN's version."""
    import pycuda.driver as drv  # here: importing this module needs no GPU
    dev = drv.Device(device_id)
    return {"device": dev.name(), "cc": list(dev.compute_capability()),
            "driver": drv.get_driver_version(), "cuda": list(drv.get_version()),
            "cudnn": cudnn_version}
