"""Generic tests over the whole registry: completeness, forward vs an independent float64
reference, numeric gradients, JSON round trips. Cases live in ``tests/ops/cases_*.py``."""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import symgraph as sg
import tests.ops
from symgraph.core.registry import NO_GRADIENT, NOT_DIFFERENTIABLE, PATTERNS, all_ops
from symgraph.interop.test_utils import assert_almost_equal, check_numeric_gradient

from .case import Case

INTERNAL = {"_fused", "_constant"}  # made only by passes; tested in tests/passes
ZERO_GRADIENT_BY_DESIGN = {"BlockGrad"}  # checked in tests/test_autodiff.py

ALL_CASES: list[Case] = [
    c for m in pkgutil.iter_modules(tests.ops.__path__) if m.name.startswith("cases_")
    for c in importlib.import_module(f"tests.ops.{m.name}").CASES]


def _sample(case: Case, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    return ({k: np.asarray(g(rng), dtype=np.float64) for k, g in case.inputs.items()},
            {k: np.asarray(g(rng), dtype=np.float64) for k, g in case.aux.items()})


def _forward(sym, args: dict, aux: dict, is_train: bool) -> list[np.ndarray]:
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, dtype=np.float64) for k, v in args.items()},
                   aux_states={k: sg.nd.array(v, dtype=np.float64) for k, v in aux.items()}
                   or None)
    return [o.asnumpy() for o in exe.forward(is_train=is_train)]


def test_every_op_is_complete() -> None:
    for name, op in all_ops().items():
        assert op.pattern in PATTERNS, name
        assert callable(op.infer_shape) and callable(op.infer_type) and callable(op.compute), name
        assert op.gradient in (NOT_DIFFERENTIABLE, NO_GRADIENT) or callable(op.gradient), name
        assert op.doc, f"{name} has no docstring"


def test_every_op_is_covered_by_a_case() -> None:
    covered = {c.op for c in ALL_CASES} | {o for c in ALL_CASES for o in c.also_covers}
    missing = sorted(set(all_ops()) - covered - INTERNAL)
    assert not missing, f"ops without a test case: {missing}"


def test_not_differentiable_cases_are_declared() -> None:
    for c in ALL_CASES:
        if not c.grad and c.loss is None and c.op not in ZERO_GRADIENT_BY_DESIGN:
            assert all_ops()[c.op].gradient in (NOT_DIFFERENTIABLE, NO_GRADIENT), \
                f"{c.name()}: gradient check skipped but the op is differentiable"


@pytest.mark.parametrize("case", ALL_CASES, ids=Case.name)
def test_forward_matches_reference(case: Case) -> None:
    if case.ref is None:
        pytest.fail(f"{case.name()}: no reference")
    args, aux = _sample(case)
    got = _forward(case.build(), args, aux, case.is_train)
    want = case.ref(**args, **aux)
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_almost_equal(g, np.asarray(w, dtype=np.float64), case.rtol, case.atol,
                            ("symgraph", "reference"))


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.grad], ids=Case.name)
def test_numeric_gradient(case: Case) -> None:
    args, aux = _sample(case)
    check_numeric_gradient(case.build(), args, aux_states=aux or None,
                           grad_nodes=case.grad_nodes, rtol=case.grad_rtol,
                           use_forward_train=True, atol=case.atol)


def _numeric_of(fn, args: dict, name: str, eps: float = 1e-6) -> np.ndarray:
    base = args[name]
    g = np.zeros_like(base)
    for i in range(base.size):
        for sign in (1, -1):
            x = base.copy()
            x.reshape(-1)[i] += sign * eps
            g.reshape(-1)[i] += sign * fn(**{**args, name: x}) / (2 * eps)
    return g


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.loss is not None], ids=Case.name)
def test_loss_gradient(case: Case) -> None:
    args, aux = _sample(case)
    sym = case.build()
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, dtype=np.float64) for k, v in args.items()},
                   args_grad={k: sg.nd.zeros(v.shape, dtype=np.float64) for k, v in args.items()},
                   aux_states={k: sg.nd.array(v, dtype=np.float64) for k, v in aux.items()}
                   or None)
    exe.forward(is_train=True)
    exe.backward()
    for name in case.grad_nodes or list(args):
        assert_almost_equal(exe.grad_dict[name].asnumpy(), _numeric_of(case.loss, args, name),
                            case.grad_rtol, case.atol, (f"gradient of {name}", "numeric"))


@pytest.mark.parametrize("case", ALL_CASES, ids=Case.name)
def test_json_round_trip(case: Case) -> None:
    sym = case.build()
    again = sg.sym.load_json(sym.tojson())
    assert again.tojson() == sym.tojson()
    assert again.list_arguments() == sym.list_arguments()
    args, aux = _sample(case)
    for a, b in zip(_forward(sym, args, aux, case.is_train),
                    _forward(again, args, aux, case.is_train)):
        np.testing.assert_array_equal(a, b)


def test_every_op_states_a_gpu_lowering_or_why_not() -> None:
    """An op's GPU lowering is part of its one definition: a registered family (or, for ops
    with a formula, the elementwise family); the host stopgap only with a stated reason."""
    from symgraph.runtime.cuda import lowering  # noqa: F401  (registers every family)
    from symgraph.runtime.cuda.actions import FAMILIES, lowering_of
    problems = []
    for name, op in all_ops().items():
        family, params = lowering_of(op)
        if family not in FAMILIES:
            problems.append(f"{name}: lowering family {family!r} is not registered")
        elif family == "host" and not params.get("why"):
            problems.append(f"{name}: no GPU lowering and no reason given (lowering=('host', "
                            f"{{'why': ...}}))")
    assert not problems, "\n".join(problems)
