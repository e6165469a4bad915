"""The vocabulary of CUDA lowering: actions, the step context, and the family table.

A lowering function (one per family, in a ``lowering_*`` module) gets a :class:`StepCtx` and
returns a list of actions the backend knows how to run:

* :class:`Kernel` - a generated kernel launch (source rendered by a ``kernels_*`` module or by
  ``codegen``, compiled into the program's one module);
* :class:`Copy`, :class:`Fill`, :class:`Upload` - device copy, 16/32-bit memset, constant bytes;
* :class:`Gemm` - a (strided-batched) cuBLAS GEMM in row-major terms (SGEMM, or GemmEx with
  float16/bfloat16 operands and float32 accumulation); :class:`HeadGemm` - one over matrices
  at two strided levels (attention heads), through arrays of pointers;
* :class:`ConvCall` - a cuDNN convolution (float32, float16 or bfloat16 data, float compute);
* :class:`Switch`, :class:`Choice` - training/inference and library/fallback alternatives;
* :class:`Host` - the documented stopgap: inputs to the host, the numpy reference, results back;
* :class:`Callback` - Python on the step's device buffers (``Custom``).

Arguments are symbolic (:class:`Ref`: a slot, a scratch buffer or a random key) and resolved to
device pointers by the backend, so lowering is pure Python and CI renders every kernel without
a GPU. Every buffer a step touches has a dtype (:meth:`StepCtx.dtype_of`): kernels, scratch
sizes and library calls take it from there (narrow floats are stored narrow and computed in
float). A family states the float dtypes it lowers (:func:`family`'s ``dtypes``: float32,
float16 and bfloat16 unless it says otherwise; :data:`FAMILY_DTYPES`). This module imports no
lowering module: they all import it, and ``lowering.py`` imports them all, so the family table
is full before the first step is lowered.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...core.attrs import Attrs
from ...compiler.ops.geometry import ConvWindow
from ...core.registry import OpDef
from ...compiler.schedule import Step
from .codegen import THREADS, Rendered, grid_for

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Ref:
    """A device buffer: ``("slot", i)``, ``("scratch", k)``, ``("arena", b)`` (scratch placed
    at byte ``b`` of the arena), ``("key", k)`` or ``("state", b)`` of the step's program. Keys are 64-bit random-number keys that live for the whole program:
    the backend writes a fresh one, drawn from ``RunCtx.rng``, before each run of the step that
    owns it. State (``StepCtx.new_state``) lives for the whole program too, zeroed once.
    ``offset``: bytes into the buffer (a time step or a weight matrix of a packed array, for
    library calls and kernels that take the part as a whole buffer: the fused RNN)."""

    kind: str
    index: int
    offset: int = 0

    @property
    def base(self) -> "Ref":
        """The whole buffer this reference points into."""
        return Ref(self.kind, self.index) if self.offset else self


@dataclass(frozen=True)
class Kernel:
    kernel: Rendered
    grid: int
    block: int
    args: tuple[Ref, ...]
    n: int
    cooperative: bool = False  # a grid-wide barrier: every block resident (cuda/cooperative)


@dataclass(frozen=True)
class Copy:
    dst: Ref
    src: Ref
    nbytes: int


@dataclass(frozen=True)
class Fill:
    """``count`` elements of ``dtype`` (a numpy name of a 2- or 4-byte type) set to ``value``."""

    dst: Ref
    value: float
    count: int
    dtype: str = "float32"


def memset_pattern(value: np.ndarray) -> Optional[tuple[int, int]]:
    """(width in bytes, pattern) of a device memset that writes the one-element array
    ``value`` into every element: the widest of a 4-, 2- or 1-byte pattern its bytes repeat (0
    in any dtype, every value of a 2- or 4-byte type: every :class:`Fill`); None when they do
    not (most float64 values)."""
    raw = value.tobytes()
    for width in (4, 2, 1):
        if len(raw) % width == 0 and raw == raw[:width] * (len(raw) // width):
            return width, int.from_bytes(raw[:width], sys.byteorder)
    return None


@dataclass(frozen=True)
class Gemm:
    """C[b] = op(A[b]) @ op(B[b]) (``+ C[b]`` when ``accumulate``), row-major, ``batch``
    matrices."""

    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int
    a: Ref
    b: Ref
    c: Ref
    batch: int = 1
    dtype: str = "float32"  # of A, B and C: float32 (SGEMM) or float16/bfloat16 (GemmEx)
    accumulate: bool = False  # cuBLAS's beta = 1


@dataclass(frozen=True)
class HeadGemm:
    """``gemm`` (its ``batch``: B*H matrices) times ``alpha``, where matrix (b, h) of an
    operand starts ``b * step[0] + h * step[1]`` elements into its buffer, ``b < batch / heads``,
    and has row stride ``ld`` (``lds``, ``steps``: A, B, C), so attention's heads are read and
    written in place inside (B, T, H, D) arrays (the cuBLAS calls:
    ``lowering_attention.head_calls``)."""

    gemm: Gemm
    lds: tuple[int, int, int]
    steps: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]
    heads: int
    alpha: float = 1.0

    @property
    def outer(self) -> int:
        return self.gemm.batch // self.heads


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
    """A cuDNN convolution: ``kind`` fwd (a=x, b=w), data (a=w, b=dy) or filter (a=x, b=dy);
    ``geometry`` is the node's window object, which cuDNN's descriptors read as it is."""

    kind: str
    geometry: ConvWindow
    a: Ref
    b: Ref
    out: Ref
    dtype: str = "float32"  # of the three tensors; cuDNN computes in float for every dtype


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


def flat_actions(acts: Sequence[Any], choice: Optional[str] = None) -> list:
    """Every action, both branches of a Choice and a Switch included (for gathering kernels);
    with ``choice`` ("primary" or "fallback"), the actions a training run executes: each
    Switch's ``train`` branch and that branch of each Choice."""
    out: list = []
    for a in acts:
        if isinstance(a, Choice):
            out += flat_actions(a.primary + a.fallback if choice is None
                                else getattr(a, choice), choice)
        elif isinstance(a, Switch):
            out += flat_actions(a.train + a.infer if choice is None else a.train, choice)
        else:
            out.append(a)
    return out


Action = Any


def _aligned(nbytes: int) -> int:
    """Bytes a step's buffer takes: rounded up to 256 (``plan.ALIGN``: 16-byte packs stay
    aligned)."""
    return (int(nbytes) + 255) // 256 * 256


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
    types: dict = field(default_factory=dict)  # Ref -> numpy dtype of every buffer (shared)
    state: list[int] = field(default_factory=list)  # aligned bytes of state so far (shared)
    scratch_at: Optional[int] = None  # arena offset of this step's scratch (scratch_plan)

    def new_scratch(self, nbytes: int, dtype: Any = np.float32) -> Ref:
        """A temporary buffer of this step (``Ref.index`` is its byte offset in the workspace
        that all steps share: steps run one after another on one stream; or, with
        ``scratch_at``, in the arena, where no slot is live during this step)."""
        offset = sum(self.scratch)
        self.scratch.append(_aligned(nbytes))
        ref = Ref("scratch", offset) if self.scratch_at is None else \
            Ref("arena", self.scratch_at + offset)
        self.types[ref] = np.dtype(dtype)
        return ref

    def new_array(self, count: int, dtype: Any) -> Ref:
        """A scratch buffer of ``count`` elements of ``dtype`` (its size follows the itemsize)."""
        return self.new_scratch(int(count) * np.dtype(dtype).itemsize, dtype)

    def dtype_of(self, ref: Ref) -> np.dtype:
        """The dtype of a buffer of this step (float32 for raw scratch bytes)."""
        return self.types.get(ref.base, np.dtype(np.float32))

    def at(self, ref: Ref, elements: int) -> Ref:
        """``ref`` moved ``elements`` elements of its dtype further (a part of a buffer)."""
        step = self.dtype_of(ref).itemsize * int(elements)
        return Ref(ref.kind, ref.index, ref.offset + step)

    def dt(self, ref: Ref) -> str:
        """The numpy name of ``ref``'s dtype (``"float16"``, ``"bfloat16"``...)."""
        return self.dtype_of(ref).name

    @property
    def storage(self) -> str:
        """The step's float storage dtype: that of output 0 (the dtype a GEMM, a convolution
        or a float kernel of the step stores; narrow types compute in float)."""
        return self.dt(self.outs[0]) if self.outs else "float32"

    def new_key(self) -> Ref:
        """A random key of this step: refreshed from ``RunCtx.rng`` before every run of the
        step, outside any captured CUDA graph, so a replayed graph still draws new numbers."""
        self.keys.append(len(self.keys))
        return Ref("key", len(self.keys) - 1)

    def new_state(self, nbytes: int) -> Ref:
        """Device memory of this step that outlives the run, zero when the program is made
        (``Ref.index``: its byte offset in the program's state; ``scratch`` is shared with the
        other steps). A kernel keeping a counter there must leave it in a state its next
        launch accepts (``kernels_norm``'s barrier: its low bits as they were)."""
        offset = sum(self.state)
        self.state.append(_aligned(nbytes))
        return Ref("state", offset)

    @property
    def stem(self) -> str:
        return self.step.node.op.lstrip("_")


LoweringFn = Callable[[StepCtx, dict], list]
FAMILIES: dict[str, LoweringFn] = {}

FLOAT32_ONLY: frozenset = frozenset({"float32"})
NARROW: frozenset = frozenset({"float16", "bfloat16"})
ALL_FLOATS: frozenset = FLOAT32_ONLY | NARROW
# Family -> the float dtypes its lowering handles (stored and computed as documented above);
# a step whose float buffers have another dtype has no device lowering in that family.
FAMILY_DTYPES: dict[str, frozenset] = {}


def family(name: str, dtypes: frozenset = ALL_FLOATS) -> Callable[[LoweringFn], LoweringFn]:
    """Register lowering ``name``; ``dtypes``: the float dtypes it lowers (every
    family renders float32, float16 and bfloat16 unless it says otherwise)."""
    def deco(fn: LoweringFn) -> LoweringFn:
        FAMILIES[name] = fn
        FAMILY_DTYPES[name] = frozenset(dtypes)
        return fn
    return deco


# Families that move or convert bytes, or run Python: any dtype.
BYTE_FAMILIES = {"copy", "constant", "callback", "cast", "shape_constant", "fill"}

# The dtypes each lowering runs in, by family; a family not listed runs float32 only, and
# BYTE_FAMILIES run any dtype. An op may narrow or widen its own with ``"dtypes"`` in its
# lowering params (``lowering=("gemm", {..., "dtypes": ("float32", "float16")})``, or
# ``"any"``). ``lowering.lower_step`` refuses a step whose dtypes its lowering does not list
# (BindError) unless SYMGRAPH_ALLOW_HOST=1, so a dtype never falls back to the host silently.


def lowering_dtypes(fam: str, params: dict) -> Optional[frozenset[str]]:
    """dtype names a step of family ``fam`` with ``params`` runs in on the GPU (None: any)."""
    declared = params.get("dtypes")
    if declared is not None:
        return None if declared == "any" else frozenset(np.dtype(t).name for t in declared)
    if fam in BYTE_FAMILIES:
        return None
    return FAMILY_DTYPES.get(fam, FLOAT32_ONLY)


def family_supports(fam: str, dtypes: Sequence[Any], index: Sequence[int] = ()) -> bool:
    """Whether family ``fam`` lowers a step with these input-then-output dtypes; positions in
    ``index`` hold indices, where an integer dtype is read as it is."""
    if fam in BYTE_FAMILIES:
        return True
    ok = FAMILY_DTYPES.get(fam, FLOAT32_ONLY)
    return all(np.dtype(t).name in ok for i, t in enumerate(dtypes)
               if not (i in index and np.dtype(t).kind in "iu"))


def lowering_of(op: OpDef) -> tuple[str, dict]:
    """(family, params) of an op: its ``lowering`` data, else elementwise/host by default."""
    low = op.lowering
    if low is None:
        return ("elementwise", {}) if op.expr is not None else ("host", {})
    if isinstance(low, str):
        return low, {}
    return low[0], dict(low[1])


@dataclass(frozen=True)
class Upload:
    """Copy constant host bytes into ``dst`` (from pinned memory: capturable in a graph)."""

    dst: Ref
    data: bytes


def step_context(step: Step, shapes: Sequence[Shape], dtypes: Sequence[np.dtype],
                 sm_count: int, scratch: Optional[list] = None,
                 keys: Optional[list] = None, state: Optional[list] = None,
                 scratch_at: Optional[int] = None) -> StepCtx:
    """The :class:`StepCtx` of ``step`` in a schedule with these slot shapes and dtypes
    (``keys``, ``state``: the program's random keys and state so far, shared by its steps;
    ``scratch_at``: where in the arena its scratch goes, None: the shared workspace)."""
    slots = list(step.inputs) + list(step.outputs)
    return StepCtx(step, step.node.attrs, [tuple(shapes[i]) for i in step.inputs],
                   [tuple(shapes[i]) for i in step.outputs],
                   [dtypes[i] for i in slots],
                   [Ref("slot", i) for i in step.inputs], [Ref("slot", i) for i in step.outputs],
                   sm_count, scratch if scratch is not None else [],
                   keys if keys is not None else [],
                   {Ref("slot", i): np.dtype(dtypes[i]) for i in slots},
                   state if state is not None else [], scratch_at)


def launch(ctx: StepCtx, kern: Rendered, args: tuple, n: int) -> Kernel:
    """One launch of a grid-stride kernel over ``n`` elements, sized for the device."""
    return Kernel(kern, grid_for(n, ctx.sm_count), THREADS, args, n)
