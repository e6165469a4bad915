"""A program's CUDA module compiled as several parts at once: one nvcc process per part.

nvcc compiles one translation unit on one core, so a large module (ResNet-50's training step:
about 150 kernels, 170 KB of source) keeps one core busy for seconds while the others idle.
:func:`split` cuts the program's kernels into parts, each the prelude, the helpers its own
kernels use and a share of the kernels (consecutive in name order, cut at equal shares of
estimated nvcc time, :func:`weight`); :func:`compile_parts` compiles them concurrently
(threads, each waiting on its nvcc subprocess), each through ``compiler.compile_module`` and so
cached on disk under its own key (a part whose kernels another program also split the same way
is compiled once); :class:`Modules` holds the loaded parts and finds a kernel in the one that
defines it.

Every part pays nvcc's fixed start-up (about 0.3 s of a core; 0.5 s with the bfloat16
headers), so a module is split only when it is large: at most one part per ``PART_WEIGHT`` of
estimated nvcc time and at most ``SYMGRAPH_NVCC_JOBS`` parts (default: the cores this
process may use). A module of one part is exactly ``compiler.module_source`` of all kernels,
compiled by one nvcc call, as before. Pure Python (no pycuda): CI splits and compiles without a
GPU, and :class:`Modules` takes the loader as an argument.
"""
from __future__ import annotations

import os
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ...core import config
from ...core.base import ExecutionError
from .codegen import Rendered
from .compiler import compile_module, module_source

# nvcc's time for a kernel, in characters of source: fitted on ResNet-50's module split in 16
# parts (about 20 ms per kernel and 7.7 ms per 1,000 characters, besides 0.29 s per call), a
# kernel costs as much as 2,600 characters on top of its own.
KERNEL_CHARS = 2_600
# The weight of a part, at least: nvcc spends about as long on it as on its own start-up, so a
# smaller share would mostly pay start-ups.
PART_WEIGHT = 36_000


@dataclass(frozen=True)
class Part:
    """One translation unit of a split module: ``names`` are the kernels it defines."""

    index: int
    count: int
    names: tuple[str, ...]
    source: str

    def label(self) -> str:
        """How errors name the part: its position and its first kernels."""
        shown = ", ".join(self.names[:4]) + (", ..." if len(self.names) > 4 else "")
        return f"CUDA module part {self.index + 1} of {self.count} (kernels {shown})"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, which containers narrow)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def unique(kernels: Sequence[Rendered]) -> list[Rendered]:
    """``kernels`` without repeats, first occurrence kept (equal names mean equal code)."""
    seen: dict[str, Rendered] = {}
    for k in kernels:
        seen.setdefault(k.name, k)
    return list(seen.values())


def weight(kernel: Rendered) -> int:
    """nvcc's time for ``kernel``, in characters of source (``KERNEL_CHARS``)."""
    return len(kernel.source) + KERNEL_CHARS


def part_count(kernels: Sequence[Rendered]) -> int:
    """How many parts ``kernels`` (already unique) are compiled as: one per ``PART_WEIGHT``,
    at most one per nvcc job (``SYMGRAPH_NVCC_JOBS``, default the usable cores)."""
    jobs = config.get("SYMGRAPH_NVCC_JOBS") or usable_cores()
    total = sum(weight(k) for k in kernels)
    return max(1, min(jobs, len(kernels), total // PART_WEIGHT))


def split(kernels: Sequence[Rendered], count: int | None = None) -> list[Part]:
    """The parts the module of ``kernels`` is compiled as (``count`` parts, default
    :func:`part_count`); every kernel is in exactly one part.

    Example::

        >>> from symgraph.runtime.cuda.codegen import render_contiguous
        >>> from symgraph.core.expr import inp
        >>> ks = [render_contiguous("neg", [-inp(0)]), render_contiguous("sq", [inp(0) * inp(0)])]
        >>> [len(p.names) for p in split(ks, 2)]
        [1, 1]
    """
    ks = unique(kernels)
    n = part_count(ks) if count is None else max(1, min(count, len(ks)))
    if n == 1:
        return [Part(0, 1, tuple(k.name for k in ks), module_source(ks))]
    ordered = sorted(ks, key=lambda k: k.name)  # the same kernels split the same way
    total = sum(weight(k) for k in ordered)
    groups: list[list[Rendered]] = [[] for _ in range(n)]
    done = 0
    for k in ordered:  # each kernel goes to the share its middle falls in
        groups[min(n - 1, (2 * done + weight(k)) * n // (2 * total))].append(k)
        done += weight(k)
    groups = [g for g in groups if g]
    return [Part(i, len(groups), tuple(k.name for k in g), module_source(g))
            for i, g in enumerate(groups)]


def _compile_part(part: Part, arch: str, options: Sequence[str]) -> bytes:
    try:
        return compile_module(part.source, arch, options)
    except ExecutionError as exc:  # nvcc's message and the part's numbered source follow
        raise ExecutionError(f"{part.label()}: {exc}") from exc


def compile_parts(parts: Sequence[Part], arch: str, options: Sequence[str] = ()) -> list[bytes]:
    """The cubin of each part (from the disk cache when possible), compiled concurrently; a
    failing part raises an ExecutionError naming it, with nvcc's message and its source."""
    if len(parts) == 1:  # no thread for the common small module
        return [compile_module(parts[0].source, arch, options)]
    with ThreadPoolExecutor(len(parts), thread_name_prefix="symgraph-nvcc") as pool:
        futures = [pool.submit(_compile_part, p, arch, options) for p in parts]
        return [f.result() for f in futures]


class Modules:
    """The loaded parts of one program's module, used like one pycuda module
    (``get_function``); ``load`` turns a cubin into a module (``drv.module_from_buffer``)."""

    def __init__(self, parts: Sequence[Part], cubins: Sequence[bytes],
                 load: Callable[[bytes], Any]) -> None:
        self.cubins = list(cubins)
        self.modules = [load(c) for c in self.cubins]
        self.where = {name: p.index for p in parts for name in p.names}

    def _part_of(self, name: str) -> int:
        got = self.where.get(name)
        if got is None:  # a kernel defined inside another's source: find its symbol
            got = next((i for i, c in enumerate(self.cubins) if name in kernel_symbols(c)),
                       None)
        if got is None:
            raise ExecutionError(f"kernel {name!r} is in none of the program's "
                                 f"{len(self.cubins)} CUDA module part(s)")
        return got

    def get_function(self, name: str) -> Any:
        """Kernel ``name``'s function, from the part that defines it."""
        return self.modules[self._part_of(name)].get_function(name)

    def cubin_of(self, name: str) -> bytes:
        """The cubin that defines kernel ``name`` (cooperative launches load it again)."""
        return self.cubins[self._part_of(name)]


def kernel_symbols(cubin: bytes) -> set[str]:
    """The names of the global functions (kernels) in a cubin's ELF symbol table."""
    if cubin[:6] != b"\x7fELF\x02\x01":  # 64-bit little-endian ELF, as nvcc writes for sm_XX
        raise ExecutionError("not a 64-bit little-endian ELF cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize)
                for i in range(shnum)]
    names: set[str] = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2 or not entsize:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize):
            name, info = struct.unpack_from("<IB", cubin, at)
            if info == 0x12:  # STB_GLOBAL << 4 | STT_FUNC
                end = cubin.index(b"\0", strtab + name)
                names.add(cubin[strtab + name:end].decode())
    return names
