"""The operator registry: one :class:`OpDef` per op holds everything about it.

Passes, inference, autodiff and backends only ever read op properties from here; none of them
branches on op names. An op's definition lives in one place under ``symgraph/ops/``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from .attrs import Attrs, Param
from .base import GraphError

Shape = tuple[int, ...]
MaybeShape = Optional[Shape]

# Fusion pattern kinds, read by the fusion pass and nothing else.
ELEMWISE = "elementwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
REDUCE = "reduce"
GEMM = "gemm"
OPAQUE = "opaque"
PATTERNS = (ELEMWISE, BROADCAST, INJECTIVE, REDUCE, GEMM, OPAQUE)

# Channels-last rules (``OpDef.layout``), read by ``passes/channel_last``.
POSITIONAL = "positional"
CHANNEL_AXIS = "channel_axis"
CONVOLUTION = "convolution"
WINDOW = "window"

class PartialShape(tuple):
    """A shape a rule returns with 0 as an unknown dimension even where shapes are otherwise
    exact (a bind): ``_ones(shape=(-1, 3))`` leaves its first dimension to its consumers.
    Inference keeps such shapes, and what rules derive from them, apart from exact ones until
    every dimension is known."""


NOT_DIFFERENTIABLE = "not differentiable"
"""Gradient marker of ops whose gradient is zero or undefined (argmax, comparisons)."""

NO_GRADIENT = "no gradient"
"""Gradient marker of ops MXNet registers no gradient for (batch_take): autodiff raises
GraphError when a gradient would have to flow through one."""


@dataclass
class RunCtx:
    """What a numpy reference (or a device callback) may need beyond its inputs.

    ``state`` is the executor's store for run-time objects an op keeps between runs (a Python
    ``CustomOp`` instance): one dict per executor, freed with it; None outside an executor."""

    is_train: bool = False
    rng: Optional[np.random.Generator] = None
    state: Optional[dict] = None


ShapeRule = Callable[[Attrs, list, list], tuple[list, list]]
TypeRule = Callable[[Attrs, list, list], tuple[list, list]]
Compute = Callable[[Attrs, list, RunCtx], list]


def _value_or_call(v: Any, attrs: Attrs) -> Any:
    return v(attrs) if callable(v) else v


def same_type(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Default dtype rule: every input and output shares one dtype (bidirectional)."""
    known = next((t for t in list(ins) + list(outs) if t is not None), None)
    if known is None:
        return ins, outs
    return [known] * len(ins), [known] * len(outs)


@dataclass(frozen=True)
class OpDef:
    """Everything about one operator.

    * ``params``: attribute schema; ``inputs``: input names, a tuple or a function of the attrs
      (``no_bias`` drops ``bias``); ``aux``: the inputs that are auxiliary states.
    * ``infer_shape(attrs, in_shapes, out_shapes) -> (in_shapes, out_shapes)`` fills what it can
      in both directions, ``None`` meaning unknown; it raises ``ShapeError`` on a contradiction.
    * ``compute(attrs, inputs, ctx) -> outputs``: the numpy reference (hidden outputs included).
    * ``gradient(c) -> [symbol or None per input]`` built from registered ops (see
      ``passes/gradient.py`` for ``c``), or ``NOT_DIFFERENTIABLE``.
    * ``pattern``: fusion kind; ``expr``: scalar formula for elementwise/broadcast ops.
    * ``mutates``: pairs (hidden output, aux input) copied back after a training forward, or
      a function of the attrs giving them (a multi-tensor update's pairs follow its count).
    * ``always_mutates``: ``mutates`` is copied back after every forward, inference included
      (optimizer updates write their states on each call; BatchNorm's statistics only train).
    * ``view``: a pure reshape; lowering aliases its output to its input instead of a step.
    * ``epilogue``: besides GEMM-like ops, this op may take an elementwise consumer as its
      epilogue (fusion's ``head``).
    * ``cast``: converts each element on its own to another dtype (so it commutes with any
      move of elements: ``passes/fold_casts`` folds it into a neighbouring transpose).
    * ``layout``: how the op runs on channels-last data (``passes/channel_last``):
      ``POSITIONAL``, its value at a position depends on that position's inputs only (implied
      for elementwise and broadcast ops); ``CHANNEL_AXIS``, its ``axis`` attribute names the
      channel axis and moves with it; ``CONVOLUTION``, it runs as ``layout='NHWC'`` with an
      OHWI weight; ``WINDOW``, it runs as ``layout='NHWC'`` (pooling).
    * ``group_epilogue``: its output 0 may take the fused elementwise group that reads it as its
      epilogue (``passes/fuse_bn_epilogue``; the lowering applies the formula as it stores).
    * ``activation``: the activation function the op applies (a name, or a function of the
      attrs giving one), for fusions that fold an activation into another op.
    * ``partial_shapes``: the shape rule also receives partially known shapes, 0 being an
      unknown dimension (MXNet's partial shapes), and may return them; other rules only ever
      see fully known shapes or None.
    * ``extra["api"]``: ``api(apply_op, symbol_cls)`` makes a hand-written ``sg.sym`` function
      replacing the generated one (for ops whose inputs and attributes are not a fixed schema,
      such as ``Custom``); ops sit below ``symbol.py``, so the front end hands them its pieces.
    * ``extra["guess_shape"]``: a shape rule tried only where inference leaves the node's
      shapes undecided, then inference goes on (broadcast ops: MXNet's reading of ``a + b``).
    * ``extra["input_init"]``: input name -> initializer JSON given as ``__init__`` to a
      variable created for that input (MXNet's ``FSetInputVarAttrOnCompose``: PReLU's gamma).
    * ``extra["input_cast_attr"]``: the attribute naming the dtype the op converts its data
      (input 0) to before computing, None for its own (softmax's ``dtype``): a float cast in
      front of it can be done by the op (``passes/absorb_casts``).
    * ``extra["casts_each"]``: output i is input i converted to another dtype (``amp_multicast``).
    * ``extra["float_inputs"]``: input slots the op reads in any float dtype, computing in
      float32, its output dtype not following them (``_softmax_backward``'s ograd).
    * ``extra["output_cast_attr"]``: the attribute naming the dtype the op stores its output
      0 in, None for its own: a narrowing cast after it can be done by the op's store.
    """

    name: str
    params: Mapping[str, Param]
    inputs: Union[tuple[str, ...], Callable[[Attrs], tuple[str, ...]]]
    infer_shape: ShapeRule
    compute: Compute
    gradient: Any
    pattern: str
    infer_type: TypeRule = same_type
    aux: Union[tuple[str, ...], Callable[[Attrs], tuple[str, ...]]] = ()
    outputs: Union[tuple[str, ...], Callable[[Attrs], tuple[str, ...]]] = ("output",)
    num_visible: Union[None, int, Callable[[Attrs], int]] = None
    expr: Optional[Callable] = None
    mutates: Union[tuple[tuple[int, int], ...], Callable[[Attrs], tuple]] = ()
    variadic: Optional[str] = None  # attr holding the number of inputs (Concat's num_args)
    train_dependent: bool = False  # forward differs between training and inference
    always_mutates: bool = False  # ``mutates`` applies after every forward, not only training
    view: bool = False  # output 0 is input 0's bytes under another shape (no step is run)
    epilogue: bool = False  # an elementwise consumer may run as this op's epilogue (like GEMM)
    partial_shapes: bool = False  # the shape rule reads and gives 0 as an unknown dimension
    cast: bool = False  # converts each element on its own (commutes with moves of elements)
    layout: Optional[str] = None  # channels-last rule: POSITIONAL, ..., WINDOW
    group_epilogue: bool = False  # output 0 may take the fused group reading it as epilogue
    activation: Union[None, str, Callable[[Attrs], str]] = None  # the activation applied
    # GPU lowering as data, read by symgraph.runtime.cuda: a family, (family, params), or
    # ("host", {"why": ...}) for an op that runs its numpy reference on host copies.
    lowering: Any = None
    doc: str = ""
    extra: dict = field(default_factory=dict)

    def input_names(self, attrs: Attrs) -> tuple[str, ...]:
        return tuple(_value_or_call(self.inputs, attrs))

    def aux_names(self, attrs: Attrs) -> tuple[str, ...]:
        return tuple(_value_or_call(self.aux, attrs))

    def output_names(self, attrs: Attrs) -> tuple[str, ...]:
        return tuple(_value_or_call(self.outputs, attrs))

    def mutated(self, attrs: Attrs) -> tuple[tuple[int, int], ...]:
        """The (hidden output, input) pairs of ``mutates`` for these attrs."""
        return tuple(_value_or_call(self.mutates, attrs))

    def activation_of(self, attrs: Attrs) -> Optional[str]:
        """The activation this op applies with these attrs (``activation``), or None."""
        return _value_or_call(self.activation, attrs)

    def num_outputs(self, attrs: Attrs) -> int:
        return len(self.output_names(attrs))

    def num_visible_outputs(self, attrs: Attrs) -> int:
        n = _value_or_call(self.num_visible, attrs)
        return self.num_outputs(attrs) if n is None else n


_REGISTRY: dict[str, OpDef] = {}
_GENERATION = [0]  # bumped by every (un)registration: memo tables keyed by op names use it


def generation() -> int:
    """A number that changes whenever an op is registered or removed."""
    return _GENERATION[0]


def register(opdef: OpDef) -> OpDef:
    """Add ``opdef``; a name may be registered once."""
    if opdef.name in _REGISTRY:
        raise GraphError(f"operator {opdef.name!r} registered twice")
    if opdef.pattern not in PATTERNS:
        raise GraphError(f"operator {opdef.name!r}: unknown pattern {opdef.pattern!r}")
    _REGISTRY[opdef.name] = opdef
    _GENERATION[0] += 1
    return opdef


def alias(name: str, target: str) -> None:
    """Register ``name`` as a second spelling MXNet users know (``flatten`` for ``Flatten``).

    The alias resolves to the same OpDef, so graphs only ever contain the canonical name.
    """
    _ALIASES[name] = target


_ALIASES: dict[str, str] = {}


def canonical(name: str) -> str:
    return _ALIASES.get(name, name)


def get_op(name: str) -> OpDef:
    """The definition of op ``name``; GraphError if none is registered."""
    opdef = _REGISTRY.get(name)  # graphs hold canonical names: one lookup on the hot path
    if opdef is not None and name not in _ALIASES:
        return opdef
    try:
        return _REGISTRY[canonical(name)]
    except KeyError:
        why = _REFUSED.get(name)
        raise GraphError(f"operator {name!r} is not supported: {why}" if why else
                         f"unknown operator {name!r}") from None


_REFUSED: dict[str, str] = {}


def refuse(name: str, why: str) -> None:
    """Name an MXNet op symgraph deliberately lacks: looking it up (a JSON that holds it)
    raises GraphError with ``why`` instead of "unknown operator"."""
    _REFUSED[name] = why


def refused() -> dict[str, str]:
    """The ops refused by name, with the reason."""
    return dict(_REFUSED)


def all_ops() -> dict[str, OpDef]:
    """Every registered op by canonical name."""
    return dict(_REGISTRY)


def all_aliases() -> dict[str, str]:
    return dict(_ALIASES)


def has_op(name: str) -> bool:
    return canonical(name) in _REGISTRY


def unregister(name: str) -> None:
    """Remove an op (tests and custom-op re-registration)."""
    _REGISTRY.pop(name, None)
    _GENERATION[0] += 1


_WHERE: dict[Callable[[OpDef], bool], tuple[int, frozenset[str]]] = {}


def ops_where(test: Callable[[OpDef], bool]) -> frozenset[str]:
    """The names of the registered ops whose definition passes ``test``, remembered until an op
    is (un)registered: a pass asks once per graph whether any of its ops are present
    (``graph.op_names().isdisjoint(ops_where(test))``) instead of asking every node.

    Example: ``"Cast" in ops_where(lambda d: d.cast)`` is True. ``test`` is the memo key:
    pass a module-level function, not a new lambda per call."""
    got = _WHERE.get(test)
    if got is None or got[0] != _GENERATION[0]:
        got = (_GENERATION[0], frozenset(n for n, d in _REGISTRY.items() if test(d)))
        _WHERE[test] = got
    return got[1]


def shapes_of(xs: Sequence[Any]) -> list[MaybeShape]:
    return [None if x is None else tuple(x) for x in xs]
