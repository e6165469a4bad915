"""Gluon blocks: :class:`Block` (imperative ``forward``) and :class:`HybridBlock`
(``hybrid_forward(F, x, ...)`` with ``F`` = ``sg.nd`` or ``sg.sym``).

Naming follows MXNet 1.x: a block made outside any ``name_scope`` takes a fresh name from the
global name manager (``simplecnn0_``); a child made inside its parent's ``name_scope`` gets
``<parent prefix><hint><n>_`` (``simplecnn0_conv0_``), and its parameters are named
``<block prefix><name>`` (``simplecnn0_conv0_weight``). ``save_parameters`` writes structural
names instead (``conv1.weight``), so a file fits any instance of the same network.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Optional, Union

from ..runtime import ndarray as _nd
from ..frontend import symbol as _sym
from ..frontend.symbol import Symbol
from ..core.base import BindError, GraphError, SymgraphError
from ..frontend.imperative import call_info, record
from ..core.registry import get_op
from .block_api import BlockAPI
from .block_scope import BlockScope
from .nested import flatten, regroup
from .hybrid_state import CachedTrace, OpCall, OpHook, ParamArrays, Trace
from .one_op import Kept, capture
from .parameter import VERSION, DeferredInitializationError, Parameter
from .parameter_dict import ParameterDict
from .block_checks import (check_attr_type, check_regex, named_error,
                           warn_unregistered_containers)


class Block(BlockAPI):
    """Base class of all layers and models: children and parameters assigned as attributes
    are registered; ``__call__`` runs :meth:`forward`.

    Examples
    --------
    >>> class Double(sg.gluon.Block):
    ...     def forward(self, x):
    ...         return 2 * x
    >>> Double()(sg.nd.array([1, 2]))
    [2. 4.]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, prefix: Optional[str] = None,
                 params: Optional[ParameterDict] = None) -> None:
        self._empty_prefix = prefix == ""
        self._prefix, self._params = BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = BlockScope(self)
        self._children: OrderedDict[str, Block] = OrderedDict()
        self._reg_params: dict[str, Parameter] = {}
        self._forward_hooks: OrderedDict[int, Callable] = OrderedDict()  # id -> hook
        self._forward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()

    def __repr__(self) -> str:
        lines = [f"  ({k}): {v!r}".replace("\n", "\n  ") for k, v in self._children.items()]
        body = "\n" + "\n".join(lines) + "\n" if lines else ""
        return f"{type(self).__name__}({body})"

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_children"):
            check_attr_type(self, name, value, Block)
            if isinstance(value, Block):
                self.register_child(value, name)
            elif isinstance(value, Parameter):
                self._reg_params[name] = value
                VERSION[0] += 1  # (forward keeps the parameters' arrays while it is unchanged)
        super().__setattr__(name, value)

    def _alias(self) -> str:
        return type(self).__name__.lower()

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def name(self) -> str:
        return self._name

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (not its children's)."""
        return self._params

    def name_scope(self) -> BlockScope:
        """``with block.name_scope():`` names children and symbols under this block."""
        return self._scope

    def register_child(self, block: "Block", name: Optional[str] = None) -> None:
        """Register ``block`` as a child (attribute assignment does this)."""
        self._children[name or str(len(self._children))] = block

    def collect_params(self, select: Optional[str] = None) -> ParameterDict:
        """This block's and its children's parameters; ``select`` is a regular expression
        matched against full names (``'.*weight|.*bias'``)."""
        check_regex(select)
        warn_unregistered_containers(self, Block)
        out = ParameterDict(self._params.prefix)
        out.update(self._params.select(select))
        for child in self._children.values():
            out.update(child.collect_params(select))
        return out

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        prefix = prefix + "." if prefix else prefix
        out = {prefix + k: v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialise every parameter of this block and its children (default: Uniform)."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize the HybridBlock children (a plain Block itself stays imperative)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype: Any) -> None:
        """Cast every parameter to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self.params.values():
            p.cast(dtype)

    def zero_grad(self) -> None:
        """Set every parameter's gradient to zero."""
        self.collect_params().zero_grad()

    def apply(self, fn: Callable[["Block"], Any]) -> "Block":
        """Call ``fn`` on every child (recursively) and then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def __call__(self, *args: Any) -> Any:
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self.forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def forward(self, *args: Any) -> Any:
        """The computation; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")


# HybridBlock attributes set by its own bookkeeping (the rest reset a one-op layer's call)
_OWN_STATE = frozenset(("_kept", "_seen", "_nd_params", "_nd_calls", "_cached",
                        "_cached_graph", "_active", "_out_format", "_op_hook"))


def is_symbol(x: Any) -> bool:
    return isinstance(x, Symbol)


class HybridBlock(Block):
    """A block written once as ``hybrid_forward(F, x, *args, **params)``: imperative with
    ``F = sg.nd``, or traced into a Symbol with ``F = sg.sym`` after :meth:`hybridize`.

    Examples
    --------
    >>> class Scale(sg.gluon.HybridBlock):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         with self.name_scope():
    ...             self.w = self.params.get('w', shape=(1,), init='ones')
    ...     def hybrid_forward(self, F, x, w):
    ...         return F.broadcast_mul(x, 3 * w)
    >>> net = Scale()
    >>> net.initialize()
    >>> net.hybridize()  # later calls run one compiled graph
    >>> net(sg.nd.array([1, 2]))
    [3. 6.]
    <NDArray 2 @cpu(0)>
    """

    _FIXED_OPS: Optional[Callable] = None  # hybrid_forward of kept op calls (gluon/one_op.py)

    def __init__(self, prefix: Optional[str] = None,
                 params: Optional[ParameterDict] = None) -> None:
        super().__init__(prefix, params)
        self._active = False
        # (the kinds of state: hybrid_state.py)
        self._cached: dict[Any, CachedTrace] = {}  # input signature -> its traced path
        self._cached_graph: Union[Trace, tuple] = ()  # the last trace (() before one)
        self._out_format: Any = None  # nesting of the last trace's outputs (nested.flatten)
        self._nd_calls: dict[tuple, OpCall] = {}  # (sg.nd function, arity) -> call; see _op
        self._nd_params: Optional[ParamArrays] = None  # the arrays forward used last
        self._kept: Optional[Kept] = None  # op calls kept by one_op.capture
        self._seen: Optional[list] = None  # _op's calls while one_op.capture watches
        self._op_hook: Optional[OpHook] = None  # register_op_hook's callback

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name not in _OWN_STATE:  # (anything else may change what forward computes)
            self.__dict__["_kept"] = None
        if isinstance(value, HybridBlock) and hasattr(self, "_cached"):
            self._clear_cache()

    def register_child(self, block: Block, name: Optional[str] = None) -> None:
        if not isinstance(block, HybridBlock):
            raise GraphError(f"Children of HybridBlock must also be HybridBlock, but "
                             f"{block!r} has type {type(block).__name__}. If you are using "
                             f"Sequential, please try HybridSequential instead")
        super().register_child(block, name)
        self._clear_cache()

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:
        """``callback(name, op_name, array)`` on each op output (``monitor_all``: inputs too)
        while this block runs hybridized; the children get it as well."""
        self._op_hook = OpHook(callback, monitor_all)
        super().register_op_hook(callback, monitor_all)

    def _clear_cache(self) -> None:
        self._cached = {}
        self._cached_graph = ()
        self._kept = None

    def hybridize(self, active: bool = True, static_alloc: bool = False,
                  static_shape: bool = False, **kwargs: Any) -> None:
        """Trace ``hybrid_forward`` with ``F = sg.sym`` on the next call and reuse the symbol
        (cached per input shapes and dtypes); ``static_*`` are accepted: every compiled
        program already has a static memory plan."""
        self._active = active
        self._clear_cache()
        super().hybridize(active, **kwargs)

    def cast(self, dtype: Any) -> None:
        self._clear_cache()
        super().cast(dtype)

    def forward(self, x: Any, *args: Any) -> Any:
        """Symbols in: trace with ``F = sg.sym``. Arrays in: run (traced if hybridized).
        Inputs may be None (an optional input left out), the first one too."""
        first = x
        if x is None or isinstance(x, (list, tuple)):  # (the first array leaf decides)
            first = next((a for a in flatten((x,) + args)[0] if a is not None), None)
            if first is None:
                raise BindError(f"{self.name}: every input is None; give at least one array")
        if isinstance(first, Symbol):  # traced: F = sg.sym
            params = {k: v.var() for k, v in self._reg_params.items()}
            with self.name_scope():
                return self.hybrid_forward(_sym, x, *args, **params)
        if self._active:  # hybridized: the traced program of these inputs' signature
            from .cached_op import call_cached
            return call_cached(self, (x,) + args)
        got = self._nd_params
        if got is not None and got.valid_for(first.context):
            params = got.arrays
        else:
            params = self._params_on(first.context, x, args)
        kept = self._kept
        try:
            if kept is not None and kept.fits(params, args):  # kept op calls (one_op.py)
                return kept.run(self, x, args)
            if self._FIXED_OPS is not None:  # a layer with fixed op calls: watch and keep
                return capture(self, x, args, params)
            return self.hybrid_forward(_nd, x, *args, **params)
        except SymgraphError as exc:
            raise named_error(exc, self.prefix) from None

    def _params_on(self, ctx: Any, x: Any, args: tuple) -> dict:
        """This block's parameter arrays on ``ctx`` (deferred initialisations run first);
        kept for the next forward until a Parameter's arrays change (``VERSION``)."""
        try:
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        except DeferredInitializationError:
            self.infer_shape(x, *args)
            for p in self.collect_params().values():
                p._finish_deferred_init()
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        self._nd_params = ParamArrays(VERSION[0], ctx, params)
        return params

    def _op(self, F: Any, fn: Callable, arrays: tuple, attrs: dict,
            name: Optional[str] = "fwd") -> Any:
        """A layer's op: ``fn(*arrays, name=name, **attrs)`` (no name: ``fn(*arrays, **attrs)``),
        ``fn`` being ``F``'s function of the op. On NDArrays (``F`` is ``sg.nd``) the call
        parsed for these attributes is kept per function and arity, and recorded directly: a
        layer calls its ops with the same attributes at every step, and comparing them costs
        less than ``sg.nd``'s keyword key (a layer calling one op with two attribute sets
        looks the call up again each time it switches)."""
        if F is not _nd:
            return fn(*arrays, **attrs) if name is None else fn(*arrays, name=name, **attrs)
        got = self._nd_calls.get((fn, len(arrays)))
        if got is None or got.attrs != attrs:
            got = self._nd_calls[fn, len(arrays)] = OpCall(
                dict(attrs), call_info(get_op(fn.__name__), dict(attrs), name))
        outs = record(got.call, arrays, name)
        out = outs[0] if got.call.nvis == 1 else outs
        if self._seen is not None:  # (one_op.capture watches)
            self._seen.append((got.call, arrays, name, out))
        return out

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        """The computation with ``F`` = ``sg.nd`` or ``sg.sym``; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward()")

    def _get_graph(self, *args: Any) -> tuple[list, Any]:
        """Trace with ``F = sg.sym`` on inputs ``data`` (or ``data0``, ``data1``...)."""
        from ..frontend import symbol as sym
        flat, fmt = flatten(args)
        given = [a is not None for a in flat]  # (a None input stays None in the trace)
        names = iter(["data"] if sum(given) == 1 else [f"data{i}" for i in range(sum(given))])
        leaves = [sym.var(next(names)) if g else None for g in given]
        inputs = [v for v in leaves if v is not None]
        out = self.forward(*regroup(leaves, fmt))  # (not __call__: its hooks see arrays only)
        outs, self._out_format = flatten(out)
        for o in outs:
            if not is_symbol(o):
                raise GraphError(f"{self.name}: hybrid_forward returned {type(o).__name__}, "
                                 f"expected Symbols (or a list of them)")
        group = outs[0] if len(outs) == 1 else sym.Group(outs)
        self._cached_graph = Trace(inputs, group)
        return inputs, group

    def infer_shape(self, *args: Any) -> None:
        """Fill the unknown sizes of the parameters' shapes from the inputs' shapes."""
        inputs, out = self._get_graph(*args)
        shapes = {i.name: tuple(a.shape) for i, a in zip(inputs, flatten(args)[0])}
        try:
            arg_shapes, _, aux_shapes = out.infer_shape_partial(**shapes)
        except Exception as exc:  # the shape rule's message names node, op and values
            raise type(exc)(f"{self.name}: deferred initialization failed because a "
                            f"shape cannot be inferred from inputs {shapes}: {exc}") from None
        known = dict(zip(out.list_arguments(), arg_shapes))
        known.update(zip(out.list_auxiliary_states(), aux_shapes))
        for p in self.collect_params().values():
            if known.get(p.name):  # (unknown: () or None)
                p.shape = known[p.name]

    def infer_type(self, *args: Any) -> None:
        """Set the parameters' dtypes from the inputs' dtypes."""
        inputs, out = self._get_graph(*args)
        arg_types, _, aux_types = out.infer_type(
            **{i.name: a.dtype for i, a in zip(inputs, flatten(args)[0])})
        known = dict(zip(out.list_arguments(), arg_types))
        known.update(zip(out.list_auxiliary_states(), aux_types))
        for p in self.collect_params().values():
            if known.get(p.name):  # (unknown: () or None)
                p.dtype = known[p.name]

    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> None:
        """Write ``path-symbol.json`` and ``path-%04d.params`` (``arg:``/``aux:`` names), the
        checkpoint that ``sg.mod.Module.load`` and :meth:`SymbolBlock.imports` read."""
        if not self._cached_graph:
            raise BindError(f"{self.name}: please first call block.hybridize() and then run "
                            f"forward with this block at least once before calling export")
        from ..training.checkpoint import save_checkpoint
        sym = self._cached_graph.output
        aux_names = set(sym.list_auxiliary_states())
        arg, aux = {}, {}
        for name, p in self.collect_params().items():
            (aux if name in aux_names else arg)[name] = p._reduce()
        save_checkpoint(path, epoch, sym, arg, aux)


__all__ = ["Block", "HybridBlock"]
