"""Scalar expression IR: the formulas of elementwise ops and the bodies of fused kernels.

An elementwise op states its forward as a small DAG of :class:`Expr` over its inputs. The numpy
backend evaluates that DAG on whole arrays (numpy broadcasting does the rest); the CUDA backend
prints it as C; the fusion pass splices member formulas into one DAG. One table, ``PRIMS``, says
what each primitive means in numpy and in C, so fused and unfused code cannot drift apart.

This IR is deliberately separate from the graph IR: it has no shapes, names or gradients.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence, Union

import numpy as np


@dataclass(frozen=True)
class Prim:
    """One scalar primitive: arity, numpy function, C template (``{0}``, ``{1}``...), and the
    template of the compiled CPU backend's Python (numba) source, ``""`` where it has none
    (``runtime/cpu/render.py``: ``F`` is the compute float type, ``sg_*`` its helpers)."""

    arity: int
    numpy: Callable
    c: str
    boolean: bool = False  # result is a 0/1 predicate
    py: str = ""


def _np_sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x)


_ERF = np.frompyfunc(__import__("math").erf, 1, 1)


def _np_erf(x: np.ndarray) -> np.ndarray:
    # numpy has no erf; math.erf per element (references and small CPU runs only)
    x = np.asarray(x)
    return _ERF(x).astype(x.dtype if x.dtype.kind == "f" else np.float64)


def _np_erfinv(x: np.ndarray) -> np.ndarray:
    """Inverse of erf: a closed-form first guess (Winitzki's) refined by Newton steps on
    ``_np_erf``, in float64; +-inf at +-1 and NaN outside [-1, 1] (CUDA's erfinvf)."""
    x = np.asarray(x)
    v = np.asarray(x, np.float64)
    inside = np.abs(v) < 1
    t = np.where(inside, v, 0.0)
    k = 0.147
    ln = np.log1p(-t * t)
    first = 2 / (np.pi * k) + ln / 2
    y = np.sign(t) * np.sqrt(np.sqrt(first * first - ln / k) - first)
    for _ in range(3):  # Newton: quadratic convergence from ~2e-3
        y = y - (_np_erf(y).astype(np.float64) - t) * (np.sqrt(np.pi) / 2) * np.exp(y * y)
    with np.errstate(invalid="ignore"):
        edge = np.where(np.abs(v) == 1, np.sign(v) * np.inf, np.nan)
    y = np.where(t == 0, t, y)  # erfinv is odd: -0 stays -0 (as CUDA's erfinvf)
    return np.where(inside, y, edge).astype(x.dtype if x.dtype.kind == "f" else np.float64)


def _per_element(fn: Callable[[float], float]) -> Callable:
    """A math-module function on arrays (numpy has no gamma; references and small CPU runs)."""
    def run(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
        with np.errstate(all="ignore"):
            return np.vectorize(lambda v: fn(float(v)), otypes=[dtype])(x)
    return run


# C's tgamma and lgamma (the CUDA formulas, and MXNet) where Python's math raises: gamma(+-0)
# is +-inf, gamma at a negative integer or -inf NaN, overflow inf; lgamma at a pole inf.
def _c_gamma(v: float) -> float:
    if v == 0:
        return math.copysign(math.inf, v)
    try:
        return math.gamma(v)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan


def _c_lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):
        return math.inf


def _np_digamma(x: np.ndarray) -> np.ndarray:
    """The digamma function as sg_digamma computes it (cuda/compiler.py's prelude)."""
    x = np.array(x, dtype=np.float64 if np.asarray(x).dtype.kind != "f" else None, copy=True)
    acc = np.zeros_like(x)
    low = x < 0.5
    with np.errstate(all="ignore"):
        acc[low] = -np.pi / np.tan(np.pi * x[low])
        x[low] = 1.0 - x[low]
        for _ in range(6):
            small = x < 6.0
            acc[small] -= 1.0 / x[small]
            x[small] += 1.0
        r = 1.0 / (x * x)
        return acc + np.log(x) - 0.5 / x - r * (1 / 12 - r * (1 / 120 - r * (
            1 / 252 - r * (1 / 240 - r / 132))))


def _np_round(x: np.ndarray) -> np.ndarray:
    # C's roundf (MXNet's round): halves away from zero; numpy's round goes to even.
    return np.copysign(np.floor(np.abs(x) + 0.5), x)  # round(-0.2) is -0., as roundf


def _np_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # MXNet's mod: Python's sign convention (the divisor's), and 0 where the divisor is 0.
    r = np.mod(a, np.where(b == 0, 1, b))
    return np.where(b == 0, 0, r)


# Remainder with the divisor's sign, 0 for a zero divisor (as _np_mod), in C; a zero
# remainder takes the divisor's sign too, as numpy's.
_C_MOD = ("(({1}) == 0.f ? 0.f : (fmodf({0}, {1}) == 0.f ? copysignf(0.f, {1}) : "
          "(((fmodf({0}, {1}) < 0.f) != (({1}) < 0.f)) ? fmodf({0}, {1}) + ({1}) : "
          "fmodf({0}, {1}))))")


# numpy's NaN rule in C: maximum/minimum give a NaN operand (fmaxf/fminf would drop it) and,
# for equal operands, the second (so maximum(-0., 0.) is 0. as in numpy); sign(NaN) is NaN.
# Reductions and pooling combine with the same text.
C_MAX = "((({0}) > ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))"
C_MIN = "((({0}) < ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))"
_C_SIGN = "(({0}) != ({0}) ? ({0}) : (float)((({0}) > 0.f) - (({0}) < 0.f)))"
# The same rules in the compiled CPU backend's Python (operands are names or literals).
PY_MAX = "({0} if ({0} > {1} or {0} != {0}) else {1})"
PY_MIN = "({0} if ({0} < {1} or {0} != {0}) else {1})"
PY_SIGN = "({0} if {0} != {0} else F({0} > 0) - F({0} < 0))"


PRIMS: dict[str, Prim] = {
    "add": Prim(2, np.add, "({0} + {1})", py="({0} + {1})"),
    "sub": Prim(2, np.subtract, "({0} - {1})", py="({0} - {1})"),
    "mul": Prim(2, np.multiply, "({0} * {1})", py="({0} * {1})"),
    "div": Prim(2, np.divide, "({0} / {1})", py="({0} / {1})"),
    "pow": Prim(2, np.power, "powf({0}, {1})", py="({0} ** {1})"),
    "max": Prim(2, np.maximum, C_MAX, py=PY_MAX),
    "min": Prim(2, np.minimum, C_MIN, py=PY_MIN),
    "neg": Prim(1, np.negative, "(-{0})", py="(-{0})"),
    "exp": Prim(1, np.exp, "expf({0})", py="math.exp({0})"),
    "log": Prim(1, np.log, "logf({0})", py="math.log({0})"),
    "log1p": Prim(1, np.log1p, "log1pf({0})", py="math.log1p({0})"),
    "sqrt": Prim(1, np.sqrt, "sqrtf({0})", py="math.sqrt({0})"),
    "tanh": Prim(1, np.tanh, "tanhf({0})", py="sg_tanh({0})"),
    "abs": Prim(1, np.abs, "fabsf({0})", py="abs({0})"),
    "sign": Prim(1, _np_sign, _C_SIGN, py=PY_SIGN),
    "sin": Prim(1, np.sin, "sinf({0})", py="math.sin({0})"),
    "cos": Prim(1, np.cos, "cosf({0})", py="math.cos({0})"),
    "tan": Prim(1, np.tan, "tanf({0})", py="math.tan({0})"),
    "asin": Prim(1, np.arcsin, "asinf({0})", py="math.asin({0})"),
    "acos": Prim(1, np.arccos, "acosf({0})", py="math.acos({0})"),
    "atan": Prim(1, np.arctan, "atanf({0})", py="math.atan({0})"),
    "sinh": Prim(1, np.sinh, "sinhf({0})", py="math.sinh({0})"),
    "cosh": Prim(1, np.cosh, "coshf({0})", py="math.cosh({0})"),
    "asinh": Prim(1, np.arcsinh, "asinhf({0})", py="math.asinh({0})"),
    "acosh": Prim(1, np.arccosh, "acoshf({0})", py="math.acosh({0})"),
    "atanh": Prim(1, np.arctanh, "atanhf({0})", py="math.atanh({0})"),
    "log10": Prim(1, np.log10, "log10f({0})", py="math.log10({0})"),
    "log2": Prim(1, np.log2, "log2f({0})", py="math.log2({0})"),
    "cbrt": Prim(1, np.cbrt, "cbrtf({0})", py="np.cbrt({0})"),
    "erf": Prim(1, _np_erf, "erff({0})", py="math.erf({0})"),
    "erfinv": Prim(1, _np_erfinv, "erfinvf({0})"),
    "gamma": Prim(1, _per_element(_c_gamma), "tgammaf({0})", py="math.gamma({0})"),
    "lgamma": Prim(1, _per_element(_c_lgamma), "lgammaf({0})", py="math.lgamma({0})"),
    "digamma": Prim(1, _np_digamma, "sg_digamma({0})"),
    "floor": Prim(1, np.floor, "floorf({0})", py="np.floor({0})"),
    "ceil": Prim(1, np.ceil, "ceilf({0})", py="np.ceil({0})"),
    "trunc": Prim(1, np.trunc, "truncf({0})", py="np.trunc({0})"),
    "round": Prim(1, _np_round, "roundf({0})",
                   py="np.copysign(np.floor(abs({0}) + F(0.5)), {0})"),
    "hypot": Prim(2, np.hypot, "hypotf({0}, {1})", py="math.hypot({0}, {1})"),
    "mod": Prim(2, _np_mod, _C_MOD, py="sg_mod({0}, {1})"),
    "gt": Prim(2, np.greater, "({0} > {1})", True, py="({0} > {1})"),
    "ge": Prim(2, np.greater_equal, "({0} >= {1})", True, py="({0} >= {1})"),
    "lt": Prim(2, np.less, "({0} < {1})", True, py="({0} < {1})"),
    "le": Prim(2, np.less_equal, "({0} <= {1})", True, py="({0} <= {1})"),
    "eq": Prim(2, np.equal, "({0} == {1})", True, py="({0} == {1})"),
    "ne": Prim(2, np.not_equal, "({0} != {1})", True, py="({0} != {1})"),
    "where": Prim(3, lambda c, a, b: np.where(c != 0, a, b), "(({0} != 0.f) ? {1} : {2})",
                   py="({1} if {0} != 0 else {2})"),
}


@dataclass(frozen=True, init=False)
class Expr:
    """A node of a scalar formula: ``op`` is a key of PRIMS, ``"input"`` (value = index) or
    ``"const"`` (value = float). Frozen and hashable, so equal subformulas share."""

    op: str
    args: tuple["Expr", ...] = ()
    value: Union[int, float, None] = None

    def __init__(self, op: str, args: tuple["Expr", ...] = (),
                 value: Union[int, float, None] = None) -> None:
        # Written into __dict__ directly: the frozen dataclass __init__ (one
        # object.__setattr__ per field) was a visible share of bind time, which builds
        # hundreds of thousands of these in fusion and simplification.
        d = self.__dict__
        d["op"], d["args"], d["value"] = op, args, value

    def __hash__(self) -> int:
        # Cached: the dataclass hash re-hashes the whole sub-DAG on every call, which made
        # topo() quadratic in the formula size (the optimizer update evaluates it every step).
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.op, self.args, self.value))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        # str hashes differ between processes: never carry the cached hash across a pickle.
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def __repr__(self) -> str:
        # Readable formulas in SYMGRAPH_DEBUG listings (the dataclass repr nests deeply).
        if self.op == "input":
            return f"in{self.value}"
        if self.op == "const":
            return f"{self.value:g}"
        return f"{self.op}({', '.join(map(repr, self.args))})"

    def __add__(self, o: "ExprLike") -> "Expr":
        return call("add", self, o)

    def __radd__(self, o: "ExprLike") -> "Expr":
        return call("add", o, self)

    def __sub__(self, o: "ExprLike") -> "Expr":
        return call("sub", self, o)

    def __rsub__(self, o: "ExprLike") -> "Expr":
        return call("sub", o, self)

    def __mul__(self, o: "ExprLike") -> "Expr":
        return call("mul", self, o)

    def __rmul__(self, o: "ExprLike") -> "Expr":
        return call("mul", o, self)

    def __truediv__(self, o: "ExprLike") -> "Expr":
        return call("div", self, o)

    def __rtruediv__(self, o: "ExprLike") -> "Expr":
        return call("div", o, self)

    def __pow__(self, o: "ExprLike") -> "Expr":
        return call("pow", self, o)

    def __rpow__(self, o: "ExprLike") -> "Expr":
        return call("pow", o, self)

    def __neg__(self) -> "Expr":
        return call("neg", self)


ExprLike = Union[Expr, int, float]


def const(v: float) -> Expr:
    return Expr("const", (), float(v))


def inp(i: int) -> Expr:
    return Expr("input", (), i)


def lift(x: ExprLike) -> Expr:
    return x if isinstance(x, Expr) else const(x)


def call(op: str, *args: ExprLike) -> Expr:
    """Apply primitive ``op``; checks arity so a typo in an op table fails at import."""
    if len(args) != PRIMS[op].arity:
        raise ValueError(f"primitive {op} takes {PRIMS[op].arity} arguments, got {len(args)}")
    return Expr(op, tuple([a if type(a) is Expr else lift(a) for a in args]))


def exp(x: ExprLike) -> Expr:
    return call("exp", x)


def log(x: ExprLike) -> Expr:
    return call("log", x)


def where(c: ExprLike, a: ExprLike, b: ExprLike) -> Expr:
    return call("where", c, a, b)


def topo(roots: Sequence[Expr]) -> list[Expr]:
    """Sub-expressions of ``roots``, each once, operands first."""
    seen: dict[Expr, None] = {}

    def visit(e: Expr) -> None:
        if e in seen:
            return
        for a in e.args:
            visit(a)
        seen[e] = None
    for r in roots:
        visit(r)
    return list(seen)


def print_formulas(roots: Sequence[Expr], arg: Sequence[str], template: Callable[[Prim], str],
                   literal: Callable[[float], str], statement: str
                   ) -> tuple[list[str], list[str]]:
    """Source text computing ``roots``: ``arg[i]`` names input ``i``, ``template`` gives a
    primitive's text (its C or Python), ``literal`` prints a constant, and ``statement``
    (``{0}``: a fresh name ``t<k>``, ``{1}``: the primitive's text) binds each operation.
    Returns (statements, name or literal of each root); shared subexpressions come once.
    The CUDA and compiled CPU backends print fused groups through this one walk."""
    names: dict[Expr, str] = {}
    lines: list[str] = []
    for e in topo(roots):
        if e.op == "input":
            names[e] = arg[int(e.value)]
        elif e.op == "const":
            names[e] = literal(float(e.value))
        else:
            text = template(PRIMS[e.op]).format(*(names[a] for a in e.args))
            names[e] = f"t{len(lines)}"
            lines.append(statement.format(names[e], text))
    return lines, [names[r] for r in roots]


def substitute(e: Expr, inputs: Sequence[Expr]) -> Expr:
    """Replace ``input(i)`` by ``inputs[i]`` (how fusion splices a member's formula)."""
    memo: dict[Expr, Expr] = {}

    def go(x: Expr) -> Expr:
        if x not in memo:
            if x.op == "input":
                memo[x] = inputs[int(x.value)]
            else:
                memo[x] = Expr(x.op, tuple(go(a) for a in x.args), x.value)
        return memo[x]
    return go(e)


# tuple(roots) -> (steps, where each root is): the formulas in topological order with their
# arguments as positions, made once. Fused kernels, the optimizer update and the RNN cells
# evaluate the same formulas every step (an LSTM language model's step: 147 evaluations of
# small arrays), and walking the DAG through Expr-keyed dicts cost more than the numpy work.
_PLANS: dict[tuple, tuple[list, tuple[int, ...]]] = {}


def _plan(roots: Sequence[Expr]) -> tuple[list, tuple[int, ...]]:
    key = tuple(roots)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 4096:
            _PLANS.clear()
        order = topo(key)
        at = {e: k for k, e in enumerate(order)}
        steps = [(e.op, e.value, PRIMS.get(e.op), tuple(at[a] for a in e.args))
                 for e in order]
        plan = _PLANS[key] = (steps, tuple(at[r] for r in key))
    return plan


def evaluate(roots: Sequence[Expr], inputs: Sequence[np.ndarray], dtype: np.dtype) -> list:
    """Evaluate formulas on numpy arrays (broadcasting), computing in ``dtype``."""
    dtype = np.dtype(dtype)
    steps, where = _plan(roots)
    vals: list = [None] * len(steps)
    with np.errstate(all="ignore"):
        for k, (op, value, prim, args) in enumerate(steps):
            if op == "input":
                vals[k] = inputs[int(value)]
            elif op == "const":
                vals[k] = dtype.type(value)
            else:
                v = prim.numpy(*[vals[a] for a in args])
                vals[k] = v.astype(dtype, copy=False) if prim.boolean else v
    return [np.asarray(vals[r], dtype=dtype) for r in where]
