"""NDArray's operators and fluent methods, and the ``sg.nd.<op>`` functions, all as tables
over registered ops (so every one of them records a node; nothing here computes)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

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
FLUENT: dict[str, str] = {
    n: n for n in (
        "sum", "mean", "max", "min", "prod", "norm", "argmax", "argmin", "exp", "expm1", "log",
        "log1p", "sqrt", "rsqrt", "square", "abs", "sign", "relu", "sigmoid", "tanh",
        "softmax", "log_softmax", "clip", "expand_dims", "squeeze", "tile", "repeat",
        "broadcast_to", "broadcast_like", "one_hot", "take", "slice", "slice_axis", "flip",
        "reverse", "reshape_like", "zeros_like", "ones_like", "pad", "split", "reciprocal",
        "softrelu")}
FLUENT.update({"flatten": "Flatten", "cast": "Cast"})


def _number(x: Any) -> bool:
    return isinstance(x, (int, float, np.number)) and not isinstance(x, bool)


def _binary(name: str, ops: tuple[str, str, str], reflected: bool) -> Callable:
    from .imperative import call
    array_op, scalar_op, rscalar_op = ops

    def method(self: Any, other: Any) -> Any:
        from .ndarray import NDArray
        if isinstance(other, NDArray):
            a, b = (other, self) if reflected else (self, other)
            return call(array_op, [a, b], {})
        if _number(other):
            return call(rscalar_op if reflected else scalar_op, [self], {"scalar": float(other)})
        if isinstance(other, np.ndarray):
            from .ndarray import array
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
            from .imperative import PENDING
            import weakref
            PENDING[result._entry.node] = [weakref.ref(self)]
            return self
        self[:] = result
        return self
    method.__name__ = f"__i{name}__"
    return method


def _fluent(fn: Callable) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    return method


def _unary(op: str) -> Callable:
    from .imperative import call
    return lambda self: call(op, [self], {})


def _transpose(self: Any, *axes: Any, **kwargs: Any) -> Any:
    from .imperative import call
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return call("transpose", [self], {"axes": tuple(axes or kwargs.get("axes", ()))})


def install(cls: type, namespace: dict) -> None:
    """Put the methods on NDArray and the op functions in ``sg.nd``'s namespace."""
    from . import ops  # noqa: F401  (registers the built-in ops)
    from . import registry
    from .imperative import make_nd_from_symbol_api, make_nd_function
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
        namespace.setdefault(opname, make_nd_from_symbol_api(api) if api else
                             make_nd_function(opdef))
    for alias_name, target in registry.all_aliases().items():
        namespace.setdefault(alias_name, namespace[target])
    for meth, op in FLUENT.items():
        if not hasattr(cls, meth):
            setattr(cls, meth, _fluent(namespace[op]))
    cls.transpose = _transpose
