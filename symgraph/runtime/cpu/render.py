"""Python (numba) source for the compiled CPU backend's elementwise kernels, printed from the
scalar expression DAG (``core/expr.py``) as ``cuda/codegen.py`` prints C.

Each primitive's text is its ``Prim.py`` template in ``PRIMS``: the same table that gives the
numpy reference and the C, so the CPU kernels, the GPU kernels and the numpy reference of a
fused group are printed from one formula and cannot drift apart. A primitive with no template
(``erfinv``, ``digamma``) makes the group fall back to the numpy reference
(:func:`missing_prims`).

A kernel is one loop nest over a *collapsed* output shape (``group.py`` merges adjacent axes
that every operand reads the same way: a contiguous group is one flat loop). Its parameters
start with ``lo, hi``, the range of the outermost axis (or of the rows) this call computes: the
backend's threads each take a slice (:func:`render_kernel` says the rest). Every value is of
the compute type ``F`` (``np.float32`` or ``np.float64``): each statement is cast back to it,
so a float64 literal or a 0/1 predicate never widens a float32 kernel.

Example::

    >>> from symgraph.core import expr as E
    >>> k = render_kernel("relu", [E.call("max", E.inp(0), 0.0)], [(True,)], 1, "float32")
    >>> k.name.startswith("sg_relu_f32_")
    True
    >>> "for j in range(hi - lo):" in k.source
    True
    >>> k2 = render_kernel("add", [E.inp(0) + E.inp(1)], [(True, True), (False, True)], 2,
    ...                    "float64")
    >>> "v1 = r1[j]" in k2.source and "b1 += c * strides[1, d]" in k2.source
    True
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ...core.expr import PRIMS, Expr, print_formulas, topo

FLOAT_TYPES = {"float32": ("np.float32", "f32"), "float64": ("np.float64", "f64")}
"""Compute dtypes a kernel is printed for: numpy name -> (the ``F`` of its source, name tag)."""


def why_not_dtype(dtype: Any) -> Optional[str]:
    """Why values of ``dtype`` take no kernel computing in their own dtype, or None."""
    name = np.dtype(dtype).name
    return None if name in FLOAT_TYPES else f"dtype {name} (compiled: float32, float64)"

HELPERS = {
    # numpy's mod (the divisor's sign, 0 for a zero divisor: core/expr.py's _np_mod and _C_MOD)
    "sg_mod": '''
@numba.njit(nogil=True, cache=True, error_model="numpy")
def sg_mod(a, b):
    if b == 0:
        return F(0.0)
    r = np.fmod(a, b)
    if r == 0:
        return F(math.copysign(0.0, b))
    if (r < 0) != (b < 0):
        return F(r + b)
    return F(r)
''',
    # tanh as a rational function of x^2 (numba has no vector transcendentals without Intel's
    # SVML, so math.tanh is a scalar call per element: 14 ns, 40 times numpy's SIMD tanh).
    # Only multiplies, adds and one division: loops calling it vectorise. Fitted here against
    # float64's tanh on [0, 9] (relative error 7e-9; beyond 9 float32's tanh is 1); evaluated
    # in float32 it is within 7 ulp of the exact value (every float32 in [0.25, 9.5] checked;
    # numpy's float32 tanh: 1.4 ulp). float64 kernels keep math.tanh (EXACT).
    "sg_tanh": '''
@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def sg_tanh(v):
    x = min(max(v, F(-9.0)), F(9.0))
    u = (x * F(1.0 / 9.0)) * (x * F(1.0 / 9.0))
    p = ((((((F(-0.02397417649626732) * u + F(0.18402822315692902)) * u
             + F(-0.8706221580505371)) * u + F(5.927829265594482)) * u
           + F(20.365020751953125)) * u + F(10.598044395446777)) * u + F(1.0))
    q = ((F(135.31219482421875) * u + F(160.7127227783203)) * u
         + F(37.59803771972656)) * u + F(1.0)
    return min(max(F(x * p / q), F(-1.0)), F(1.0))  # (it overshoots 1 by an ulp near 9)
'''}
"""Helper functions a template may call, printed into the modules that use them."""

EXACT = {"sg_tanh": '''
@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def sg_tanh(v):
    return math.tanh(v)
'''}
"""The float64 kernels' form of the helpers that approximate for float32."""


def helper_source(name: str, dtype: str) -> str:
    """The text of helper ``name`` in kernels computing in ``dtype``."""
    return EXACT[name] if dtype == "float64" and name in EXACT else HELPERS[name]


@dataclass(frozen=True)
class Kernel:
    """A kernel's module source and the name of its function (also the module's name)."""

    name: str
    source: str


# repr of the floats Python cannot write as a literal -> their spelling in a kernel
_SPECIAL = {"nan": "F(math.nan)", "inf": "F(math.inf)", "-inf": "F(-math.inf)"}


def py_float(v: float) -> str:
    """A literal of the compute type that reads back exactly."""
    text = repr(float(v))
    return _SPECIAL.get(text, f"F({text})")


def missing_prims(roots: Sequence[Expr]) -> list[str]:
    """The primitives of ``roots`` that have no Python template (the group cannot compile)."""
    return sorted({e.op for e in topo(roots)
                   if e.op not in ("input", "const") and not PRIMS[e.op].py})


def expr_to_py(roots: Sequence[Expr], arg: Sequence[str]) -> tuple[list[str], list[str]]:
    """Statements computing ``roots`` from the Python names ``arg[i]`` of input ``i``; returns
    (statements, name or literal of each root). Shared subexpressions are computed once."""
    return print_formulas(roots, arg, lambda p: p.py, py_float, "{0} = F({1})")


def render_kernel(stem: str, exprs: Sequence[Expr], full: Sequence[Optional[Sequence[bool]]],
                  rank: int, dtype: str) -> Kernel:
    """The module of one kernel computing ``exprs`` (one output each, all of one shape of
    ``rank`` collapsed axes) in ``dtype``; ``full[i]``: per axis, whether input ``i`` varies
    along it (False: broadcast). Inputs the formulas do not read are no parameters.

    Rank 1 (same-size operands, scalars): ``(lo, hi, y..., x...)``, one flat loop. Higher
    ranks: ``(lo, hi, dims, strides, y..., x...)`` over *rows* (all axes but the last):
    ``dims`` is the collapsed shape, ``strides[k, d]`` the element stride of the k-th input
    read along axis d (0: broadcast), every array flat. Only the last axis's pattern is in the
    source (its loop is the one the compiler vectorises), so one kernel serves every rank and
    broadcast pattern of a formula, where a source per pattern made a compilation each."""
    used = sorted({int(e.value) for e in topo(exprs) if e.op == "input"})
    lines, results = expr_to_py(exprs, [f"v{i}" for i in range(max(used, default=-1) + 1)])
    ys = [f"y{k}" for k in range(len(exprs))]
    if rank == 1:
        # Slices indexed from 0, as the rows below: an index from ``range(lo, hi)`` might be
        # negative, and numba's wraparound check then turns the loop into gathers/scatters
        # (three times slower than numpy's own pass).
        head = [f"    r{i} = x{i}[lo:hi]" for i in used if full[i][0]]
        head += [f"    v{i} = x{i}[0]" for i in used if not full[i][0]]
        head += [f"    z{k} = y{k}[lo:hi]" for k in range(len(exprs))]
        head += ["    for j in range(hi - lo):"]
        loads = [f"v{i} = r{i}[j]" for i in used if full[i][0]]
        stores = [f"z{k}[j] = {r}" for k, r in enumerate(results)]
        params, pad = ["lo", "hi"] + ys, " " * 8
    else:
        # Rank 2 (rows of one axis: channels-last data against per-channel vectors) skips
        # the division per axis: its rows may be as short as the channels (64), where the
        # divisions cost as much as the row.
        head = ["    r = dims.shape[0]", "    n = dims[r - 1]", "    for o in range(lo, hi):",
                "        if r == 2:"] + [
                f"            b{i} = o * strides[{k}, 0]" for k, i in enumerate(used)] + [
                "        else:", "            rest = o"] + [
                f"            b{i} = 0" for i in used] + [
                "            for d in range(r - 2, -1, -1):",
                "                c = rest % dims[d]", "                rest //= dims[d]"] + [
                f"                b{i} += c * strides[{k}, d]" for k, i in enumerate(used)]
        # Row slices indexed by the loop variable (never negative: no wraparound check,
        # so the loop vectorises); a value broadcast along the row is read once per row.
        head += [f"        r{i} = x{i}[b{i}:b{i} + n]" for i in used if full[i][-1]]
        head += [f"        v{i} = x{i}[b{i}]" for i in used if not full[i][-1]]
        head += [f"        z{k} = y{k}[o * n:o * n + n]" for k in range(len(exprs))]
        head += ["        for j in range(n):"]
        loads = [f"v{i} = r{i}[j]" for i in used if full[i][-1]]
        stores = [f"z{k}[j] = {r}" for k, r in enumerate(results)]
        params, pad = ["lo", "hi", "dims", "strides"] + ys, " " * 12
    text = "\n".join(head + [pad + ln for ln in loads + lines + stores])
    return kernel_module(stem, exprs, params + [f"x{i}" for i in used], text, lines, dtype)


def kernel_module(stem: str, exprs: Sequence[Expr], params: list[str], text: str,
                  lines: list[str], dtype: str) -> Kernel:
    """The kernel module around function body ``text`` (whose formula statements are
    ``lines``, printing ``exprs``), named by a hash of everything in it."""
    ftype, tag = FLOAT_TYPES[dtype]
    helpers = "".join(helper_source(h, dtype) for h in HELPERS
                      if any(h + "(" in ln for ln in lines))
    digest = hashlib.sha1(f"{ftype}|{params}|{helpers}|{text}".encode()).hexdigest()[:10]
    clean = "".join(ch if ch.isalnum() else "_" for ch in stem)[:40]
    name = f"sg_{clean}_{tag}_{digest}"
    formulas = "; ".join(f"y{k} = {e!r}" for k, e in enumerate(exprs))
    source = (f'"""symgraph generated CPU kernel: {formulas[:2000]}"""\n'
              "import math\n\nimport numba\nimport numpy as np\n\n"
              f"F = {ftype}\n" + helpers + "\n\n"
              '@numba.njit(nogil=True, cache=True, error_model="numpy")\n'
              f"def {name}({', '.join(params)}):\n{text}\n\n\nKERNEL = {name}\n")
    return Kernel(name, source)
