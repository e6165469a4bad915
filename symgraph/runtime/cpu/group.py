"""A ``_fused`` step (``compiler/ops/fused.py``) as compiled CPU kernels: one loop nest per
distinct output shape (one kernel for the usual group), from the group's formulas.

Whether a group compiles is decided when the program is built (:func:`why_not`): every
primitive needs a Python template, and the group's values one float dtype (float32, float64;
float16/bfloat16 are stored narrow and computed in float32: the program widens them on read
and narrows the results on store, as the numpy backend does). A group with a GEMM-like head
runs the head's numpy reference, then its formula compiled as the head's epilogue.

Shapes are collapsed before rendering (:func:`collapse`): axes of size 1 go, and adjacent axes
that every input reads the same way (all along, or broadcast) merge, so a same-size group is
one flat loop and ``x + bias`` over NCHW is three nested loops however the axes are named. The
kernel's source depends on that pattern, not on the sizes, so one kernel serves every batch
size.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...core.base import ExecutionError, ShapeError
from ...core.dtypes import NARROW
from ...core.expr import topo
from ...core.registry import RunCtx, get_op
from .kernels import kernel_folder, load
from .pool import run_split
from .render import FLOAT_TYPES, missing_prims, render_kernel

Shape = tuple[int, ...]


def compute_dtype(dtype: np.dtype) -> Optional[str]:
    """The dtype a kernel computes in for values stored as ``dtype`` (None: not compiled)."""
    if dtype in NARROW:
        return "float32"
    return dtype.name if dtype.name in FLOAT_TYPES else None


def why_not(exprs: Sequence[Any], dtypes: Sequence[np.dtype]) -> Optional[str]:
    """Why formulas ``exprs`` over values of ``dtypes`` (inputs and outputs) cannot compile,
    or None when they can."""
    missing = missing_prims(exprs)
    if missing:
        return f"primitive(s) {', '.join(missing)} have no compiled form"
    kinds = sorted({np.dtype(d).name for d in dtypes})
    if len(kinds) > 1:
        return f"mixed dtypes {kinds}"
    if kinds and compute_dtype(np.dtype(kinds[0])) is None:
        return f"dtype {kinds[0]} (compiled: float32, float64, float16/bfloat16 storage)"
    return None


def collapse(out_shape: Shape, in_shapes: Sequence[Shape], where: str
             ) -> tuple[Shape, list[Shape], list[tuple[bool, ...]]]:
    """(collapsed output shape, each input's collapsed shape, per input and collapsed axis
    whether it varies there). ``where`` names the step in the ShapeError of an input that
    does not broadcast to ``out_shape``."""
    rank = len(out_shape)
    padded = []
    for s in in_shapes:
        s = tuple(s)
        if len(s) > rank:
            raise ShapeError(f"{where}: input of shape {s} does not broadcast to {out_shape}")
        padded.append((1,) * (rank - len(s)) + s)
    axes: list[list] = []  # [size, per-input "varies" flags]
    for d, size in enumerate(out_shape):
        if size == 1:
            continue
        flags = []
        for s in padded:
            if s[d] not in (1, size):
                raise ShapeError(f"{where}: input of shape {s} does not broadcast to "
                                 f"{out_shape} (axis {d})")
            flags.append(s[d] == size)
        if axes and axes[-1][1] == flags:
            axes[-1][0] *= size
        else:
            axes.append([size, flags])
    if not axes:
        axes = [[1, [True] * len(padded)]]
    cshape = tuple(a[0] for a in axes)
    full = [tuple(a[1][i] for a in axes) for i in range(len(padded))]
    return cshape, [tuple(n if f else 1 for n, f in zip(cshape, fl)) for fl in full], full


def strides_of(cshape: Shape, cin: Shape) -> list[int]:
    """Element strides of a contiguous input of collapsed shape ``cin`` read along each axis
    of ``cshape``: 0 on the axes it is broadcast along."""
    out, step = [0] * len(cshape), 1
    for d in range(len(cshape) - 1, -1, -1):
        out[d] = step if cin[d] == cshape[d] else 0
        step *= cin[d]
    return out


@dataclass(frozen=True)
class Launch:
    """One kernel of a group for given input shapes: which outputs it writes, the output's
    shape and collapsed shape, (input index, collapsed shape) of each input it reads, and the
    leading arguments of a kernel over rows (``dims``, ``strides``: ``render.render_kernel``)."""

    kernel: Callable
    name: str
    which: tuple[int, ...]
    shape: Shape
    cshape: Shape
    reads: tuple[tuple[int, Shape], ...]
    lead: tuple = ()
    over_head: bool = False  # output 0 may be written over the head's result (input 0)

    def args(self, ys: list, xs: list) -> tuple[int, list]:
        """(outer count to split, the kernel's arguments after ``lo, hi``)."""
        if not self.lead:
            return self.cshape[0], ([y.reshape(self.cshape) for y in ys]
                                    + [xs[i].reshape(s) for i, s in self.reads])
        return (prod(self.cshape[:-1]), list(self.lead) + [y.reshape(-1) for y in ys]
                + [xs[i].reshape(-1) for i, _ in self.reads])


class FusedStep:
    """The compute function of a compiled group: ``(attrs, inputs, ctx) -> outputs`` (the
    numpy reference's signature, so the program runs it like any step). ``exprs``: one
    formula per output, of shape ``shapes[k]``; ``head``: ``_fused``'s head (None, or op,
    attrs and how many inputs feed it), whose first ``n_extra`` other outputs follow the
    group's."""

    def __init__(self, exprs: Sequence[Any], shapes: Sequence[Shape], stem: str, name: str,
                 dtype: str, head: Any = None, n_extra: int = 0) -> None:
        self.exprs, self.shapes, self.stem, self.name = tuple(exprs), tuple(shapes), stem, name
        self.dtype, self.head, self.n_extra = np.dtype(dtype), head, n_extra
        self.kernels: list[str] = []  # names of the kernels rendered so far
        # the head's compiled compute (``layers.py``), None: its op's numpy reference
        self.head_compute: Optional[Callable] = None
        self._launches: dict[tuple, list[Launch]] = {}

    def _plan(self, in_shapes: tuple) -> list[Launch]:
        out = []
        for shape in sorted({tuple(s) for s in self.shapes}, key=lambda s: -prod(s)):
            which = tuple(k for k, s in enumerate(self.shapes) if tuple(s) == shape)
            exprs = [self.exprs[k] for k in which]
            used = sorted({int(e.value) for e in topo(exprs) if e.op == "input"})
            cshape, cins, full = collapse(shape, [in_shapes[i] for i in used],
                                          self.name)
            flags: list = [None] * len(in_shapes)
            for i, f in zip(used, full):
                flags[i] = f
            k = render_kernel(self.stem, exprs, flags, len(cshape), self.dtype.name)
            self.kernels.append(k.name)
            lead: tuple = ()
            if len(cshape) > 1:
                lead = (np.array(cshape, np.int64),
                        np.array([strides_of(cshape, c) for c in cins], np.int64).reshape(
                            len(cins), len(cshape)))
            out.append(Launch(load(k), k.name, which, shape, cshape, tuple(zip(used, cins)),
                              lead))
        if self.head is not None and out and tuple(in_shapes[0]) == out[0].shape \
                and not any(i == 0 for ln in out[1:] for i, _ in ln.reads):
            # The head's result is a temporary only this group reads, of the first kernel's
            # shape: writing over it saves a fresh output (page faults on every step).
            out[0] = replace(out[0], over_head=True)
        self._launches[in_shapes] = out
        return out

    def _launch(self, ln: Launch, n: int, ys: list, xs: list) -> None:
        outer, args = ln.args(ys, xs)
        try:
            run_split(ln.kernel, outer, n, args)
        except Exception as exc:
            if not type(exc).__module__.startswith("numba"):
                raise
            raise ExecutionError(
                f"{self.name}: compiled CPU kernel {ln.name} failed to compile "
                f"(source: {kernel_folder() / ln.name}.py; SYMGRAPH_CPU=numpy runs the numpy "
                f"reference instead): {str(exc).splitlines()[0] if str(exc) else exc!r}"
            ) from exc

    def __call__(self, attrs: Any, xs: list, ctx: RunCtx) -> list:
        rest: list = []
        fresh = False  # xs[0] is the head's result, ours to overwrite
        if self.head is not None:
            op, head_attrs, n = self.head
            got = (self.head_compute or get_op(op).compute)(head_attrs, list(xs[:n]), ctx)
            h = np.ascontiguousarray(got[0], self.dtype)
            fresh = h.flags.writeable and not any(
                isinstance(x, np.ndarray) and np.may_share_memory(h, x) for x in xs[:n])
            xs, rest = [h] + list(xs[n:]), list(got[1:1 + self.n_extra])
        xs = [np.ascontiguousarray(x, self.dtype) for x in xs]
        key = tuple(x.shape for x in xs)
        launches = self._launches.get(key) or self._plan(key)
        outs: list = [None] * len(self.exprs)
        for ln in launches:
            ys = [xs[0] if j == 0 and ln.over_head and fresh else np.empty(ln.shape, self.dtype)
                  for j in range(len(ln.which))]
            n = prod(ln.shape)
            if n:
                self._launch(ln, n, ys, xs)
            for k, y in zip(ln.which, ys):
                outs[k] = y
        return outs + rest
