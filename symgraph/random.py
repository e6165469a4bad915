"""``sg.random.seed``: one generator drives dropout masks and initialisers, reproducibly."""
from __future__ import annotations

import numpy as np

_state = {"rng": np.random.default_rng(0)}


def seed(value: int) -> None:
    """Reseed symgraph's random generator (and nothing else)."""
    _state["rng"] = np.random.default_rng(value)


def generator() -> np.random.Generator:
    return _state["rng"]
