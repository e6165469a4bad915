"""Every registry case in float16 and bfloat16 on the numpy backend: inputs are rounded to the
narrow dtype, the float64 reference runs on the rounded inputs, and symgraph's narrow result
(computed in float32, stored narrow) must agree within the dtype's tolerance (docs/amp.md)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.dtypes import BFLOAT16, FLOAT16

from tests.ops.case import Case
from tests.ops.test_registry import ALL_CASES, _sample

# Half an ulp at 1 is 2^-11 (float16) and 2^-8 (bfloat16); a result stored narrow is off by
# that relatively, and an input rounding propagated through one op by a few times more.
TOL = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2)}
# Ops whose result is not a smooth function of the inputs: a one-ulp change of an input moves
# the result by more than a relative tolerance (integer sampling positions, random draws).
SKIP_VALUES = {"Dropout"}
# Cases whose graph multiplies by a creation op pinned to float64 (``_ones(dtype=float64)``):
# a narrow input there is a dtype conflict by design; their narrow use is covered by
# test_creation_ops_in_narrow_dtypes.
PINNED_FLOAT64 = {"_ones", "_full", "_arange"}


def _narrow_forward(case: Case, dt: np.dtype) -> tuple[list, list]:
    args, aux = _sample(case)
    args = {k: v.astype(dt).astype(np.float64) for k, v in args.items()}
    aux = {k: v.astype(dt).astype(np.float64) for k, v in aux.items()}
    sym = case.build()
    # a variable the case declares with a dtype (an index, a float64 constant) keeps it
    declared = {k: a["__dtype__"] for k, a in sym.attr_dict().items() if "__dtype__" in a}
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, dtype=declared.get(k, dt))
                              for k, v in args.items()},
                            aux_states={k: sg.nd.array(v, dtype=dt) for k, v in aux.items()}
                            or None)
    got = [o.asnumpy() for o in exe.forward(is_train=case.is_train)]
    want = case.ref(**args, **aux)
    return got, list(want) if isinstance(want, (list, tuple)) else [want]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.ref is not None
                                  and c.op not in PINNED_FLOAT64], ids=Case.name)
def test_narrow_forward_matches_reference(case: Case, dtype: str) -> None:
    dt = FLOAT16 if dtype == "float16" else BFLOAT16
    got, want = _narrow_forward(case, dt)
    assert len(got) == len(want)
    rtol, atol = TOL[dtype]
    for g, w in zip(got, want):
        w = np.asarray(w, np.float64)
        g64 = np.asarray(g).astype(np.float64)
        if case.op in SKIP_VALUES:
            assert g64.shape == w.shape
            continue
        scale = max(1.0, float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0)))
        np.testing.assert_allclose(g64, w, rtol=rtol, atol=atol * scale, equal_nan=True,
                                   err_msg=f"{case.name()} in {dtype}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "bf16"])
def test_creation_ops_in_narrow_dtypes(dtype: str) -> None:
    x = sg.sym.var("x")
    y = x * sg.sym.ones((2, 3), dtype=dtype) + sg.sym.full((2, 3), 0.1, dtype=dtype)
    xv = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    dt = sg.dtypes.as_dtype(dtype)
    out = y.bind(sg.cpu(), {"x": sg.nd.array(xv, dtype=dt)}).forward()[0]
    assert out.dtype == dt
    want = (xv.astype(dt).astype(np.float64) + np.float64(np.asarray(0.1, dt)))
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), want, rtol=TOL[dt.name][0])
    # arange in the narrow type: each value rounded once (numpy's float64 arange, cast)
    got = sg.sym.arange(-1.5, 2, 0.25, dtype=dtype).bind(sg.cpu(), {}).forward()[0]
    assert got.dtype == dt
    np.testing.assert_array_equal(got.asnumpy(), np.arange(-1.5, 2, 0.25).astype(dt))
