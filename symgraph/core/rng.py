"""The process's one random generator, below every layer that draws from it.

Dropout masks, the sampler ops' numpy references, initialisers and data shuffling all draw
from :func:`generator`, so ``sg.random.seed`` (``runtime/random.py``, which also runs the draws
already recorded before it reseeds) makes all of them repeat. It lives in the core so that the
ops' references can reach it without importing the runtime above them.

Example::

    >>> from symgraph.core import rng
    >>> rng.reseed(7)
    >>> a = rng.generator().random(2)
    >>> rng.reseed(7)
    >>> bool((rng.generator().random(2) == a).all())
    True
"""
from __future__ import annotations

import numpy as np

_state = {"rng": np.random.default_rng(0)}


def generator() -> np.random.Generator:
    """The generator every sampler draws from when a run gives none of its own."""
    return _state["rng"]


def reseed(seed: int) -> None:
    """A fresh generator from ``seed`` (taken modulo 2**64, so negative seeds work)."""
    _state["rng"] = np.random.default_rng(int(seed) % (1 << 64))
