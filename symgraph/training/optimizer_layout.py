"""MXNet's layout of multi-precision optimizer states, over symgraph's flat one.

symgraph keeps one flat tuple per parameter, ``(weight32, *states)`` under ``multi_precision``
(the layout the fused update reads). MXNet's ``create_state_multi_precision`` returns
``(weight32, state)`` (the base class) or ``(state, weight32)`` (SGD, NAG), where ``state`` is
what ``create_state`` gives: None, one array, or a tuple. These two functions convert between
them without copying, so an update through either layout writes the same arrays;
:class:`MultiPrecisionAPI` gives the optimizers MXNet's two methods over them.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..core.dtypes import is_narrow


def own_buffer(a: Any) -> Optional[np.ndarray]:
    """``a``'s own host buffer, which writes reach: a numpy array itself, a CPU NDArray's
    buffer; None for anything else (a device array)."""
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "asnumpy") and a.context.device_type == "cpu":
        return a._data
    return None


def host_values(a: Any) -> np.ndarray:
    """The values of ``a`` (an NDArray or array-like) as a numpy array the update rule reads:
    its own buffer where it has one (the rule makes new arrays, and the new weight is written
    back through ``weight[:]``; copies cost 4 ms of a language model's step), else a host
    copy."""
    own = own_buffer(a)
    if own is not None:
        return own
    return a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)


def to_mxnet(flat: Sequence[Any], master_last: bool) -> tuple:
    """``(weight32, *states)`` as MXNet's pair, e.g. ``(w32, m, v)`` -> ``(w32, (m, v))``."""
    master, rest = flat[0], tuple(flat[1:])
    state = None if not rest else rest[0] if len(rest) == 1 else rest
    return (state, master) if master_last else (master, state)


def to_flat(pair: Sequence[Any], master_last: bool) -> tuple:
    """The inverse of :func:`to_mxnet`: ``(w32, (m, v))`` -> ``(w32, m, v)``."""
    state, master = (pair[0], pair[1]) if master_last else (pair[1], pair[0])
    rest = () if state is None else tuple(state) if isinstance(state, (tuple, list)) \
        else (state,)
    return (master, *rest)


class MultiPrecisionAPI:
    """MXNet's multi-precision methods of ``sg.optimizer.Optimizer`` (its base class), over
    the optimizer's ``rule``, ``multi_precision``, ``MASTER_LAST``, ``create_state``,
    ``update`` and ``update_multi``."""

    rule: Any
    multi_precision: bool
    MASTER_LAST: bool

    def create_state_multi_precision(self, index: Any, weight: Any) -> Any:
        """MXNet's name: :meth:`create_state` already keeps a float32 master weight first
        when ``multi_precision`` is on and ``weight`` is float16/bfloat16. A subclass without
        a rule gets MXNet's ``(float32 master, create_state(index, master))``."""
        if self._master(weight):
            if self.rule is not None:
                return to_mxnet(self.create_state(index, weight), self.MASTER_LAST)
            master = weight.astype(np.float32)
            return (master, self.create_state(index, master))
        return self.create_state(index, weight)

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """MXNet's name: :meth:`update` already steps through the master weight of states
        made by :meth:`create_state_multi_precision`; lists of indices, weights, gradients
        and states step together (:meth:`update_multi`). A subclass without a rule: its
        ``update`` runs on the float32 master, which is then cast into ``weight``."""
        if isinstance(index, (list, tuple)):
            self.update_multi(index, weight, grad, [
                to_flat(st, self.MASTER_LAST) if self.rule is not None and self._master(w)
                else st for w, st in zip(weight, state)])
        elif self.rule is None and self._master(weight):
            self.update(index, state[0], grad.astype(np.float32), state[1])
            weight[:] = state[0].astype(weight.dtype)
        elif self._master(weight):
            self.update(index, weight, grad, to_flat(state, self.MASTER_LAST))
        else:
            self.update(index, weight, grad, state)

    def _master(self, weight: Any) -> bool:
        """True when ``weight`` is updated through a float32 master copy."""
        return self.multi_precision and is_narrow(weight.dtype)
