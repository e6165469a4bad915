"""``_histogram``'s two kernels (setup, then atomic counting) compiled as host C++ and run on
the CPU (``host_run``), against numpy's ``histogram`` on data with values on bin edges, outside
the bins and NaN, for equal bins over a range, over the data's span, and given edges."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from .host_run import host_compiler, run_on_host

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
S = sg.sym
EDGES = np.array([-2.5, -1.0, 0.0, 0.5, 2.0])


def _data(dtype: str) -> np.ndarray:
    x = np.random.default_rng(4).uniform(-3.0, 3.0, size=(6, 7)).astype(dtype)
    x.flat[:7] = [-2.0, -1.0, 0.0, 2.0, 0.5, np.nan, 2.5]
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", ["range", "span", "edges"])
def test_histogram_kernels_match_numpy(mode: str, dtype: str, tmp_path: Path) -> None:
    x = _data(dtype)
    kw = {"range": dict(bins=4, range=(-2, 2)), "span": dict(bins=7),
          "edges": dict(bins=S.var("e"))}[mode]
    sym = S.histogram(S.var("x"), **kw)
    given = {"x": x.shape} if mode != "edges" else {"x": x.shape, "e": EDGES.shape}
    sch = sym.simple_bind(sg.cpu(), grad_req="null", type_dict={k: dtype for k in given},
                          **given)._train.schedule
    (step,) = [s for s in sch.steps if s.node.op == "_histogram"]
    xs = [x] + ([EDGES.astype(dtype)] if mode == "edges" else [])
    counts, edges = run_on_host(step, sch.shapes, sch.dtypes, xs, tmp_path)
    finite = x[~np.isnan(x)].astype(np.float64)
    if mode == "edges":
        want, want_edges = np.histogram(finite, bins=EDGES.astype(dtype).astype(np.float64))
    else:  # numpy's equal bins, their edges stored in the data's dtype
        want_edges = np.linspace(*(kw.get("range") or (finite.min(), finite.max())),
                                 kw["bins"] + 1).astype(dtype)
        want, _ = np.histogram(finite, bins=want_edges.astype(np.float64))
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_array_equal(edges, np.asarray(want_edges).astype(dtype))
