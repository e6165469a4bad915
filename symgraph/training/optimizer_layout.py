"""MXNet's layout of multi-precision optimizer states, over symgraph's flat one.

symgraph keeps one flat tuple per parameter, ``(weight32, *states)`` under ``multi_precision``
(the layout the fused update reads). MXNet's ``create_state_multi_precision`` returns
``(weight32, state)`` (the base class) or ``(state, weight32)`` (SGD, NAG), where ``state`` is
what ``create_state`` gives: None, one array, or a tuple. These two functions convert between
them without copying, so an update through either layout writes the same arrays.
"""
from __future__ import annotations

from typing import Any, Sequence


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
