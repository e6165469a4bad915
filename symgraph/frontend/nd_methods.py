"""``sg.nd``'s functions, made from the op registry (``sg.nd.<op>``, MXNet's ``nd.add``
family, ``sg.nd.random``), and the engine NDArray calls into: this module, imported by
``symgraph/__init__``, plugs the imperative engine into NDArray (:data:`ENGINE`, see
``nd_operators.set_engine``) and fills ``sg.nd``'s namespace. NDArray's methods are its own
(``nd_operators.ArrayMethods``); nothing here adds to the class.
"""
from __future__ import annotations

import operator
from types import SimpleNamespace
from typing import Any, Callable, Optional, Union

import numpy as np

from . import autograd
from ..runtime import ndarray, random
from ..core import registry
from ..compiler import ops  # noqa: F401  (registers the built-in ops)
from . import symbol as S
from ..core.base import AttrError, where
from ..core.context import Context
from ..core.exports import export, sub_namespace
from ..core.fluent import is_number
from .image_api import make_namespace as make_image_namespace
from .range_api import make_histogram
from .split_api import make_split_v2
from . import nd_extras
from .nd_cached_op import CachedOp
from .imperative import calls, hooks
from .imperative.calls import FAST_CALLS, call, call_info, record, result
from ..runtime.nd_operators import BINARY, binary, set_engine
from ..runtime.ndarray import NDArray


# What NDArray asks of the engine (see ``nd_operators.set_engine``).
ENGINE = SimpleNamespace(
    force=hooks.force, flush=hooks.flush, wait=hooks.wait,
    before_write=hooks.before_write, before_run=hooks.before_run, call=calls.call,
    detach=calls.detach, attach_grad=calls.attach_grad, backward=autograd.backward,
    adopt=hooks.adopt, is_recording=autograd.is_recording)

# MXNet's `nd.add(lhs, rhs)` family: (array-array op, array-scalar op, scalar-array op).
FUNCTIONS: dict[str, tuple[str, str, str]] = {
    "add": BINARY["add"], "subtract": BINARY["sub"], "multiply": BINARY["mul"],
    "divide": BINARY["truediv"], "power": BINARY["pow"], "equal": BINARY["eq"],
    "not_equal": BINARY["ne"], "greater": BINARY["gt"], "greater_equal": BINARY["ge"],
    "lesser": BINARY["lt"], "lesser_equal": BINARY["le"],
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    **{f"logical_{n}": (f"broadcast_logical_{n}", f"_logical_{n}_scalar",
                        f"_logical_{n}_scalar") for n in ("and", "or", "xor")},
}


# two plain numbers: MXNet answers with a Python number (comparisons as 1/0), no array
_ON_NUMBERS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "divide": operator.truediv, "modulo": operator.mod, "power": operator.pow,
    "maximum": lambda x, y: x if x > y else y, "minimum": lambda x, y: x if x < y else y,
    **{n: (lambda f: lambda x, y: int(bool(f(x, y))))(f) for n, f in (
        ("equal", operator.eq), ("not_equal", operator.ne), ("greater", operator.gt),
        ("greater_equal", operator.ge), ("lesser", operator.lt), ("lesser_equal", operator.le),
        ("logical_and", lambda x, y: x and y), ("logical_or", lambda x, y: x or y),
        ("logical_xor", lambda x, y: bool(x) != bool(y)))},
}


def _function(name: str, ops_: tuple[str, str, str]) -> Callable:
    forward, reflected = binary(name, ops_, False), binary(name, ops_, True)

    def function(lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, NDArray):
            result = forward(lhs, rhs)
        elif isinstance(rhs, NDArray):
            result = reflected(rhs, lhs)
        elif is_number(lhs) and is_number(rhs) and name in _ON_NUMBERS:
            return _ON_NUMBERS[name](lhs, rhs)
        else:
            raise AttrError(f"nd.{name}: one operand must be an NDArray, got "
                            f"{type(lhs).__name__} and {type(rhs).__name__}")
        if result is NotImplemented:
            raise AttrError(f"nd.{name}: cannot combine {type(lhs).__name__} and "
                            f"{type(rhs).__name__}")
        return result
    function.__name__ = name
    function.__doc__ = f"MXNet's ``nd.{name}``: ``{ops_[0]}`` of two arrays, or a scalar form."
    return function


# -- sg.nd op functions ------------------------------------------------------------------------

MAX_FAST = 20000  # FAST_CALLS entries (one per call site and attribute values, in practice)


def _fast_key(op: str, args: tuple, kwargs: dict) -> Optional[tuple]:
    """The :data:`FAST_CALLS` key of a call, or None when it cannot have one (an array among
    the keywords: arrays hash by identity and compare by value)."""
    for v in kwargs.values():
        if isinstance(v, (NDArray, np.ndarray, list)):
            return None
    return (op, tuple(map(type, args)), tuple(kwargs.items()))


def _first_call(opdef: registry.OpDef, params: list, key: Any, args: tuple, kwargs: dict,
                out: Optional[NDArray], name: Optional[str]) -> Union[NDArray, list]:
    """An ``sg.nd`` call of a form not seen before: arrays by position or input name, attributes
    by keyword or position (checked); remembered under ``key`` for the fast path when it has
    all arrays positionally."""
    if opdef.variadic:
        arrays = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) \
            else list(args)
        return call(opdef.name, arrays, kwargs, out, name)
    n = 0
    while n < len(args) and isinstance(args[n], NDArray):
        n += 1
    ctx = kwargs.pop("ctx") if isinstance(kwargs.get("ctx"), Context) else None
    # (a call with inplace= never takes the fast path: it would lose the view)
    fast = key is not None and "inplace" not in kwargs
    inplace = bool(kwargs.pop("inplace", False)) and opdef.view
    named = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
    attrs = {k: (tuple(v.tolist()) if isinstance(v, np.ndarray) else v)
             for k, v in kwargs.items() if not isinstance(v, NDArray)}
    # a list right after every input of a fixed-input op is an attribute, as MXNet's
    # generated functions take it (x.broadcast_to([1, 2])); elsewhere it is a mistaken array
    fixed_inputs = isinstance(opdef.inputs, tuple) and n == len(opdef.inputs)
    if n < len(args) and (isinstance(args[n], np.ndarray)
                          or (isinstance(args[n], list) and not fixed_inputs)):
        raise AttrError(f"{where(name or opdef.name, opdef.name)}input {n} must be an "
                        f"NDArray, got {type(args[n]).__name__}")
    for p, v in zip(params, args[n:]):
        if p in attrs:
            raise AttrError(f"{where(name or opdef.name, opdef.name)}attribute {p} given "
                            f"twice")
        attrs[p] = v
    if len(args) - n > len(params):
        raise AttrError(f"{where(name or opdef.name, opdef.name)}too many positional "
                        f"arguments: {len(args) - n} after the arrays")
    info = call_info(opdef, attrs, name)
    if fast and n == len(args) and not named and ctx is None and len(FAST_CALLS) < MAX_FAST:
        FAST_CALLS[key] = info
    inputs = list(args[:n])
    for slot in info.slots[n:]:
        if slot in named:
            inputs.append(named.pop(slot))
    if named:
        raise AttrError(f"{where(name or opdef.name, opdef.name)}no input named "
                        f"{sorted(named)}; inputs: {list(info.slots)}")
    outs = record(info, inputs, name, ctx)
    if inplace:  # MXNet's inplace=True of a reshaping op: a view sharing the memory
        outs = [NDArray(inputs[0]._data.reshape(o.shape), inputs[0]._ctx) for o in outs]
    return result(outs, out)


def make_nd_function(opdef: registry.OpDef):
    """The ``sg.nd`` function of one op: arrays positionally or by input name, then attributes
    by keyword (or positionally, in the op's schema order, after the arrays); ``out=``."""
    params = [p for p in opdef.params if p != "**"]
    op = opdef.name

    def op_function(*args: Any, out: Optional[NDArray] = None, name: Optional[str] = None,
                    **kwargs: Any) -> Union[NDArray, list]:
        if kwargs:
            key = _fast_key(op, args, kwargs)
        elif len(args) == 1:  # (the usual nd.relu(x): its own key form, no tuple of types)
            key = (op, args[0].__class__)
        else:
            key = (op, tuple(map(type, args)), ())
        try:
            info = FAST_CALLS.get(key) if key is not None else None
        except TypeError:  # an unhashable attribute value (a tuple of lists)
            key, info = None, None
        if info is not None:  # seen before: arrays positionally, attributes by keyword
            outs = record(info, args, name)
            if out is None:
                return outs[0] if len(outs) == 1 else outs
            return result(outs, out)
        return _first_call(opdef, params, key, args, kwargs, out, name)

    from .opdoc import document  # signature and docstring from the registry
    return document(op_function, opdef, front_end="nd")


def make_nd_from_symbol_api(api: Any):
    """``sg.nd`` version of a hand-written ``sg.sym`` function (``Custom``): the symbol it
    builds on placeholder variables gives the node's op and attributes."""
    def op_function(*args: Any, out: Optional[NDArray] = None, name: Optional[str] = None,
                    **kwargs: Any) -> Any:
        arrays: dict[str, NDArray] = {}

        def hold(v: Any) -> Any:
            if isinstance(v, NDArray):
                key = f"_nd{len(arrays)}"
                arrays[key] = v
                return S.var(key)
            return v
        sym = api(*[hold(a) for a in args], **{k: hold(v) for k, v in kwargs.items()})
        node = sym.outputs_[0].node
        inputs = []
        for e in node.inputs:
            if not (e.node.is_variable and e.node.name in arrays):
                raise AttrError(f"{where(name or node.name, node.op)}input {e.node.name!r} "
                                f"must be given as an NDArray")
            inputs.append(arrays[e.node.name])
        info = call_info(registry.get_op(node.op), dict(node.attrs), name)  # (interned)
        return result(record(info, inputs, name), out)

    op_function.__name__ = getattr(api, "__name__", "op")
    op_function.__doc__ = api.__doc__
    return op_function


def fill(namespace: dict) -> None:
    """Put the op functions (and MXNet's function families) in ``sg.nd``'s namespace."""
    everything = list(registry.all_ops()) + list(registry.all_aliases())
    for opname, opdef in registry.all_ops().items():
        api = opdef.extra.get("api")
        fn = (make_nd_from_symbol_api(api(S.apply_op, S.Symbol)) if api
              else make_nd_function(opdef))
        wrap = opdef.extra.get("nd_wrap")  # an op whose attrs come from input values
        namespace.setdefault(opname, wrap(fn) if wrap else fn)
    for alias_name, target in registry.all_aliases().items():
        namespace.setdefault(alias_name, namespace[target])
    # MXNet's `nd._internal`: every op function, private ones included, by its name
    namespace.setdefault("_internal", SimpleNamespace(**{n: namespace[n] for n in everything}))
    for sub, prefix in (("contrib", "_contrib_"), ("linalg", "_linalg_")):
        namespace.setdefault(sub, sub_namespace(namespace, everything, prefix))
    namespace.setdefault("image", make_image_namespace(namespace))  # sg.nd.image
    namespace.setdefault("split_v2", make_split_v2(namespace, list))
    extras = {**nd_extras.FUNCTIONS, "CachedOp": CachedOp}
    for name, fn in extras.items():
        namespace.setdefault(name, fn)
    for name, fn in nd_extras.CONTRIB.items():  # (Python functions in MXNet's nd.contrib)
        setattr(namespace["contrib"], name, fn)
    namespace.setdefault("histogram", make_histogram(namespace["_histogram"]))
    for name, ops_ in FUNCTIONS.items():
        namespace.setdefault(name, _function(name, ops_))
    namespace["random"] = random  # sg.nd.random is sg.random: one generator
    for legacy, fn in (("random_uniform", random.uniform), ("normal", random.normal),
                       ("random_normal", random.normal), ("uniform", random.uniform)):
        namespace.setdefault(legacy, fn)  # MXNet's legacy names (1.x: nd.normal samples)
    export(namespace, everything + list(FUNCTIONS) + list(extras)
           + ["random", "random_uniform", "random_normal", "uniform", "normal"])


set_engine(ENGINE)
fill(vars(ndarray))
