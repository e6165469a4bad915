"""``sg.random`` (also ``sg.nd.random``): one generator drives dropout masks, initialisers and
the sampler ops (``_random_*``, ``_sample_*``, ``_shuffle``...), so ``sg.random.seed`` makes all
of them reproducible.

The functions take MXNet's arguments (``low``, ``high``, ``shape``, ``dtype``, ``ctx``,
``out``; see ``random_api``) and record the sampler ops like any ``sg.nd`` call. Parameters
given as NDArrays draw one sample set per element, the output shape being
``param.shape + shape``, as in MXNet.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..core import rng
from ..core.base import AttrError
from .random_api import namespace as _namespace


def seed(seed_state: int, ctx: Any = "all") -> None:
    """Reseed symgraph's random generator.

    symgraph has one generator for every device, so a seed given for one context (``ctx``)
    reseeds it too: draws on any device then repeat, as MXNet's per-device generators seeded
    alike do. Negative seeds are taken modulo 2**64.

    Draws recorded before the call and not yet run are made first, from the generator as it
    was: MXNet's engine runs a seed after the operations pushed before it.

    Examples
    --------
    >>> sg.random.seed(42)
    >>> a = sg.nd.random.uniform(shape=3)
    >>> sg.random.seed(42)  # the same seed repeats the same draws
    >>> bool((sg.nd.random.uniform(shape=3) == a).asnumpy().all())
    True
    """
    from .ndarray import before_run
    if isinstance(seed_state, bool) or not isinstance(seed_state, numbers.Integral):
        raise AttrError(f"random.seed: seed_state must be an integer, got {seed_state!r}")
    before_run()
    rng.reseed(int(seed_state))


def generator() -> np.random.Generator:
    """The generator every sampler draws from.

    Examples
    --------
    >>> isinstance(sg.nd.random.generator(), np.random.Generator)
    True
    """
    return rng.generator()


def _call(op: str, inputs: list, attrs: dict, out: Any, ctx: Any) -> Any:
    """Record ``op`` through the imperative engine; ``out`` also gives the shape and dtype
    when they are not given (MXNet infers them from it)."""
    from ..core.context import Context
    from .ndarray import NDArray, engine
    if out is not None:
        if not isinstance(out, NDArray):
            raise AttrError(f"random ({op}): out must be an NDArray, got {type(out).__name__}")
        if not inputs and attrs.get("shape") is None:
            attrs["shape"] = out.shape
        if "dtype" not in attrs and op != "_shuffle" and not op.endswith("_like"):
            attrs["dtype"] = np.dtype(out.dtype).name
    for x in inputs:
        if not isinstance(x, NDArray):
            raise AttrError(f"random ({op}): inputs must be NDArrays, got {type(x).__name__}")
    if not inputs and attrs.get("shape") is None:
        attrs["shape"] = (1,)  # MXNet's default: nothing decides it later in sg.nd
    if ctx is not None and not isinstance(ctx, Context):
        raise AttrError(f"random ({op}): ctx must be a Context, got {ctx!r}")
    return engine().call(op, inputs, attrs, out, None, ctx)


def _is_array(v: Any) -> bool:
    from .ndarray import NDArray
    return isinstance(v, NDArray)


_FUNCTIONS = _namespace(_call, _is_array)
uniform = _FUNCTIONS["uniform"]
normal = _FUNCTIONS["normal"]
randn = _FUNCTIONS["randn"]
gamma = _FUNCTIONS["gamma"]
exponential = _FUNCTIONS["exponential"]
poisson = _FUNCTIONS["poisson"]
negative_binomial = _FUNCTIONS["negative_binomial"]
generalized_negative_binomial = _FUNCTIONS["generalized_negative_binomial"]
multinomial = _FUNCTIONS["multinomial"]
shuffle = _FUNCTIONS["shuffle"]
randint = _FUNCTIONS["randint"]
uniform_like = _FUNCTIONS["uniform_like"]
normal_like = _FUNCTIONS["normal_like"]
gamma_like = _FUNCTIONS["gamma_like"]
exponential_like = _FUNCTIONS["exponential_like"]
poisson_like = _FUNCTIONS["poisson_like"]
negative_binomial_like = _FUNCTIONS["negative_binomial_like"]
generalized_negative_binomial_like = _FUNCTIONS["generalized_negative_binomial_like"]

__all__ = ["seed", "generator"] + list(_FUNCTIONS)
