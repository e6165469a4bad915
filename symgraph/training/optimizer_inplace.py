"""One compiled call updating every parameter of an optimizer step in place, where the
parameters allow it (``Optimizer.update_multi``'s fast path on the compiled CPU backend).

Requires: an optimizer whose step is its rule's formulas alone (the base ``_step``), and for
each parameter a host weight, gradient and states of one float32/float64 dtype and shape,
C-contiguous and writeable, with no float32 master copy. Anything else returns False before
anything is written, and the caller updates parameter by parameter as before.
Guarantees: the values the per-parameter path stores (the same formulas, printed the same way,
each parameter's scalars rounded to its dtype as there), written over the weights and states;
pending imperative work reading a weight is computed first, as ``weight[:] = new`` does.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..runtime.compile import formula_updater
from ..runtime.nd_operators import engine
from .optimizer_layout import own_buffer

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _group(w: Any, g: Any, state: Sequence[Any]) -> Optional[list[np.ndarray]]:
    """``[weight, grad, *states]`` as host arrays the kernel can write, or None."""
    arrays = [own_buffer(w), own_buffer(g), *(own_buffer(s) for s in state)]
    first = arrays[0]
    if first is None or first.dtype not in FLOATS:
        return None
    for a in arrays:
        if a is None or a.dtype != first.dtype or a.shape != first.shape \
                or not a.flags.c_contiguous or not a.flags.writeable:
            return None
    return arrays


def update_in_place(opt: Any, rows: Sequence[tuple], weights: Sequence[Any],
                    grads: Sequence[Any], states: Sequence[Sequence[Any]]) -> bool:
    """Apply ``opt.rule`` with scalar ``rows`` (``opt.step_rows``) to every parameter in
    place and return True; False, having written nothing, where the module docstring's
    requirements do not hold."""
    run = formula_updater()
    if run is None or not weights:
        return False
    rule, groups = opt.rule, []
    for w, g, st in zip(weights, grads, states):
        group = None if opt._master(w) or st is None or len(st) != len(rule.states) \
            else _group(w, g, st)
        if group is None or (groups and group[0].dtype != groups[0][0].dtype):
            return False
        groups.append(group)
    eng = engine()
    if eng is not None:
        for w in weights:
            if not isinstance(w, np.ndarray):
                eng.before_write(w)
    table = np.array(rows, groups[0][0].dtype).reshape(len(rows), len(rule.scalars))
    run(rule.formulas, groups, table)
    return True
