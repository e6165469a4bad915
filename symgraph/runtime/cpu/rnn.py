"""MXNet's fused ``RNN`` op on the compiled CPU backend: each direction of each layer runs its
time loop as one BLAS GEMM per step for the recurrent side and one generated gate kernel per
step, which prints the cell's formulas (``ops/rnn_cells.CELLS``) as the CUDA gate kernels do.
The numpy reference (``rnn_cells.run``) evaluates the same formulas op by op: about 25 numpy
calls per step, 85 of the 180 microseconds of an LSTM step at batch 20 and 200 units, where
the kernel takes 10.

The layers, directions, dropout and tape keeping are the reference's (``ops/rnn.computes``
with this module); :func:`run` and :func:`run_back` differ. Their tape per direction is
``(zx, gates, hs, cs, reverse)``:

* ``zx`` (T, N, G*H): the input side's products ``x W^T`` of every step (one GEMM), which
  the backward kernel overwrites with the gates' gradients, ready for the weight GEMMs;
* ``gates`` (T, N, 4*H): the gate values the forward kernel keeps (LSTM's i, f, g, o; GRU's
  r, z, n and ``U_n h + c_n``; none for the vanilla cells);
* ``hs``, ``cs`` (T+1, N, H): the states, the initial one first (last for the reversed
  direction), so the layer's output is a view of ``hs``.

The biases ``b`` and ``c`` are added in the kernel, as ``(zx + b) + (zh + c)`` like the CUDA
kernel and the reference. Loops index with unsigned integers: numba then checks no negative
index and the loop over the units vectorises (signed offsets made it 10 times slower).

Example::

    >>> import numpy as np
    >>> from symgraph.compiler.ops import rnn_cells
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    >>> w = (rng.standard_normal((8, 3)).astype(np.float32),
    ...      rng.standard_normal((8, 2)).astype(np.float32),
    ...      np.zeros(8, np.float32), np.zeros(8, np.float32))
    >>> h0 = np.zeros((2, 2), np.float32)
    >>> out, h, c, _ = run("lstm", x, h0, h0, w, False)
    >>> ref = rnn_cells.run("lstm", x, h0, h0, w, False)[0]
    >>> bool(np.allclose(out, ref, atol=1e-6))
    True
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Optional

import numpy as np

from ...compiler.ops.rnn_cells import CELLS, GATES
from ...core.expr import Expr, inp, topo
from .kernels import load
from .render import expr_to_py, kernel_module

_ROWS = {  # per kernel and cell family: the rows of the step it reads or writes, by name
    "forward": {"lstm": "z = zx[t, r]; q = zh[r]; g = gates[t, r]; cp = cs[sp, r]; "
                        "cn = cs[sn, r]; hn = hs[sn, r]",
                "gru": "z = zx[t, r]; q = zh[r]; g = gates[t, r]; hp = hs[sp, r]; "
                       "hn = hs[sn, r]",
                "rnn": "z = zx[t, r]; q = zh[r]; hn = hs[sn, r]"},
    "backward": {"lstm": "g = gates[t, r]; z = dz[t, r]; d = dh[r]; y = dy[t, r]; e = dc[r]; "
                         "cp = cs[sp, r]; cn = cs[sn, r]",
                 "gru": "g = gates[t, r]; z = dz[t, r]; q = dzh[t, r]; d = dh[r]; y = dy[t, r]; "
                        "hp = hs[sp, r]",
                 "rnn": "z = dz[t, r]; d = dh[r]; y = dy[t, r]; hn = hs[sn, r]"}}
_PARAMS = {"forward": {"lstm": "t, sp, sn, zx, zh, bias, gates, hs, cs",
                       "gru": "t, sp, sn, zx, zh, bias, gates, hs",
                       "rnn": "t, sp, sn, zx, zh, bias, hs"},
           "backward": {"lstm": "t, sp, sn, gates, dz, dh, dy, dc, hs, cs",
                        "gru": "t, sp, sn, gates, dz, dzh, dh, dy, hs",
                        "rnn": "t, sp, sn, dz, dh, dy, hs"}}


def _at(offset: int) -> str:
    """The index of unit ``j`` past ``offset`` in a row (unsigned: see the module
    docstring)."""
    return f"j + np.uint64({offset})" if offset else "j"


def _io(kind: str, mode: str, h: int) -> tuple[list[str], list[tuple[str, ...]]]:
    """(the value of each formula input, the places each formula output is stored), in the
    order of ``CELLS[mode]``'s ``forward_in``/``forward_out`` (``backward_*``). ``z``/``q``:
    the step's row of a GEMM's result or gradient, ``g``: of the gate values the forward
    keeps (GRU's fourth is ``U_n h + c_n``)."""
    gh = h * GATES[mode]

    def row(name: str, k: int) -> str:
        return f"{name}[{_at(k * h)}]"

    def x(k: int) -> str:  # input side plus b
        return f"({row('z', k)} + bias[{_at(k * h)}])"

    def r(k: int) -> str:  # recurrent side plus c
        return f"({row('q', k)} + bias[{_at(gh + k * h)}])"

    if kind == "forward":
        return {"lstm": ([f"({x(k)} + {r(k)})" for k in range(4)] + ["cp[j]"],
                         [(row("g", k),) for k in range(4)] + [("cn[j]",), ("hn[j]",)]),
                "gru": ([f"({x(0)} + {r(0)})", f"({x(1)} + {r(1)})", x(2), r(2), "hp[j]"],
                        [(row("g", k),) for k in range(4)] + [("hn[j]",)]),
                "rnn": ([f"({x(0)} + {r(0)})"], [("hn[j]",)])}[_family(mode)]
    dh = "(d[j] + y[j])"
    return {"lstm": ([dh, "e[j]", "cp[j]"] + [row("g", k) for k in range(4)] + ["cn[j]"],
                     [(row("z", k),) for k in range(4)] + [("e[j]",)]),
            "gru": ([dh, "hp[j]"] + [row("g", k) for k in range(4)],
                    [(row("z", 0), row("q", 0)), (row("z", 1), row("q", 1)), (row("z", 2),),
                     (row("q", 2),), ("d[j]",)]),
            "rnn": ([dh, "hn[j]"], [(row("z", 0),)])}[_family(mode)]


def _family(mode: str) -> str:
    return mode if mode in ("lstm", "gru") else "rnn"


STATES = ("cn", "hn", "e", "d")
"""The rows a kernel writes that are states (the next step reads them), not gate rows."""


def _reading(e: Expr, known: dict) -> Expr:
    """``e`` with each subformula in ``known`` replaced by the input it maps to."""
    memo: dict = {}

    def go(x: Expr) -> Expr:
        if x not in memo:
            memo[x] = known[x] if x in known else (
                Expr(x.op, tuple(go(a) for a in x.args), x.value) if x.args else x)
        return memo[x]
    return go(e)


def render_gates(kind: str, mode: str, h: int, dtype: str) -> Any:
    """The ``kind`` ("forward" or "backward") gate kernel of cell ``mode`` with ``h`` units,
    computing in ``dtype``; its parameters are ``_PARAMS[kind][mode's family]``.

    Each row is two loops over the units: the first stores the gate rows, the second the
    states, reading what the first stored where its formulas contain it (the forward's
    ``c = f * c_prev + i * g`` reads ``i``, ``f``, ``g``). One loop storing both did not
    vectorise: LLVM gives up proving that many stores apart from the reads."""
    cell = CELLS[mode]
    formulas = cell.forward if kind == "forward" else cell.backward
    reads, stores = _io(kind, mode, h)
    if len(stores) != len(formulas):  # the tables above follow CELLS' order
        raise ValueError(f"rnn {kind} {mode}: {len(stores)} stores for {len(formulas)} formulas")
    gates = [k for k, dst in enumerate(stores) if dst[0].split("[")[0] not in STATES]
    states = [k for k in range(len(formulas)) if k not in gates]
    known = {formulas[k]: inp(len(reads) + i) for i, k in enumerate(gates)}
    reads = reads + [stores[k][0] for k in gates]
    body = ["    for r in range(hs.shape[1]):", f"        {_ROWS[kind][_family(mode)]}"]
    every = []
    for part in (gates, states):
        if not part:
            continue
        roots = [_reading(formulas[k], known) if part is states else formulas[k] for k in part]
        lines, results = expr_to_py(roots, [f"v{i}" for i in range(len(reads))])
        used = {int(e.value) for e in topo(roots) if e.op == "input"}
        body += [f"        for j in range(np.uint64({h})):"]
        body += [f"            v{i} = {c}" for i, c in enumerate(reads) if i in used]
        body += ["            " + ln for ln in lines]
        body += [f"            {dst} = {val}"
                 for val, k in zip(results, part) for dst in stores[k]]
        every += lines
    return kernel_module(f"rnn_{kind}_{mode}{h}", formulas,
                         _PARAMS[kind][_family(mode)].split(", "), "\n".join(body), every,
                         dtype)


@lru_cache(maxsize=None)
def _kernels(mode: str, h: int, dtype: str) -> tuple[Callable, Callable]:
    return (load(render_gates("forward", mode, h, dtype)),
            load(render_gates("backward", mode, h, dtype)))


def _flat(v: np.ndarray) -> np.ndarray:
    return v.reshape(-1, v.shape[-1])


def _steps(n: int, reverse: bool) -> list[tuple[int, int, int]]:
    """(time, state read, state written) of each step in the order it runs."""
    return [(t, t + 1, t) for t in range(n - 1, -1, -1)] if reverse else \
        [(t, t, t + 1) for t in range(n)]


def run(mode: str, xs: np.ndarray, h: np.ndarray, c: Optional[np.ndarray], w: tuple,
        reverse: bool) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray], tuple]:
    """``rnn_cells.run``'s contract: outputs (T, N, H), last h, last c, the tape."""
    n_t, n, units = xs.shape[0], xs.shape[1], h.shape[1]
    dt = np.result_type(xs, w[0])
    zx = (_flat(xs) @ w[0].T).astype(dt, copy=False).reshape(n_t, n, -1)
    zh = np.empty(zx.shape[1:], dt)
    kept = {"lstm": 4, "gru": 4}.get(mode, 0) * units
    gates = np.empty((n_t, n, kept), dt)
    bias = np.concatenate([w[2], w[3]]).astype(dt, copy=False)
    first, last = (n_t, 0) if reverse else (0, n_t)
    hs = np.empty((n_t + 1, n, units), dt)
    hs[first] = h
    cs = None
    if mode == "lstm":
        cs = np.empty_like(hs)
        cs[first] = c
    # U^T contiguous: OpenBLAS multiplies the step's few rows by it in 75 us, by the
    # transposed view of U in 137 (batch 20, 200 units, LSTM)
    forward, ut = _kernels(mode, units, dt.name)[0], np.ascontiguousarray(w[1].T, dt)
    arrays = (zx, zh, bias) + ((gates,) if kept else ()) + (hs,) + ((cs,) if cs is not None else ())
    for t, sp, sn in _steps(n_t, reverse):
        np.matmul(hs[sp], ut, out=zh)
        forward(t, sp, sn, *arrays)
    out = hs[:-1] if reverse else hs[1:]
    return out, hs[last], None if cs is None else cs[last], (zx, gates, hs, cs, reverse)


def run_back(mode: str, dout: np.ndarray, dh: np.ndarray, dc: Optional[np.ndarray],
             tape: tuple, w: tuple, gw: list, xs: np.ndarray, dxs: np.ndarray
             ) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """``rnn_cells.run_back``'s contract over :func:`run`'s tape (whose input-side products
    it overwrites with their gradients: a tape serves one backward)."""
    dz, gates, hs, cs, reverse = tape
    dt = dz.dtype
    dy = np.ascontiguousarray(dout, dtype=dt)
    d = np.array(dh, dtype=dt, order="C")
    e = None if dc is None else np.array(dc, dtype=dt, order="C")
    backward, u = _kernels(mode, hs.shape[2], dt.name)[1], w[1]
    dzh, part = (np.empty_like(dz), np.empty_like(d)) if mode == "gru" else (dz, None)
    arrays = {"lstm": (gates, dz, d, dy, e, hs, cs), "gru": (gates, dz, dzh, d, dy, hs)}.get(
        mode, (dz, d, dy, hs))
    for t, sp, sn in reversed(_steps(dz.shape[0], reverse)):
        backward(t, sp, sn, *arrays)
        if part is None:
            np.matmul(dz[t], u, out=d)
        else:  # GRU: the cell's own share of dh_prev, which the kernel left in d
            d += np.matmul(dzh[t], u, out=part)
    gw[0] += _flat(dz).T @ _flat(xs)
    gw[1] += _flat(dzh).T @ _flat(hs[1:] if reverse else hs[:-1])
    gw[2] += _flat(dz).sum(axis=0)
    gw[3] += _flat(dzh).sum(axis=0)
    dxs += (_flat(dz) @ w[0]).reshape(dxs.shape)
    return d, e

