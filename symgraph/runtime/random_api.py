"""MXNet's ``random`` front (``sg.nd.random.*`` and ``sg.sym.random.*``), written once over a
``call(op, inputs, attrs, out, ctx)`` that each front end supplies.

A sampler called with scalar parameters is the ``_random_<law>`` op (parameters and ``shape``
as attributes); called with arrays (NDArrays or Symbols) it is ``_sample_<law>``, drawing
``shape`` samples per element of the parameter arrays (output shape ``param.shape + shape``).
Mixing scalars and arrays is an error, as in MXNet.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..core.base import AttrError
from ..compiler.ops.examples.random import FUNCTIONS as EXAMPLES

Call = Callable[[str, list, dict, Any, Any], Any]

# law: parameter names of the Python functions (MXNet's), with their defaults
LAWS: dict[str, tuple[tuple[str, Any], ...]] = {
    "uniform": (("low", 0.0), ("high", 1.0)),
    "normal": (("loc", 0.0), ("scale", 1.0)),
    "gamma": (("alpha", 1.0), ("beta", 1.0)),
    "exponential": (("scale", 1.0),),
    "poisson": (("lam", 1.0),),
    "negative_binomial": (("k", 1), ("p", 1.0)),
    "generalized_negative_binomial": (("mu", 1.0), ("alpha", 1.0)),
}
# the ops' attribute names where they differ from the Python function's
OP_PARAMS: dict[str, tuple[str, ...]] = {
    "uniform": ("low", "high"), "normal": ("loc", "scale"), "gamma": ("alpha", "beta"),
    "exponential": ("lam",), "poisson": ("lam",), "negative_binomial": ("k", "p"),
    "generalized_negative_binomial": ("mu", "alpha")}


def _shape(shape: Any) -> Optional[tuple]:
    if shape is None:
        return None
    return (int(shape),) if isinstance(shape, int) else tuple(shape)


def _exponential_scale(law: str, values: list, is_array: Any) -> list:
    """MXNet's Python ``exponential`` takes a scale; its ops take the rate ``lam = 1/scale``."""
    if law != "exponential":
        return values
    return [1.0 / v if not is_array(v) else v.__rtruediv__(1.0) for v in values]


def sampler(call: Call, is_array: Callable[[Any], bool], law: str) -> Callable:
    """``uniform(low, high, shape, dtype, ctx, out)`` and its kind for one law."""
    names = [n for n, _ in LAWS[law]]

    order = names + ["shape", "dtype", "ctx", "out"]  # MXNet's positional order

    def draw(*args: Any, **kwargs: Any) -> Any:
        if len(args) > len(order):
            raise AttrError(f"random.{law}: {len(args)} positional arguments, at most "
                            f"{len(order)} ({', '.join(order)})")
        given = dict(zip(order, args))
        twice = sorted(set(given) & set(kwargs))
        if twice:
            raise AttrError(f"random.{law}: {twice} given twice")
        given.update(kwargs)
        values = [given.pop(n, d) for n, d in LAWS[law]]
        shape, dtype, ctx, out = (given.pop(k, None) for k in order[len(names):])
        given.pop("name", None)
        if given:
            raise AttrError(f"random.{law}: unknown argument(s) {sorted(given)}")
        arrays = [is_array(v) for v in values]
        if any(arrays) and not all(arrays):
            raise AttrError(f"random.{law}: parameters must all be arrays or all be numbers, "
                            f"got {[type(v).__name__ for v in values]}")
        values = _exponential_scale(law, values, is_array)
        attrs: dict = {} if dtype is None else {"dtype": np.dtype(dtype).name}
        if all(arrays):
            attrs["shape"] = _shape(shape) or ()
            return call(f"_sample_{law}", values, attrs, out, None)
        attrs.update(zip(OP_PARAMS[law], values))
        if _shape(shape) is not None:
            attrs["shape"] = _shape(shape)
        return call(f"_random_{law}", [], attrs, out, ctx)

    draw.__name__ = law
    draw.__doc__ = (f"Samples of the {law} law ({', '.join(names)}: numbers, or arrays for "
                    f"one sample set per element).")
    return draw


def like(call: Call, law: str) -> Callable:
    """``uniform_like(data, low, high, out)``: samples of data's shape and dtype. MXNet
    generates these from the ops, so they take the ops' parameters (``exponential_like``: the
    rate ``lam``, not a scale)."""
    # (every law's defaults read the same as the op's: exponential's scale 1 is rate 1)
    params = list(zip(OP_PARAMS[law], (d for _, d in LAWS[law])))

    def draw(data: Any = None, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        values = list(args) + [kwargs.pop(n, d) for n, d in params[len(args):]]
        kwargs.pop("name", None)
        if kwargs:
            raise AttrError(f"random.{law}_like: unknown argument(s) {sorted(kwargs)}")
        return call(f"_random_{law}_like", [data], dict(zip(OP_PARAMS[law], values)), out, None)
    draw.__name__ = f"{law}_like"
    draw.__doc__ = f"Samples of the {law} law of data's shape and dtype."
    return draw


def namespace(call: Call, is_array: Callable[[Any], bool]) -> dict[str, Callable]:
    """Every function of MXNet's ``random`` module over ``call``."""
    out: dict[str, Callable] = {}
    for law in LAWS:
        out[law] = sampler(call, is_array, law)
        out[f"{law}_like"] = like(call, law)
    normal = out["normal"]

    def randn(*shape: int, loc: Any = 0.0, scale: Any = 1.0, dtype: Any = None,
              ctx: Any = None, out: Any = None, **kwargs: Any) -> Any:
        """Normal samples of shape ``shape`` (given positionally): ``randn(2, 3)``."""
        return normal(loc, scale, shape=shape or None, dtype=dtype, ctx=ctx, out=out)

    def randint(low: int, high: int, shape: Any = None, dtype: Any = None, ctx: Any = None,
                out: Any = None, **kwargs: Any) -> Any:
        """Integers uniform in [low, high); int32 unless ``dtype`` says int64."""
        attrs = {"low": low, "high": high,
                 **({} if dtype is None else {"dtype": np.dtype(dtype).name})}
        if _shape(shape) is not None:
            attrs["shape"] = _shape(shape)
        return call("_random_randint", [], attrs, out, ctx)

    def multinomial(data: Any, shape: Any = None, get_prob: bool = False, out: Any = None,
                    dtype: Any = "int32", **kwargs: Any) -> Any:
        """Category indices drawn from the rows of probabilities ``data``."""
        attrs = {"shape": _shape(shape) or (), "get_prob": bool(get_prob),
                 "dtype": np.dtype(dtype).name}
        return call("_sample_multinomial", [data], attrs, out, None)

    def shuffle(data: Any, out: Any = None, **kwargs: Any) -> Any:
        """``data`` with its first axis randomly permuted."""
        return call("_shuffle", [data], {}, out, None)

    out.update(randn=randn, randint=randint, multinomial=multinomial, shuffle=shuffle)
    for name, fn in out.items():
        fn.__doc__ = f"{fn.__doc__.rstrip()}\n\n    Examples\n    --------\n" + "".join(
            f"    {line}\n" for line in EXAMPLES[name].splitlines())
    return out


def symbol_namespace(apply_op: Callable, symbol_cls: type) -> SimpleNamespace:
    """``sg.sym.random``: the functions above building graph nodes."""
    def call(op: str, inputs: Sequence[Any], attrs: dict, out: Any, ctx: Any) -> Any:
        if out is not None:
            raise AttrError(f"sym.random ({op}): out= is for NDArrays, not Symbols")
        return apply_op(op, list(inputs), attrs)
    return SimpleNamespace(**namespace(call, lambda v: isinstance(v, symbol_cls)))
