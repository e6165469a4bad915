"""What keeps the compiled backend's first step short: window kernels free of array slice
assignments (numba compiles a shape-mismatch error path for each, 5 s of a cold first step),
one im2col kernel for both column layouts, and ``benchmarks/cpu_first_step.py``'s reading of
numba's compile events."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np

from benchmarks.cpu_first_step import _compile_times
from symgraph.runtime.cpu import render_window as W

# a subscript holding a slice, assigned to: ``a[1:2, :] = ...`` or ``a[:] += ...``
SLICE_STORE = re.compile(r"^\s*\w+\[[^\]]*:[^\]]*\]\s*[-+*/]?=(?!=)")
GEOMETRIES = [(3, 3, 1, 1, 1, 1, 1, 1), (3, 2, 2, 1, 0, 1, 2, 1), (1, 1, 1, 1, 0, 0, 1, 1)]


def _sources() -> list[W.Kernel]:
    out = [W.render_pool_forward((2, 2), (2, 2), "float32"),
           W.render_pool_backward((3, 3), (2, 2), "float64", False),
           W.render_pool_backward((2, 2), (2, 2), "float32", True)]
    for g in GEOMETRIES:
        out += [W.render_im2col(g, "float32"), W.render_col2im(g, "float64")]
    return out


def test_window_kernels_store_no_array_slices() -> None:
    for k in _sources():
        bad = [ln for ln in k.source.splitlines() if SLICE_STORE.match(ln)]
        assert not bad, f"{k.name}: slice assignment(s) {bad}"


def test_the_pattern_finds_slice_stores() -> None:
    """The guard above is not vacuous: it catches the forms the kernels used to have."""
    for ln in ("    pad[1:1 + h, 1:1 + w] = x[s, c]", "        dxp[:] = z", "  a[0:n] += b"):
        assert SLICE_STORE.match(ln)
    for ln in ("    crow = cols[ck:ck + n]", "    y[j] = x[j]", "    if a[1:2] == b:"):
        assert not SLICE_STORE.match(ln)


def test_one_im2col_kernel_writes_both_layouts(compiled: object) -> None:
    """The same kernel (one compilation) fills per-sample and rows-first columns, with and
    without the ones row, equal to a float64 reference of the definition."""
    from symgraph.runtime.cpu.kernels import load
    g = (3, 3, 2, 1, 1, 0, 1, 2)
    kh, kw, sh, sw, ph, pw, dh, dw = g
    x = np.random.default_rng(0).normal(size=(3, 2, 7, 9)).astype(np.float32)
    oh = (7 + 2 * ph - (kh - 1) * dh - 1) // sh + 1
    ow = (9 + 2 * pw - (kw - 1) * dw - 1) // sw + 1
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ref = np.empty((3, 2 * kh * kw, oh, ow))
    for c in range(2):
        for i in range(kh):
            for j in range(kw):
                ref[:, c * kh * kw + i * kw + j] = xp[:, c, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                                                      j * dw:j * dw + (ow - 1) * sw + 1:sw]
    kernel = load(W.render_im2col(g, "float32"))
    pads = np.zeros((3,) + W.padded_plane(g, (7, 9), (oh, ow)), np.float32)
    per_sample = np.full((3, 2 * kh * kw + 1, oh, ow), np.nan, np.float32)
    kernel(0, 3, x, per_sample, pads, False, True)
    rows_first = np.full((2 * kh * kw, 3, oh, ow), np.nan, np.float32)
    kernel(0, 3, x, rows_first, pads, True, False)
    np.testing.assert_array_equal(per_sample[:, :-1], ref.astype(np.float32))
    np.testing.assert_array_equal(per_sample[:, -1], 1.0)
    np.testing.assert_array_equal(rows_first, ref.transpose(1, 0, 2, 3).astype(np.float32))
    assert len(kernel.signatures) == 1


def _event(stamp: float, start: bool, name: str) -> tuple:
    status = SimpleNamespace(name="START" if start else "END")
    fn = SimpleNamespace(py_func=SimpleNamespace(__name__=name))
    return stamp, SimpleNamespace(status=status, data={"dispatcher": fn})


def test_compile_times_count_outermost_compilations_only() -> None:
    events = [_event(0.0, True, "sg_a"), _event(0.5, True, "helper"), _event(0.7, False,
              "helper"), _event(2.0, False, "sg_a"), _event(3.0, True, "sg_b"),
              _event(3.25, False, "sg_b")]
    assert _compile_times(events) == [("sg_a", 2.0), ("sg_b", 0.25)]
