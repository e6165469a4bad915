"""An optimizer's step over many parameters in one compiled call, written in place.

The optimizers' update rules (``compiler/ops/update_rules.py``) are per-element formulas of
``weight, grad, *states, *scalars``. Through :func:`~symgraph.runtime.cpu.backend.evaluate`
each parameter costs a Python round of about 0.1 ms (scalar arrays, a kernel lookup, fresh
outputs, then ``weight[:] = new``): 1.05 ms of the seed CNN's 21 ms step for its 8 parameters.
Here the same formulas, printed by the same printer, run over :data:`CHUNK` parameters per call
(shorter chunks padded with empty arrays, so one compilation serves every model), each
parameter's scalars a row of a table, and the results stored over the weight and the states:
every input of an element is loaded before any output of it is stored, so nothing is read
after it is overwritten.

Example::

    >>> import numpy as np
    >>> from symgraph.core.expr import inp
    >>> w, g = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
    >>> update_in_place((inp(0) - inp(2) * inp(1),), [[w, g]], np.array([[0.5]], np.float32))
    >>> w.tolist()
    [0.0, 0.0, 0.0]
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from ...core.expr import Expr, topo
from .kernels import load
from .render import Kernel, expr_to_py, kernel_module

CHUNK = 8
"""Parameters per call: the kernel takes a tuple of this many arrays per role."""


def _roles(formulas: Sequence[Expr], n_arrays: int) -> tuple[list[int], list[int], list[int]]:
    """(inputs read, the input each output is stored over, the inputs passed as arrays)."""
    used = sorted({int(e.value) for e in topo(formulas) if e.op == "input"})
    targets = [0] + [k + 1 for k in range(1, len(formulas))]
    return used, targets, sorted(set(targets) | {i for i in used if i < n_arrays})


def render_update(formulas: Sequence[Expr], n_arrays: int, dtype: str) -> Kernel:
    """The kernel ``(a<i>..., scalars)``: ``a<i>`` a tuple of :data:`CHUNK` flat arrays (input
    ``i`` of each parameter: 0 the weight, 1 the grad, then the states), ``scalars[p, k]``
    input ``n_arrays + k`` of parameter ``p``. Output 0 is stored over the weight, output
    ``k`` over input ``k + 1`` (state ``k - 1``)."""
    used, targets, arrays = _roles(formulas, n_arrays)
    lines, results = expr_to_py(formulas, [f"v{i}" for i in range(max(used, default=0) + 1)])
    head = [f"    for p in range(len(a{arrays[0]})):"]
    head += [f"        r{i} = a{i}[p]" for i in arrays]
    head += [f"        v{i} = scalars[p, {i - n_arrays}]" for i in used if i >= n_arrays]
    head += [f"        for j in range(r{arrays[0]}.shape[0]):"]
    loads = [f"v{i} = r{i}[j]" for i in used if i < n_arrays]
    stores = [f"r{t}[j] = {r}" for t, r in zip(targets, results)]
    text = "\n".join(head + ["            " + ln for ln in loads + lines + stores])
    return kernel_module("update", formulas, [f"a{i}" for i in arrays] + ["scalars"], text,
                         lines, dtype)


@lru_cache(maxsize=64)
def _kernel(formulas: tuple, n_arrays: int, dtype: str) -> tuple[Callable, list[int]]:
    """The loaded kernel and the inputs it takes arrays of."""
    return load(render_update(formulas, n_arrays, dtype)), _roles(formulas, n_arrays)[2]


def update_in_place(formulas: Sequence[Expr], groups: Sequence[Sequence[np.ndarray]],
                    scalars: np.ndarray) -> None:
    """Apply ``formulas`` to each parameter ``groups[p] = [weight, grad, *states]`` (C-contiguous
    arrays of one float dtype and one shape per parameter), storing the new weight and states
    over the old; ``scalars[p]``: parameter p's scalar inputs, in that dtype."""
    if not groups:
        return
    n_arrays = len(groups[0])
    dt = groups[0][0].dtype
    run, taken = _kernel(tuple(formulas), n_arrays, dt.name)
    empty = np.empty(0, dt)
    for lo in range(0, len(groups), CHUNK):
        part = groups[lo:lo + CHUNK]
        pad = CHUNK - len(part)
        args: list[Any] = [tuple([g[i].reshape(-1) for g in part] + [empty] * pad)
                           for i in taken]
        table = np.zeros((CHUNK, scalars.shape[1]), dt)
        table[:len(part)] = scalars[lo:lo + CHUNK]
        run(*args, table)
