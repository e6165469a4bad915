"""``sg.nd.contrib.foreach``, ``while_loop`` and ``cond``: MXNet 1.9.1's imperative versions,
which run the Python body once per step (under ``autograd.record`` every step is recorded,
so gradients flow as through any imperative code). Importing this module also installs the
symbolic versions (``control_flow.py``) into ``sg.sym.contrib``.

Example::

    >>> import symgraph as sg
    >>> outs, st = sg.nd.contrib.foreach(lambda x, s: (x + s[0], [s[0] + 1]),
    ...                                  sg.nd.array([[1.0], [2.0]]), [sg.nd.zeros((1,))])
    >>> outs.asnumpy().ravel().tolist(), st[0].asnumpy().tolist()
    ([1.0, 3.0], [2.0])
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..runtime import ndarray as nd
from . import symbol as sym
from ..core.base import GraphError
from . import control_flow, control_flow_branch
from .control_flow import flatten, regroup
from ..runtime.ndarray import NDArray


def _flatten(args: Any, what: str) -> tuple[list, Any]:
    return flatten(args, what, NDArray)


def _stack(items: list) -> NDArray:
    return nd.concat(*[x.expand_dims(axis=0) for x in items], dim=0)


def foreach(body: Callable, data: Any, init_states: Any) -> tuple:
    """Run ``body(data[i], states) -> (outputs, states)`` for each i of axis 0 of ``data``;
    the outputs of every step stacked on axis 0, and the last states.

    Example::

        >>> import symgraph as sg
        >>> outs, _ = sg.nd.contrib.foreach(lambda x, s: (x * 2, s), sg.nd.ones((3, 2)), [])
        >>> outs.shape
        (3, 2)
    """
    flat, fmt = _flatten(data, "foreach data")
    _flatten(init_states, "foreach init_states")
    states, steps, out_fmt = init_states, flat[0].shape[0], None
    outputs = []
    for i in range(steps):
        eles, _ = regroup([d[i] for d in flat], fmt)
        outs, states = body(eles, states)
        outs, out_fmt = _flatten(outs, "foreach output")
        outputs.append(outs)
    stacked = [_stack(list(col)) for col in zip(*outputs)]
    return (regroup(stacked, out_fmt)[0] if out_fmt is not None and stacked else []), states


def _scalar(value: Any, what: str) -> bool:
    host = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
    if host.size != 1:
        raise GraphError(f"{what} must be a single value, got shape {host.shape}")
    return bool(host.reshape(()))


def while_loop(cond: Callable, func: Callable, loop_vars: Any,
               max_iterations: Any = None) -> tuple:
    """Run ``func(*loop_vars) -> (step_outputs, new_loop_vars)`` while ``cond(*loop_vars)``
    holds, at most ``max_iterations`` times; step outputs stacked on axis 0 and padded with
    zeros to ``max_iterations`` rows (MXNet leaves the padding undefined).

    Example::

        >>> import symgraph as sg
        >>> outs, (i,) = sg.nd.contrib.while_loop(lambda i: i < 3, lambda i: (i, [i + 1]),
        ...                                        [sg.nd.zeros((1,))], max_iterations=5)
        >>> outs.asnumpy().ravel().tolist(), i.asnumpy().tolist()
        ([0.0, 1.0, 2.0, 0.0, 0.0], [3.0])
    """
    if max_iterations is None:
        raise GraphError("while_loop: max_iterations must be given")
    max_iterations = int(max_iterations.asscalar() if isinstance(max_iterations, NDArray)
                         else max_iterations)
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    if not loop_vars:
        raise GraphError("while_loop: loop_vars must hold at least one array")
    outputs, out_fmt, steps = [], None, 0
    while steps < max_iterations and _scalar(cond(*loop_vars), "while_loop: cond's result"):
        step_out, new_vars = func(*loop_vars)
        step_out = list(step_out) if isinstance(step_out, tuple) else \
            ([] if step_out is None else step_out)
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars or [])
        if len(new_vars) != len(loop_vars):
            raise GraphError(f"while_loop: func returns {len(new_vars)} loop variables for "
                             f"{len(loop_vars)}")
        flat, out_fmt = _flatten(step_out, "while_loop output")
        outputs.append(flat)
        loop_vars, steps = new_vars, steps + 1
    stacked = []
    for col in zip(*outputs):
        rows = list(col)
        if steps < max_iterations:
            rows.append(nd.zeros((max_iterations - steps,) + tuple(rows[0].shape),
                                 ctx=rows[0].context, dtype=rows[0].dtype))
            rows = [r.expand_dims(axis=0) for r in rows[:-1]] + [rows[-1]]
            stacked.append(nd.concat(*rows, dim=0))
        else:
            stacked.append(_stack(rows))
    out = regroup(stacked, out_fmt)[0] if out_fmt is not None and stacked else []
    return out, (loop_vars[0] if single else loop_vars)


def cond(pred: Any, then_func: Callable, else_func: Callable) -> Any:
    """``then_func()`` if the one-element ``pred`` is non-zero, else ``else_func()``.

    Example::

        >>> import symgraph as sg
        >>> sg.nd.contrib.cond(sg.nd.array([0]), lambda: sg.nd.ones((1,)),
        ...                    lambda: sg.nd.zeros((1,))).asnumpy().tolist()
        [0.0]
    """
    return then_func() if _scalar(pred, "cond: pred") else else_func()


for _fn in (control_flow.foreach, control_flow_branch.while_loop, control_flow_branch.cond):
    setattr(sym.contrib, _fn.__name__, _fn)
for _fn in (foreach, while_loop, cond):
    setattr(nd.contrib, _fn.__name__, _fn)
