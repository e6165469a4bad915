"""The per-parameter state holder of an optimizer (MXNet's ``Updater``/``get_updater``):
states made on first use, one step per call, and states saved as named arrays.

It sits in the runtime, below the optimizers that it drives through their public methods,
because the CUDA backend's fused updater (``cuda/optimizer.py``) extends it with device
states; ``sg.optimizer.Updater`` is this class."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.base import AttrError

__all__ = ["Updater", "get_updater"]


class Updater:
    """Holds per-parameter states; ``updater(index, grad, weight)`` applies one step."""

    def __init__(self, optimizer: Any) -> None:
        self.optimizer = optimizer
        self.states: dict[Any, tuple] = {}

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        if index not in self.states:
            self.states[index] = self.optimizer.create_state(index, weight)
        self.optimizer.update(index, weight, grad, self.states[index])

    def update_multi(self, indices: Sequence[Any], grads: Sequence[Any],
                     weights: Sequence[Any]) -> None:
        """One step for all of ``indices`` (states created on first use)."""
        for index, weight in zip(indices, weights):
            if index not in self.states:
                self.states[index] = self.optimizer.create_state(index, weight)
        self.optimizer.update_multi(indices, weights, grads, [self.states[i] for i in indices])

    def get_states(self) -> dict[str, np.ndarray]:
        """States and update counts as named arrays (for an ``.npz`` file; no pickle)."""
        out = {f"state:{i}:{k}": s for i, states in self.states.items()
               for k, s in enumerate(states)}
        out.update({f"count:{i}": np.array(c) for i, c in
                    self.optimizer._index_update_count.items()})
        return out

    def set_states(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore :meth:`get_states` output (parameter indices, or a kvstore's string keys)."""
        states: dict[Any, list] = {}
        counts = {}
        for key, value in arrays.items():
            kind, _, rest = key.partition(":")
            if kind == "state":
                index, _, k = rest.rpartition(":")
                states.setdefault(_index(index), []).append((int(k), np.array(value)))
            else:
                counts[_index(rest)] = int(value)
        want = {len(self.optimizer.rule.states)}
        if self.optimizer.multi_precision:  # narrow weights keep a master weight more
            want.add(len(self.optimizer.mp_rule.states))
        for i, items in states.items():
            if len(items) not in want:
                raise AttrError(f"optimizer states of parameter {i}: {len(items)} arrays, "
                                f"{type(self.optimizer).__name__} keeps "
                                f"{' or '.join(map(str, sorted(want)))}")
        self.states = {i: tuple(v for _, v in sorted(items)) for i, items in states.items()}
        self.optimizer._index_update_count = counts
        self.optimizer.num_update = max(counts.values(), default=self.optimizer.num_update)


def _index(text: str) -> Any:
    """A saved parameter index: an int as written, else the kvstore's string key."""
    return int(text) if text.lstrip("-").isdigit() else text


def get_updater(optimizer: Any) -> Callable[[Any, Any, Any], None]:
    """MXNet's ``get_updater``: a callable ``(index, grad, weight)`` with its own states."""
    return Updater(optimizer)
