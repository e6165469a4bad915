"""One test case per op for the generic registry tests (tests/ops/test_registry.py).

Each ``cases_*.py`` module in this folder defines ``CASES: list[Case]``. A case builds a small
symbol around one op, gives input arrays, and an independent float64 numpy reference of the
outputs. The registry test checks (1) every registered op is covered by some case, (2) forward
equals the reference, (3) ``check_numeric_gradient`` passes (unless ``grad`` is False, allowed
only for ops registered NOT_DIFFERENTIABLE or whose gradient ignores head gradients, which need
``loss`` instead), (4) a JSON round trip gives identical outputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np


@dataclass
class Case:
    op: str                      # registered op name this case covers
    build: Callable[[], Any]     # () -> Symbol
    inputs: dict[str, Callable[[np.random.Generator], np.ndarray]]  # arg name -> generator
    ref: Optional[Callable[..., Any]] = None  # (**float64 inputs) -> output or list of outputs
    grad: bool = True            # run check_numeric_gradient
    grad_nodes: Optional[list[str]] = None  # arguments to differentiate (default: all inputs)
    loss: Optional[Callable[..., float]] = None  # for loss ops: scalar loss(**inputs) whose
    #                              numeric gradient must equal the op's symbolic gradient
    aux: dict[str, Callable[[np.random.Generator], np.ndarray]] = field(default_factory=dict)
    rtol: float = 1e-4
    atol: float = 1e-6
    grad_rtol: float = 1e-3
    is_train: bool = False       # forward mode compared with ``ref``
    also_covers: tuple[str, ...] = ()  # other ops (backward helpers) this case exercises
    id: str = ""

    def name(self) -> str:
        return self.id or self.op


def normal(*shape: int, scale: float = 1.0) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.normal(size=shape) * scale


def uniform(*shape: int, low: float = -1.0, high: float = 1.0):
    return lambda rng: rng.uniform(low, high, size=shape)


def away_from(points: tuple, *shape: int, low: float = -2.0, high: float = 2.0, gap: float = 0.05):
    """Uniform values at least ``gap`` away from each of ``points`` (kinks of relu, abs...)."""
    def gen(rng: np.random.Generator) -> np.ndarray:
        x = rng.uniform(low, high, size=shape)
        for p in points:
            close = np.abs(x - p) < gap
            x[close] = p + np.sign(x[close] - p + 1e-12) * gap * 2
        return x
    return gen


def integers(low: int, high: int, *shape: int):
    return lambda rng: rng.integers(low, high, size=shape).astype(np.float64)
