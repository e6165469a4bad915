"""The compiled CPU backend (``SYMGRAPH_CPU=compiled``): the numpy program with compiled steps.

It runs the schedule the numpy backend runs (the same passes, fusion groups and memory plan)
and the same way, step by step, but each step that has a compiled form runs that instead of
its op's numpy reference: the fused elementwise/broadcast groups (``group.py``: one numba
loop nest per group, split over the backend's threads), 2-D convolutions and their gradients
and max pooling and its gradient (``layers.py``), BatchNorm (``norm.py``), also as a fused
group's head. Every other step is the numpy reference. Which steps fall back, and why, is decided when the program is
built and listed by :meth:`CompiledProgram.fallbacks`.

Example::

    >>> import numpy as np, symgraph as sg
    >>> from symgraph.runtime import compile as C
    >>> from symgraph.runtime.cpu import backend
    >>> net = sg.sym.relu(sg.sym.var("x") * 2.0 + 1.0)
    >>> g = net.graph()
    >>> stage = C.build_stage(g.with_types(C.infer(g, {"x": (64, 64)}, {"x": np.float32})),
    ...                       [], False, sg.cpu())
    >>> prog = backend.compile(stage.schedule)
    >>> [s.op for s in prog.compiled_steps()]
    ['_fused']
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...compiler.ops.rnn import computes
from ...compiler.passes.channel_last import ONEDNN, channel_last
from ...compiler.schedule import Schedule
from ...core import config
from ...core.expr import Expr, inp, topo
from ...core.expr import evaluate as expr_evaluate
from ...core.registry import get_op
from ..backend import numpy_backend
from ..backend.numpy_backend import NumpyProgram
from ..cuda.actions import lowering_of
from .group import FusedStep, compute_dtype, why_not
from .layers import LAYERS, absorbs_relu_mask, max_pool_grad_relu, op_layer
from . import memory, onednn, rnn, rows
from .layers_onednn import absorbs_relu, dnnl_forward_relu
from .norm import BatchNormGroup, batch_norm
from .reduce import LEADING, why_not_reduce
from .render import why_not_dtype
from .update import update_in_place  # noqa: F401 (the backend's: compile.formula_updater)

MIN_ELEMENTS = 1 << 12
"""Groups whose largest output has fewer elements run the numpy reference: there numpy takes
microseconds and a kernel's first compilation about 0.3 s, which code building many small
graphs (imperative scripts, test suites) would pay again and again. Tests set it to 0."""


def channel_last_for_onednn(graph: Any) -> Any:
    """``channel_last`` with oneDNN's policy when oneDNN runs the convolutions (it reads NHWC
    data in place, where NCHW data is reordered on every call); ``SYMGRAPH_NHWC=0`` keeps
    every convolution NCHW."""
    if not config.get("SYMGRAPH_NHWC") or onednn.why_not():
        return graph
    return channel_last(graph, ONEDNN)


def __getattr__(name: str) -> Any:
    """``FORWARD_PIPELINE``, the passes before autodiff: the numpy backend's, read when asked
    (the two CPU backends run one graph, also where a caller changes the numpy one), then the
    layout oneDNN's convolutions want."""
    if name == "FORWARD_PIPELINE":
        return numpy_backend.FORWARD_PIPELINE + (channel_last_for_onednn,)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class StepInfo:
    """A step of the program: index, op, node name, and why it runs the numpy reference
    (empty for a compiled step)."""

    index: int
    op: str
    node: str
    why: str = ""


def _group(schedule: Schedule, k: int, stem: str, exprs: Sequence[Expr], shapes: Sequence[Any],
           expr_types: list, head: Any = None, n_extra: int = 0
           ) -> tuple[Optional[FusedStep], str]:
    """Step ``k`` as compiled kernels of ``exprs`` (named after ``stem``), or None and why it
    cannot compile."""
    step = schedule.steps[k]
    out_type = schedule.dtypes[step.outputs[0]]
    why = why_not(exprs, expr_types + [out_type])
    if why:
        return None, why
    size = max([prod(s) for s in shapes], default=0)
    if size < MIN_ELEMENTS:
        return None, f"{size} elements, below MIN_ELEMENTS ({MIN_ELEMENTS}): numpy is as fast"
    return FusedStep(exprs, shapes, stem, f"{step.node.name} ({step.node.op})",
                     compute_dtype(out_type) or "float32", head, n_extra), ""


def _fused(schedule: Schedule, k: int) -> tuple[Optional[FusedStep], str]:
    """A ``_fused`` group: its formulas after its head, if it has one (compiled where
    ``layers.py`` has the head's op, else its numpy reference)."""
    step = schedule.steps[k]
    a, dt = step.node.attrs, schedule.dtypes
    head = a["head"]
    ins = [dt[s] for s in step.inputs]
    expr_types = ins if head is None else [dt[step.outputs[0]]] + ins[head[2]:]
    fused, why = _group(schedule, k, a["name"], a["exprs"], a["shapes"], expr_types, head,
                        len(a.get("extra", ())))
    if fused is not None and head is not None:
        fused.head_compute = op_layer(get_op(head[0]), head[1],
                                      [schedule.shapes[s] for s in step.inputs[:head[2]]],
                                      ins[:head[2]])[0]
        if not a.get("extra"):  # the head applies the formula itself where it can
            if absorbs_relu(fused.head_compute, a["exprs"], len(step.inputs) - head[2]):
                return _head_only(head[1], dnnl_forward_relu), ""
            if absorbs_relu_mask(fused.head_compute, a["exprs"], step.inputs, head[2]):
                return _head_only(head[1], max_pool_grad_relu), ""
        if fused.head_compute is batch_norm:
            return BatchNormGroup(fused, head[1]), ""
    return fused, why


def _head_only(attrs: Any, compute: Callable) -> Callable:
    """A group whose formulas its head's compute applies itself: the head alone."""
    def run(_: Any, xs: list, ctx: Any) -> list:
        return compute(attrs, xs, ctx)
    run.__name__ = compute.__name__
    return run


def _layer(schedule: Schedule, k: int) -> tuple[Optional[Any], str]:
    """A convolution or pooling step: ``layers.py``'s compiled form, where it has one."""
    step = schedule.steps[k]
    return op_layer(get_op(step.node.op), step.node.attrs,
                    [schedule.shapes[s] for s in step.inputs],
                    [schedule.dtypes[s] for s in step.inputs])


def _elementwise(schedule: Schedule, k: int) -> tuple[Optional[FusedStep], str]:
    """An elementwise op left alone by fusion: a group of one, its ``OpDef.expr``."""
    step = schedule.steps[k]
    op = get_op(step.node.op)
    e = op.expr(step.node.attrs, *(inp(i) for i in range(len(step.inputs))))
    if all(a.op in ("input", "const") for a in e.args):
        # one numpy ufunc is one pass too, and numpy's transcendentals are SIMD: exp over
        # the LSTM model's 7 M logits took 3.4 ms in numpy, 16 ms compiled
        return None, f"one primitive ({e.op}): numpy's ufunc is as fast or faster"
    return _group(schedule, k, step.node.op, [e], [schedule.shapes[step.outputs[0]]],
                  [schedule.dtypes[s] for s in step.inputs])


def _reduce(schedule: Schedule, k: int) -> tuple[Optional[Any], str]:
    """A reduction: a float sum or mean over leading axes as one BLAS product (``reduce.py``),
    any other numpy's."""
    step = schedule.steps[k]
    kind = lowering_of(get_op(step.node.op))[1].get("kind", "")
    why = why_not_reduce(kind, step.node.attrs, [schedule.shapes[s] for s in step.inputs],
                         schedule.dtypes[step.inputs[0]])
    return (None, why) if why else (LEADING[kind], "")


_RNN = dict(zip(("rnn", "rnn_backward"), computes(rnn)))


def _rnn(schedule: Schedule, k: int) -> tuple[Optional[Any], str]:
    """``RNN`` or its backward with compiled gate kernels (``rnn.py``), where its dtype has
    them."""
    step = schedule.steps[k]
    why = why_not_dtype(schedule.dtypes[step.inputs[0]])
    return (None, why) if why else (_RNN[lowering_of(get_op(step.node.op))[0]], "")


def _softmax(schedule: Schedule, k: int) -> tuple[Optional[Any], str]:
    """``softmax`` or ``log_softmax`` over the last axis, or their gradient, in blocks of rows
    (``rows.py``), where every input and the output have one dtype."""
    step = schedule.steps[k]
    x = step.inputs[0]
    dtypes = {schedule.dtypes[s] for s in (*step.inputs, *step.outputs)}
    why = rows.why_not(step.node.op, step.node.attrs, schedule.shapes[x], schedule.dtypes[x])
    if not why and len(dtypes) > 1:
        why = "inputs or output of another dtype (compiled rows: one dtype)"
    return (None, why) if why else (rows.ROWS[step.node.op], "")


# Lowering family (the op's ``OpDef.lowering``, as the CUDA backend reads it) -> the function
# making a step's compiled compute function, or None and the reason it has none.
COMPILERS: dict[str, Callable[[Schedule, int], tuple[Optional[Any], str]]] = {
    "fused": _fused, "elementwise": _elementwise, "reduce": _reduce, "rnn": _rnn,
    "rnn_backward": _rnn, "softmax": _softmax, "softmax_backward": _softmax,
    **{family: _layer for family, _ in LAYERS}}


_FORMULAS: dict[tuple, FusedStep] = {}


def evaluate(roots: Sequence[Expr], inputs: Sequence[Any], dtype: Any) -> list:
    """``core.expr.evaluate``'s contract (formulas on numpy arrays, broadcasting, computed in
    ``dtype``) as one compiled kernel, where every formula reads an array of the inputs'
    broadcast shape of at least ``MIN_ELEMENTS`` elements and compiles; else numpy's. The
    optimizers' update rules run through it on this backend: SGD with momentum over the seed
    CNN's 401 K fc1 weights took 6.3 ms as numpy's ufuncs and 0.19 ms as one kernel, measured
    alone (ResNet-18's 512x512x3x3: 16.4 and 1.4 ms).

    Example::

        >>> import numpy as np
        >>> from symgraph.core.expr import inp
        >>> evaluate([inp(0) * 2.0 + inp(1)], [np.ones(3), np.float64(1.0)], np.float64)[0]
        array([3., 3., 3.])
    """
    arrays = [np.asarray(x) for x in inputs]
    dt = np.dtype(dtype)
    key = (tuple(roots), tuple(a.shape for a in arrays), dt.name)
    if key not in _FORMULAS:  # (decided once per formulas, shapes and dtype: a step's hot path)
        if len(_FORMULAS) >= 256:
            _FORMULAS.pop(next(iter(_FORMULAS)))
        _FORMULAS[key] = _formula_kernel(roots, [a.shape for a in arrays], dt)
    step = _FORMULAS[key]
    if step is None:
        return expr_evaluate(roots, inputs, dtype)
    return step(None, [a.astype(dt, copy=False) for a in arrays], None)


def _formula_kernel(roots: Sequence[Expr], shapes: list, dt: np.dtype) -> Optional[FusedStep]:
    """:func:`evaluate`'s kernel for formulas ``roots`` over inputs of ``shapes``, or None
    where numpy's ufuncs run them (see there)."""
    shape = np.broadcast_shapes(*shapes)
    full = {i for i, s in enumerate(shapes) if s == shape}
    if prod(shape) < MIN_ELEMENTS or dt.name not in ("float32", "float64") \
            or why_not(roots, [dt]) or not all(
                full & {int(e.value) for e in topo([r]) if e.op == "input"} for r in roots):
        return None
    return FusedStep(list(roots), [shape] * len(roots), "formulas", "formulas", dt.name)


class CompiledProgram(NumpyProgram):
    """A schedule ready to run on the CPU with compiled kernels where it has them."""

    def __init__(self, schedule: Schedule) -> None:
        self._info: list[StepInfo] = []
        self._compiled: list[Any] = []
        super().__init__(schedule)  # (asks step_compute for every step)

    def step_compute(self, k: int) -> Callable:
        """The step's compiled kernels where its lowering family has a compiler and the step
        fits, else its op's numpy reference."""
        node = self.schedule.steps[k].node
        family = lowering_of(get_op(node.op))[0]
        make = COMPILERS.get(family)
        fn, why = make(self.schedule, k) if make else (None, f"no compiled {family!r} kernels")
        self._info.append(StepInfo(k, node.op, node.name, why))
        if fn is None:
            return super().step_compute(k)
        self._compiled.append(fn)
        return fn

    def fallbacks(self) -> list[StepInfo]:
        """The steps that run their op's numpy reference, each with the reason."""
        return [s for s in self._info if s.why]

    def compiled_steps(self) -> list[StepInfo]:
        """The steps that run compiled kernels."""
        return [s for s in self._info if not s.why]

    def kernel_names(self) -> list[str]:
        """The kernels the compiled groups have rendered so far (one per group and output
        shape, after the first run); layer steps (``layers.py``) render theirs per geometry."""
        return [name for f in self._compiled for name in getattr(f, "kernels", ())]


def compile(schedule: Schedule, ctx: Any = None) -> CompiledProgram:  # noqa: A001 (interface)
    """The backend interface: a runnable program for ``schedule`` (``ctx`` is the CPU)."""
    memory.keep_freed()  # (once per process: its steps' large arrays reuse mapped pages)
    return CompiledProgram(schedule)
