"""MXNet's fluent Symbol methods (``x.reshape(...)``, ``x.sum(axis=1)``) and the Python-level
``sg.sym`` functions that choose an op from their operands' kinds (``maximum``, ``pow``...).

A fluent method is the ``sg.sym`` function of the same name with ``self`` as its first input:
:class:`Fluent` holds one method per name of :data:`FLUENT`, each calling the front end's
``_fluent_function(name)`` (the class that mixes it in says where its functions are). The
dispatching functions take the front end's ``apply_op`` and array class, so this module
imports no front end.

Example::

    >>> import symgraph as sg
    >>> x = sg.sym.var("x")
    >>> x.sum(axis=1).name.startswith("sum")
    True
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .base import GraphError
from .dtypes import as_dtype

# MXNet 1.9.1's fluent methods: method name -> sg.sym function (the same name unless given).
FLUENT: dict[str, str] = {name: name for name in (
    "reshape reshape_like zeros_like ones_like broadcast_axes repeat pad swapaxes split slice "
    "slice_axis slice_like take one_hot pick sort topk argsort argmax argmax_channel argmin "
    "clip abs sign flatten shape_array size_array expand_dims broadcast_to broadcast_like tile "
    "transpose flip depth_to_space space_to_depth diag sum nansum prod nanprod mean max min "
    "norm round rint fix floor ceil trunc sin cos tan arcsin arccos arctan degrees radians "
    "sinh cosh tanh arcsinh arccosh arctanh exp expm1 log log10 log2 log1p sqrt rsqrt cbrt "
    "rcbrt square reciprocal relu sigmoid softmax log_softmax softmin squeeze split_v2").split()}
FLUENT["astype"] = "Cast"


def _method(method_name: str, fn_name: str) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._fluent_function(fn_name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = method_name
    method.__doc__ = f"Fluent form of ``{fn_name}(self, ...)``."
    return method


class Fluent:
    """MXNet's fluent methods, for a front end's array class to mix in; the class defines
    ``_fluent_function(name)``: its front end's function of that name."""

    __slots__ = ()

    def _fluent_function(self, name: str) -> Callable:
        raise NotImplementedError

    for _method_name, _fn_name in FLUENT.items():
        vars()[_method_name] = _method(_method_name, _fn_name)
    del _method_name, _fn_name


# -- functions that pick an op from their operands ---------------------------------------------

Operand = Union[Any, int, float]


def is_number(x: Any) -> bool:
    """A plain number operand (a bool is not one, as in MXNet's operator dispatch)."""
    return isinstance(x, (int, float, np.number)) and not isinstance(x, bool)


def dispatch(name: str, array_op: str, scalar_op: str, rscalar_op: Optional[str],
             number_fn: Callable[[Any, Any], Any], apply_op: Callable, cls: type) -> Callable:
    """A function ``f(lhs, rhs)`` as MXNet's ``sym.maximum``: two ``cls`` -> ``array_op``,
    one and a number -> ``scalar_op``, number and one -> ``rscalar_op`` (or ``scalar_op``
    with the operands swapped when None: the op is symmetric), two numbers -> ``number_fn``."""

    def fn(lhs: Operand, rhs: Operand) -> Any:
        lsym, rsym = isinstance(lhs, cls), isinstance(rhs, cls)
        if lsym and rsym:
            return apply_op(array_op, [lhs, rhs], {})
        if lsym and is_number(rhs):
            return apply_op(scalar_op, [lhs], {"scalar": float(rhs)})
        if rsym and is_number(lhs):
            return apply_op(rscalar_op or scalar_op, [rhs], {"scalar": float(lhs)})
        if is_number(lhs) and is_number(rhs):
            return number_fn(lhs, rhs)
        raise GraphError(f"{name}: operands must be Symbols or numbers, got "
                         f"{type(lhs).__name__} and {type(rhs).__name__}")
    fn.__name__ = name
    fn.__doc__ = (f"MXNet's ``sym.{name}``: ``{array_op}`` of two symbols, ``{scalar_op}`` "
                  f"with a number.")
    return fn


def make_functions(apply_op: Callable, cls: type) -> dict[str, Callable]:
    """The operand-dispatching functions of ``sg.sym`` (``apply_op`` making ``cls``) and its
    creation functions ``zeros``, ``ones``, ``full``."""
    pow_ = dispatch("pow", "_power", "_power_scalar", "_rpower_scalar", lambda a, b: a ** b,
                    apply_op, cls)
    return {
        "pow": pow_, "power": pow_,
        "maximum": dispatch("maximum", "_maximum", "_maximum_scalar", None, max, apply_op, cls),
        "minimum": dispatch("minimum", "_minimum", "_minimum_scalar", None, min, apply_op, cls),
        "hypot": dispatch("hypot", "_hypot", "_hypot_scalar", None, math.hypot, apply_op, cls),
        "zeros": creation("_zeros", 0.0, apply_op), "ones": creation("_ones", 1.0, apply_op),
        "full": creation("_full", None, apply_op),
    }


def creation(op: str, fill: Optional[float], apply_op: Callable) -> Callable:
    """``sg.sym.zeros(shape, dtype)`` / ``ones`` / ``full(shape, val, dtype)``: a node with no
    inputs holding a constant array."""

    def make(shape: Union[int, Sequence[int]], *args: Any, dtype: Any = None,
             name: Optional[str] = None, **kwargs: Any) -> Any:
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        attrs: dict = {"shape": shape, "dtype": as_dtype(dtype or np.float32).name}  # MXNet
        if fill is None:  # full(shape, val, dtype=None)
            value = args[0] if args else kwargs.pop("val")
            attrs["value"] = float(value)
        elif args:
            attrs["dtype"] = as_dtype(args[0]).name
        if kwargs:
            raise GraphError(f"{op}: unknown arguments {sorted(kwargs)}")
        return apply_op(op, [], attrs, name)
    make.__name__ = {"_zeros": "zeros", "_ones": "ones", "_full": "full"}[op]
    make.__doc__ = f"A constant array made by ``{op}`` (MXNet's ``sym.{make.__name__}``)."
    return make
