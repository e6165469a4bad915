"""NDArray's operators and fluent methods, and the ``sg.nd.<op>`` functions, all as tables
over registered ops (so every one of them records a node; nothing here computes).

``ndarray.py`` is a low module (executors, backends and files use NDArray) and imports none of
the layers built on it; this module, imported by ``symgraph/__init__``, connects them: it plugs
the imperative engine into NDArray (:data:`ENGINE`), installs the methods that record ops or
run autograd, and fills ``sg.nd``'s namespace (op functions, ``sg.nd.random``)."""
from __future__ import annotations

import weakref
from types import SimpleNamespace
from typing import Any, Callable, Optional, Union

import numpy as np

from . import autograd, imperative, imperative_compile, ndarray, random, registry
from . import ops  # noqa: F401  (registers the built-in ops)
from . import symbol as S
from .base import AttrError, ShapeError, where
from .context import Context
from .exports import export, sub_namespace
from .image_api import make_namespace as make_image_namespace
from .imperative import FAST_CALLS, PENDING, _Call, _call_info, _result, call, record
from .imperative_trace import settle
from .ndarray import NDArray, _host_key, array

# What NDArray asks of the engine (see ``ndarray.set_engine``).
ENGINE = SimpleNamespace(
    force=imperative_compile.force, flush=imperative_compile.flush,
    wait=imperative_compile.wait, before_write=imperative_compile.before_write,
    before_run=imperative_compile.before_run,
    call=imperative.call, detach=imperative.detach, attach_grad=imperative.attach_grad)

# method: (array-array op, array-scalar op, reflected scalar op or None)
BINARY: dict[str, tuple[str, str, str]] = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "truediv": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "gt": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "ge": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "lt": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "le": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
    "eq": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "ne": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
}
REFLECTED = ("add", "sub", "mul", "truediv", "pow")
IN_PLACE = ("add", "sub", "mul", "truediv")

# Fluent methods: x.<name>(...) is sg.nd.<op>(x, ...).
# MXNet's fluent method names; those whose op is registered are installed.
FLUENT: dict[str, str] = {
    n: n for n in (
        "sum", "nansum", "mean", "max", "min", "prod", "nanprod", "norm", "argmax", "argmin",
        "exp", "expm1", "log", "log10", "log2", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt",
        "square", "reciprocal", "abs", "sign", "round", "rint", "fix", "floor", "ceil", "trunc",
        "sin", "cos", "tan", "arcsin", "arccos", "arctan", "degrees", "radians", "sinh",
        "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "relu", "sigmoid", "softmax",
        "log_softmax", "clip", "expand_dims", "squeeze", "tile", "repeat", "broadcast_to",
        "broadcast_like", "broadcast_axes", "one_hot", "pick", "take", "slice", "slice_axis",
        "flip", "reverse", "reshape_like", "zeros_like", "ones_like", "pad", "split",
        "softrelu", "sort", "topk", "argsort", "swapaxes", "shape_array", "size_array")}
FLUENT.update({"flatten": "Flatten", "cast": "Cast"})

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


def _number(x: Any) -> bool:
    return isinstance(x, (int, float, np.number)) and not isinstance(x, bool)


def _binary(name: str, names: tuple[str, str, str], reflected: bool) -> Callable:
    array_op, scalar_op, rscalar_op = names

    def method(self: Any, other: Any) -> Any:
        if isinstance(other, NDArray):
            a, b = (other, self) if reflected else (self, other)
            return call(array_op, [a, b], {})
        if _number(other):
            return call(rscalar_op if reflected else scalar_op, [self], {"scalar": float(other)})
        if isinstance(other, np.ndarray):
            return method(self, array(other, self._ctx, self.dtype))
        return NotImplemented
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _in_place(name: str) -> Callable:
    forward = _binary(name, BINARY[name], False)

    def method(self: Any, other: Any) -> Any:
        result = forward(self, other)
        if result is NotImplemented:
            return result
        if self._buf is None:  # still pending: this array now stands for the new value
            self._entry, self._recorded = result._entry, result._recorded
            settle()  # (the tape's node goes to PENDING, which now holds its one array)
            PENDING[result._entry.node] = [weakref.ref(self)]
            return self
        self[:] = result
        return self
    method.__name__ = f"__i{name}__"
    return method


def _function(name: str, ops_: tuple[str, str, str]) -> Callable:
    forward, reflected = _binary(name, ops_, False), _binary(name, ops_, True)

    def function(lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, NDArray):
            result = forward(lhs, rhs)
        elif isinstance(rhs, NDArray):
            result = reflected(rhs, lhs)
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


def _tostype(self: NDArray, stype: str) -> NDArray:
    """MXNet's storage conversion: only the dense ('default') storage exists here."""
    if stype != "default":
        raise AttrError(f"tostype({stype!r}): sparse storage is not supported; only 'default'")
    return self


def _fluent(fn: Callable) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    return method


def _unary(op: str) -> Callable:
    return lambda self: call(op, [self], {})


def _transpose(self: Any, *axes: Any, **kwargs: Any) -> Any:
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return call("transpose", [self], {"axes": tuple(axes or kwargs.get("axes", ()))})


# -- indexing ---------------------------------------------------------------------------------

def getitem(a: NDArray, key: Any) -> NDArray:
    """Basic indexing (ints and slices) as recorded ``slice``/``Reshape`` ops; anything else
    reads the value on the host (not recorded)."""
    if isinstance(key, slice) and key == slice(None):
        return a
    parts = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(k, (int, np.integer, slice)) for k in parts):
        return array(a.asnumpy()[_host_key(key)], a._ctx, a.dtype)
    if len(parts) > a.ndim:
        raise ShapeError(f"index {key!r} has {len(parts)} entries for an array of shape "
                         f"{a.shape}")
    begin, end, step, keep = [], [], [], []
    for axis, k in enumerate(parts):
        if isinstance(k, slice):
            begin.append(k.start)
            end.append(k.stop)
            step.append(1 if k.step is None else k.step)
            keep.append(True)
            continue
        n = a.shape[axis]
        i = int(k) + n if k < 0 else int(k)
        if not 0 <= i < n:
            raise ShapeError(f"index {int(k)} is out of bounds for axis {axis} of size {n}")
        begin.append(i)
        end.append(i + 1)
        step.append(1)
        keep.append(False)
    y = call("slice", [a], {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})
    if all(keep):
        return y
    shape = tuple(d for d, k in zip(y.shape, keep + [True] * (y.ndim - len(keep))) if k)
    return call("Reshape", [y], {"shape": shape or (1,)})  # MXNet 1.x has no 0-d arrays


# -- sg.nd op functions ------------------------------------------------------------------------

MAX_FAST = 20000  # FAST_CALLS entries (one per call site and attribute values, in practice)


def _fast_key(op: str, args: tuple, kwargs: dict) -> Optional[tuple]:
    """The :data:`FAST_CALLS` key of a call, or None when it cannot have one (an array among
    the keywords: arrays hash by identity and compare by value)."""
    for v in kwargs.values():
        if isinstance(v, (NDArray, np.ndarray, list)):
            return None
    return (op, tuple(map(type, args)), tuple(kwargs.items()))


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
            return _result(outs, out)
        if opdef.variadic:
            arrays = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) \
                else list(args)
            return call(opdef.name, arrays, kwargs, out, name)
        n = 0
        while n < len(args) and isinstance(args[n], NDArray):
            n += 1
        ctx = kwargs.pop("ctx") if isinstance(kwargs.get("ctx"), Context) else None
        inplace = bool(kwargs.pop("inplace", False)) and opdef.view
        named = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
        attrs = {k: (tuple(v.tolist()) if isinstance(v, np.ndarray) else v)
                 for k, v in kwargs.items() if not isinstance(v, NDArray)}
        if n < len(args) and isinstance(args[n], (np.ndarray, list)):
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
        info = _call_info(opdef, attrs, name)
        if key is not None and n == len(args) and not named and ctx is None and \
                "inplace" not in kwargs and len(FAST_CALLS) < MAX_FAST:
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
        return _result(outs, out)

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
        info = _Call(registry.get_op(node.op), node.attrs)
        return _result(record(info, inputs, name), out)

    op_function.__name__ = getattr(api, "__name__", "op")
    op_function.__doc__ = api.__doc__
    return op_function


def install(cls: type, namespace: dict) -> None:
    """Put the methods on NDArray and the op functions in ``sg.nd``'s namespace."""
    for name, ops_ in BINARY.items():
        setattr(cls, f"__{name}__", _binary(name, ops_, False))
        if name in REFLECTED:
            setattr(cls, f"__r{name}__", _binary(name, ops_, True))
        if name in IN_PLACE:
            setattr(cls, f"__i{name}__", _in_place(name))
    cls.__div__ = cls.__truediv__
    cls.__neg__ = _unary("negative")
    cls.__abs__ = _unary("abs")
    cls.T = property(lambda self: _transpose(self))
    for opname, opdef in registry.all_ops().items():
        api = opdef.extra.get("api")
        fn = (make_nd_from_symbol_api(api(S.apply_op, S.Symbol)) if api
              else make_nd_function(opdef))
        wrap = opdef.extra.get("nd_wrap")  # an op whose attrs come from input values
        namespace.setdefault(opname, wrap(fn) if wrap else fn)
    for alias_name, target in registry.all_aliases().items():
        namespace.setdefault(alias_name, namespace[target])
    # MXNet's `nd._internal`: every op function, private ones included, by its name
    namespace.setdefault("_internal", SimpleNamespace(**{
        n: namespace[n] for n in list(registry.all_ops()) + list(registry.all_aliases())}))
    for sub, prefix in (("contrib", "_contrib_"), ("linalg", "_linalg_")):
        namespace.setdefault(sub, sub_namespace(
            namespace, list(registry.all_ops()) + list(registry.all_aliases()), prefix))
    for meth, op in FLUENT.items():
        if not hasattr(cls, meth) and op in namespace:
            setattr(cls, meth, _fluent(namespace[op]))
    cls.transpose = _transpose
    namespace.setdefault("image", make_image_namespace(namespace))  # sg.nd.image
    cls.stype = property(lambda self: "default", doc="Storage type: always 'default' (dense).")
    cls.tostype = _tostype
    for name, ops_ in FUNCTIONS.items():
        namespace.setdefault(name, _function(name, ops_))
    cls.__getitem__ = getitem
    cls.backward = _backward
    namespace["random"] = random  # sg.nd.random is sg.random: one generator
    namespace.setdefault("random_uniform", random.uniform)  # MXNet's legacy names
    namespace.setdefault("normal", random.normal)  # MXNet 1.x: nd.normal is random_normal
    namespace.setdefault("random_normal", random.normal)
    namespace.setdefault("uniform", random.uniform)  # MXNet's sg.nd.uniform / sg.nd.normal
    namespace.setdefault("normal", random.normal)
    export(namespace, list(registry.all_ops()) + list(registry.all_aliases()) + list(FUNCTIONS)
           + ["random", "random_uniform", "random_normal", "uniform", "normal"])


def _backward(self: NDArray, out_grad: Optional[NDArray] = None, retain_graph: bool = False,
              train_mode: bool = True) -> None:
    """Gradients of this recorded array into the ``.grad`` of the variables it depends on."""
    autograd.backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)


ndarray.set_engine(ENGINE)
install(NDArray, vars(ndarray))
