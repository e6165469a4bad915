"""``sg.random`` (also ``sg.nd.random``): one generator drives dropout masks, initialisers and
the samplers here, so ``sg.random.seed`` makes all of them reproducible.

The samplers take MXNet's arguments (``low``, ``high``, ``shape``, ``dtype``, ``ctx``, ``out``)
and return materialised NDArrays. Parameters given as NDArrays draw one sample set per element,
the output shape being ``param.shape + shape``, as in MXNet.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from .base import AttrError

__all__ = ["seed", "uniform", "normal", "randn", "poisson", "randint", "shuffle", "random_uniform",
           "random_normal"]

_state = {"rng": np.random.default_rng(0)}


def seed(seed_state: int, ctx: Any = "all") -> None:
    """Reseed symgraph's random generator (and nothing else)."""
    _state["rng"] = np.random.default_rng(int(seed_state))


def generator() -> np.random.Generator:
    return _state["rng"]


Shape = Union[None, int, Sequence[int]]


def _host(value: Any) -> Any:
    from .ndarray import NDArray
    return value.asnumpy().astype(np.float64) if isinstance(value, NDArray) else value


def _draw(name: str, fn: Callable, params: tuple, shape: Shape, dtype: Any, ctx: Any,
          out: Any, default_dtype: str) -> Any:
    from .context import current_context
    from .ndarray import NDArray, array
    if out is not None and not isinstance(out, NDArray):
        raise AttrError(f"random.{name}: out must be an NDArray, got {type(out).__name__}")
    if shape is None or shape == ():
        shape = out.shape if out is not None else ()
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    host = [_host(p) for p in params]
    lead = np.broadcast(*host).shape if any(isinstance(p, np.ndarray) for p in host) else ()
    full = tuple(lead) + shape
    if not full:
        full = (1,)  # MXNet's default shape
    if lead:
        host = [np.reshape(p, np.shape(p) + (1,) * len(shape)) for p in host]
    values = fn(generator(), *host, full)
    if out is not None:
        if out.shape != full:
            raise AttrError(f"random.{name}: out has shape {out.shape}, the sample {full}")
        out[:] = values
        return out
    dtype = np.dtype(dtype or default_dtype)
    return array(values, ctx or current_context(), dtype)


def uniform(low: Any = 0.0, high: Any = 1.0, shape: Shape = None, dtype: Any = None,
            ctx: Any = None, out: Any = None, **kwargs: Any) -> Any:
    """Samples from U[low, high)."""
    return _draw("uniform", lambda g, lo, hi, s: g.uniform(lo, hi, s), (low, high), shape,
                 dtype, ctx, out, "float32")


def normal(loc: Any = 0.0, scale: Any = 1.0, shape: Shape = None, dtype: Any = None,
           ctx: Any = None, out: Any = None, **kwargs: Any) -> Any:
    """Samples from N(loc, scale**2)."""
    return _draw("normal", lambda g, m, s_, s: g.normal(m, s_, s), (loc, scale), shape, dtype,
                 ctx, out, "float32")


def randn(*shape: int, loc: Any = 0.0, scale: Any = 1.0, dtype: Any = None, ctx: Any = None,
          out: Any = None) -> Any:
    """Samples from N(loc, scale**2), the shape given as positional sizes.

    Example: ``sg.nd.random.randn(2, 3)`` is a (2, 3) float32 array."""
    return normal(loc, scale, shape, dtype, ctx, out)


def poisson(lam: Any = 1.0, shape: Shape = None, dtype: Any = None, ctx: Any = None,
            out: Any = None) -> Any:
    """Samples from Poisson(lam), float32 by default (MXNet's default dtype for it)."""
    if np.any(np.asarray(_host(lam)) < 0):
        raise AttrError(f"random.poisson: lam must be >= 0, got {lam}")
    return _draw("poisson", lambda g, lm, s: g.poisson(lm, s), (lam,), shape, dtype, ctx, out,
                 "float32")


def randint(low: int, high: int, shape: Shape = None, dtype: Any = None, ctx: Any = None,
            out: Any = None, **kwargs: Any) -> Any:
    """Integers uniform in [low, high); int32 by default, as MXNet."""
    if high <= low:
        raise AttrError(f"random.randint: high ({high}) must be greater than low ({low})")
    return _draw("randint", lambda g, lo, hi, s: g.integers(lo, hi, s), (low, high), shape,
                 dtype, ctx, out, "int32")


def shuffle(data: Any, **kwargs: Any) -> Any:
    """A copy of ``data`` with its first axis randomly permuted."""
    from .ndarray import NDArray, array
    if not isinstance(data, NDArray):
        raise AttrError(f"random.shuffle: data must be an NDArray, got {type(data).__name__}")
    host = data.asnumpy()
    return array(host[generator().permutation(host.shape[0])], data.context, data.dtype)


random_uniform = uniform  # MXNet's legacy sg.nd.random_uniform / random_normal names
random_normal = normal
