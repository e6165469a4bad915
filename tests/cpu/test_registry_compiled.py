"""The registry's CPU tests (tests/ops/test_registry.py) with ``SYMGRAPH_CPU=compiled``, and
each case's forward and backward compared with the numpy backend's.

Every case runs with ``-m slow`` (about 280 kernels to compile the first time: a minute or
two on two cores, seconds once numba's cache is warm); the default run takes a sample that
covers fused groups with several members and outputs, broadcast operands, GEMM and
BatchNorm heads, and the templates with helpers (mod)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from tests.ops import test_registry as R
from tests.ops.case import Case

SAMPLE = {"Activation-softrelu", "LeakyReLU-gelu", "LeakyReLU-selu", "broadcast_add-both",
          "broadcast_power-rowvec", "broadcast_mod", "smooth_l1", "hard_sigmoid", "clip",
          "BatchNorm-train", "FullyConnected", "Convolution-2d-pad", "_hypot", "where"}


def _cases(cases: list[Case]) -> list:
    return [pytest.param(c, id=c.name(), marks=() if c.name() in SAMPLE else pytest.mark.slow)
            for c in cases]


def _run(case: Case, args: dict, aux: dict, dtype: str) -> list[np.ndarray]:
    """Forward (training mode when there are gradients) then backward with ones."""
    exe = case.build().bind(
        sg.cpu(), {k: sg.nd.array(v, dtype=dtype) for k, v in args.items()},
        args_grad={k: sg.nd.zeros(v.shape, dtype=dtype) for k, v in args.items()}
        if case.grad else None,
        aux_states={k: sg.nd.array(v, dtype=dtype) for k, v in aux.items()} or None)
    outs = [o.asnumpy() for o in exe.forward(is_train=case.grad or case.is_train)]
    if case.grad:
        exe.backward([sg.nd.ones(o.shape, dtype=o.dtype) for o in outs])
        outs += [exe.grad_dict[k].asnumpy() for k in args]
    return outs


def test_the_sample_names_registry_cases() -> None:
    assert SAMPLE <= {c.name() for c in R.ALL_CASES}
    assert FLOAT64_ONLY <= {c.name() for c in R.ALL_CASES}


@pytest.mark.parametrize("case", _cases(R.ALL_CASES))
def test_forward_matches_reference_compiled(case: Case, compiled: Path) -> None:
    R.test_forward_matches_reference(case)


@pytest.mark.parametrize("case", _cases([c for c in R.ALL_CASES if c.grad]))
def test_numeric_gradient_compiled(case: Case, compiled: Path) -> None:
    R.test_numeric_gradient(case)


# cases whose graph names float64 (``dtype=np.float64``): their float32 inputs would not type
# check, so they run in float64 only
FLOAT64_ONLY = {"_arange", "_arange_stop_none", "_ones", "_full"}


def _dtype_cases() -> list:
    out = []
    for p in _cases(R.ALL_CASES):
        case = p.values[0]
        for dtype, rtol in (("float64", 1e-9), ("float32", 1e-5)):
            if dtype == "float32" and case.name() in FLOAT64_ONLY:
                continue
            slow = dtype == "float64" or case.name() not in SAMPLE
            out.append(pytest.param(case, dtype, rtol, id=f"{case.name()}-{dtype}-{rtol}",
                                    marks=pytest.mark.slow if slow else ()))
    return out


@pytest.mark.parametrize("case,dtype,rtol", _dtype_cases())
def test_compiled_matches_numpy_backend(case: Case, dtype: str, rtol: float, compiled: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    args, aux = R._sample(case)
    got = _run(case, args, aux, dtype)
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want = _run(case, args, aux, dtype)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * 0.1, equal_nan=True)
