"""Lowering of schedule steps to launch actions, driven by data on each op.

An op states its GPU lowering as ``OpDef.lowering``: a family name, or ``(family, params)``.
Ops with a scalar formula (``OpDef.expr``) and no lowering are the ``elementwise`` family. This
module maps family names to lowering functions; nothing here branches on op names. A lowering
function gets a :class:`StepCtx` and returns a list of actions:

* :class:`Kernel` - a generated kernel launch (source rendered here, compiled into the module);
* :class:`Copy`, :class:`Fill` - device-to-device copy, 32-bit memset;
* :class:`Gemm` - a (strided-batched) cuBLAS SGEMM in row-major terms;
* :class:`Host` - the documented stopgap: inputs to the host, the numpy reference, results back.

Arguments are symbolic (:class:`Ref`: a slot or a scratch buffer) and resolved to device
pointers by the backend, so this module is pure Python and CI renders every kernel without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..attrs import Attrs
from ..expr import Expr, inp
from ..registry import OpDef, get_op
from ..schedule import Step
from .codegen import THREADS, Rendered, grid_for, render_elementwise
from .kernels import REDUCERS, reduce_split, render_reduce, use_block_per_output

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Ref:
    """A device buffer: ``("slot", i)``, ``("scratch", k)`` or ``("key", k)`` of the step's
    program. Keys are 64-bit random-number keys that live for the whole program: the backend
    writes a fresh one, drawn from ``RunCtx.rng``, before each run of the step that owns it."""

    kind: str
    index: int


@dataclass(frozen=True)
class Kernel:
    kernel: Rendered
    grid: int
    block: int
    args: tuple[Ref, ...]
    n: int


@dataclass(frozen=True)
class Copy:
    dst: Ref
    src: Ref
    nbytes: int


@dataclass(frozen=True)
class Fill:
    dst: Ref
    value: float
    count: int


@dataclass(frozen=True)
class Gemm:
    """C[b] = op(A[b]) @ op(B[b]) (+ C if ``accumulate``), row-major, ``batch`` matrices."""

    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int
    a: Ref
    b: Ref
    c: Ref
    batch: int = 1
    accumulate: bool = False


@dataclass(frozen=True)
class Host:
    step: Step


@dataclass(frozen=True)
class Callback:
    """Python on the step's device buffers (``Custom``): ``run(attrs, ins, outs, RunCtx,
    stream)`` with GPU NDArrays; never inside a captured graph (it is host code)."""

    step: Step
    run: Any


@dataclass(frozen=True)
class ConvCall:
    """A cuDNN convolution: ``kind`` fwd (a=x, b=w), data (a=w, b=dy) or filter (a=x, b=dy)."""

    kind: str
    geometry: Any
    filters: int
    a: Ref
    b: Ref
    out: Ref


@dataclass(frozen=True)
class Switch:
    """``train`` actions when run with ``RunCtx.is_train``, else ``infer`` (BatchNorm...)."""

    train: tuple
    infer: tuple


@dataclass(frozen=True)
class Choice:
    """``primary`` (library calls) when cuDNN loads at run time, else ``fallback``."""

    primary: tuple
    fallback: tuple


def flat_actions(acts: Sequence[Any]) -> list:
    """Every action, both branches of a Choice included (for gathering kernels)."""
    out: list = []
    for a in acts:
        if isinstance(a, Choice):
            out += flat_actions(a.primary + a.fallback)
        elif isinstance(a, Switch):
            out += flat_actions(a.train + a.infer)
        else:
            out.append(a)
    return out


Action = Any


@dataclass
class StepCtx:
    """What a lowering function sees: the step, its shapes and buffers, device facts."""

    step: Step
    attrs: Attrs
    in_shapes: list[Shape]
    out_shapes: list[Shape]
    dtypes: list[np.dtype]  # of the step's inputs, then outputs
    ins: list[Ref]
    outs: list[Ref]
    sm_count: int
    scratch: list[int] = field(default_factory=list)  # aligned bytes of this step's buffers
    keys: list[int] = field(default_factory=list)  # random keys of the program so far (shared)

    def new_scratch(self, nbytes: int) -> Ref:
        """A temporary buffer of this step (``Ref.index`` is its byte offset in the workspace
        that all steps share: steps run one after another on one stream)."""
        offset = sum(self.scratch)
        self.scratch.append((int(nbytes) + 255) // 256 * 256)
        return Ref("scratch", offset)

    def new_key(self) -> Ref:
        """A random key of this step: refreshed from ``RunCtx.rng`` before every run of the
        step, outside any captured CUDA graph, so a replayed graph still draws new numbers."""
        self.keys.append(len(self.keys))
        return Ref("key", len(self.keys) - 1)

    @property
    def stem(self) -> str:
        return self.step.node.op.lstrip("_")


LoweringFn = Callable[[StepCtx, dict], list]
FAMILIES: dict[str, LoweringFn] = {}


def family(name: str) -> Callable[[LoweringFn], LoweringFn]:
    def deco(fn: LoweringFn) -> LoweringFn:
        FAMILIES[name] = fn
        return fn
    return deco


# Families that move or convert bytes, or run Python: any dtype (the others are float32 only).
BYTE_FAMILIES = {"copy", "constant", "callback", "cast", "shape_constant", "fill"}


def lowering_of(op: OpDef) -> tuple[str, dict]:
    """(family, params) of an op: its ``lowering`` data, else elementwise/host by default."""
    low = op.lowering
    if low is None:
        return ("elementwise", {}) if op.expr is not None else ("host", {})
    if isinstance(low, str):
        return low, {}
    return low[0], dict(low[1])


# Families whose listed input slots hold indices: an integer dtype there is read as it is (the
# kernel spells its C type), so integer labels need no host path or cast.
INDEX_INPUTS = {"one_hot": (0,)}


def lower_step(ctx: StepCtx) -> list:
    """Actions of one step; float32 only, but for integer index inputs (other dtypes take the
    host path)."""
    fam, params = lowering_of(get_op(ctx.step.node.op))
    index = INDEX_INPUTS.get(fam, ())
    plain = [t for i, t in enumerate(ctx.dtypes) if i not in index
             or np.dtype(t).kind not in "iu"]
    if fam not in BYTE_FAMILIES and any(np.dtype(t) != np.float32 for t in plain):
        fam = "host"
    return FAMILIES[fam](ctx, params)


# -- families -----------------------------------------------------------------------------------

def elementwise_actions(ctx: StepCtx, stem: str, exprs: Sequence[Expr], in_shapes: Sequence[Shape],
                        ins: Sequence[Ref], out_shape: Shape, outs: Sequence[Ref]) -> list:
    kern, used = render_elementwise(stem, exprs, in_shapes, out_shape)
    n = prod(out_shape)
    per = kern.per_thread
    grid = grid_for((n + per - 1) // per, ctx.sm_count)
    return [Kernel(kern, grid, THREADS, tuple(outs) + tuple(ins[i] for i in used), n)]


@family("host")
def _host(ctx: StepCtx, p: dict) -> list:
    return [Host(ctx.step)]


@family("callback")
def _callback(ctx: StepCtx, p: dict) -> list:
    return [Callback(ctx.step, p["run"])]


@family("elementwise")
def _elementwise(ctx: StepCtx, p: dict) -> list:
    op = get_op(ctx.step.node.op)
    e = op.expr(ctx.attrs, *(inp(i) for i in range(len(ctx.ins))))
    return elementwise_actions(ctx, ctx.stem, [e], ctx.in_shapes, ctx.ins, ctx.out_shapes[0],
                               ctx.outs)


@family("copy")
def _copy(ctx: StepCtx, p: dict) -> list:
    """Reshape, identity, BlockGrad...: the bytes of input 0, unchanged."""
    nbytes = prod(ctx.out_shapes[0]) * np.dtype(ctx.dtypes[-1]).itemsize
    return [Copy(ctx.outs[0], ctx.ins[0], nbytes)] if nbytes else []


@dataclass(frozen=True)
class Upload:
    """Copy constant host bytes into ``dst`` (from pinned memory: capturable in a graph)."""

    dst: Ref
    data: bytes


@family("constant")
def _constant(ctx: StepCtx, p: dict) -> list:
    """A literal array (``_constant``, made by constant folding): uploaded every run, since
    the memory plan may lend its bytes to other slots in between."""
    return [Upload(ctx.outs[0], ctx.attrs["value"][0])] if ctx.attrs["value"][0] else []


@family("fill")
def _fill(ctx: StepCtx, p: dict) -> list:
    """``p['value']``: the fill value, or a function of the attrs giving it (``_full``)."""
    value = p["value"](ctx.attrs) if callable(p["value"]) else p["value"]
    dtype = np.dtype(ctx.dtypes[-1])
    if dtype != np.float32:  # any other dtype: its bytes, uploaded as a constant is
        return [Upload(ctx.outs[0], np.full(ctx.out_shapes[0], value, dtype).tobytes())]
    return [Fill(ctx.outs[0], float(value), prod(ctx.out_shapes[0]))]


@family("shape_constant")
def _shape_constant(ctx: StepCtx, p: dict) -> list:
    """A value known from the input shapes alone (shape_array): uploaded every run, like
    ``constant``. ``p['value']``: a function of the input shapes giving the numpy array."""
    return [Upload(ctx.outs[0], np.ascontiguousarray(p["value"](ctx.in_shapes)).tobytes())]


@family("scale_by_batch")
def _scale_by_batch(ctx: StepCtx, p: dict) -> list:
    e = inp(0) * (1.0 / ctx.in_shapes[0][0])
    return elementwise_actions(ctx, "scale_by_batch", [e], ctx.in_shapes, ctx.ins,
                               ctx.out_shapes[0], ctx.outs)


@family("broadcast_to")
def _broadcast_to(ctx: StepCtx, p: dict) -> list:
    """Input ``p['input']`` (default 0) broadcast to the output shape (broadcast_like)."""
    i = p.get("input", 0)
    return elementwise_actions(ctx, ctx.stem, [inp(0)], [ctx.in_shapes[i]], [ctx.ins[i]],
                               ctx.out_shapes[0], ctx.outs)


def _axes(ctx: StepCtx) -> tuple[int, ...]:
    from ..ops.tensor import reduce_axes
    return reduce_axes(ctx.attrs, len(ctx.in_shapes[-1]))


@family("reduce_backward")
def _reduce_backward(ctx: StepCtx, p: dict) -> list:
    """A reduction's gradient broadcast back over the reduced axes (divided by count if mean)."""
    x_shape = ctx.in_shapes[1]
    axes = _axes(ctx)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x_shape))
    e = inp(0)
    if ctx.attrs["mean"]:
        e = e * (1.0 / max(1, prod(x_shape[i] for i in axes)))
    return elementwise_actions(ctx, "reduce_backward", [e], [kept], [ctx.ins[0]], x_shape,
                               ctx.outs)


def reduce_actions(ctx: StepCtx, shape: Shape, axes: Sequence[int], kind: str,
                   src: Optional[Ref] = None, dst: Optional[Ref] = None) -> list:
    """Reduce ``src`` (default input 0) of ``shape`` over ``axes`` into ``dst`` (output 0)."""
    src, dst = src or ctx.ins[0], dst or ctx.outs[0]
    if not axes:
        return elementwise_actions(ctx, "reduce_noop", [inp(0)], [shape], [src], shape, [dst])
    n_out, n_red = reduce_split(shape, axes)
    block = use_block_per_output(n_out, n_red, ctx.sm_count)
    chunks = min(-(-ctx.sm_count * 4 // n_out), n_red // 4096) if block else 1
    stem = f"{kind}_{len(shape)}d"
    if chunks > 1:  # too few outputs to fill the device: two stages through a scratch buffer
        part = ctx.new_scratch(4 * n_out * chunks)
        first = render_reduce(stem, shape, axes, kind, True, chunks)
        second = render_reduce(stem + "_final", (n_out, chunks), (1,), kind, False, 1, n_red,
                               partials=True)
        return [Kernel(first, n_out * chunks, THREADS, (part, src), n_out * chunks),
                Kernel(second, grid_for(n_out, ctx.sm_count), THREADS, (dst, part), n_out)]
    kern = render_reduce(stem, shape, axes, kind, block)
    grid = min(n_out, ctx.sm_count * 16) if block else grid_for(n_out, ctx.sm_count)
    return [Kernel(kern, max(grid, 1), THREADS, (dst, src), n_out)]


@family("reduce")
def _reduce(ctx: StepCtx, p: dict) -> list:
    """``p['kind']``: a key of REDUCERS, or a function of the attrs giving one (norm's ``ord``);
    ``p['as_reduce']`` (optional) turns attrs without ``exclude`` into a reduction's (norm)."""
    from ..ops.tensor import reduce_axes
    kind = p["kind"](ctx.attrs) if callable(p["kind"]) else p["kind"]
    assert kind in REDUCERS
    attrs = p["as_reduce"](ctx.attrs) if "as_reduce" in p else ctx.attrs
    return reduce_actions(ctx, ctx.in_shapes[0], reduce_axes(attrs, len(ctx.in_shapes[0])), kind)


@family("sum_to_shape")
def _sum_to_shape(ctx: StepCtx, p: dict) -> list:
    """Sum a broadcast result's gradient back to the shape of input 1."""
    g, like = ctx.in_shapes[0], ctx.in_shapes[1]
    lead = len(g) - len(like)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(like)
                                if d == 1 and g[lead + i] != 1]
    return reduce_actions(ctx, g, axes, "sum")


def step_context(step: Step, shapes: Sequence[Shape], dtypes: Sequence[np.dtype],
                 sm_count: int, scratch: Optional[list] = None,
                 keys: Optional[list] = None) -> StepCtx:
    """The :class:`StepCtx` of ``step`` in a schedule with these slot shapes and dtypes
    (``keys``: the program's random keys so far, shared by all its steps)."""
    return StepCtx(step, step.node.attrs, [tuple(shapes[i]) for i in step.inputs],
                   [tuple(shapes[i]) for i in step.outputs],
                   [dtypes[i] for i in step.inputs + step.outputs],
                   [Ref("slot", i) for i in step.inputs], [Ref("slot", i) for i in step.outputs],
                   sm_count, scratch if scratch is not None else [],
                   keys if keys is not None else [])


# The family modules register themselves into FAMILIES on import.
from . import (lowering_conv_pool, lowering_dense, lowering_fused,  # noqa: E402,F401
               lowering_index, lowering_layout, lowering_nn, lowering_norm, lowering_random,
               lowering_sort, lowering_views)

