"""Why each step of the registry's cases that the compiled CPU backend (the default) leaves to
the numpy reference does so: every reason ``CompiledProgram.fallbacks()`` gives is one of the
kinds below, and every lowering family without compiled kernels is listed here with why numpy
is kept for it. A new family, or a new kind of reason, fails until it is said here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import symgraph as sg
from tests.cpu.test_registry_compiled import SAMPLE
from tests.ops import test_registry as R
from tests.ops.case import Case

WHY = {
    "blas": "a BLAS GEMM (or LAPACK call) either way: a compiled loop around it gains nothing",
    "moves": "a copy, gather, scatter or fill: numpy's one strided pass already",
    "reduce": "reductions, scans and sorts: numpy's are one SIMD pass; no compiled "
              "reductions yet",
    "rows": "row kernels (softmax, the normalisations, their gradients): not compiled yet; "
            "numpy's row reductions",
    "random": "draws from the run's numpy generator, so the stream is the reference's",
    "numpy_algorithm": "data-dependent algorithms and host calls (detection, ROI, CTC, "
                       "custom ops, the composites the reference unrolls)",
    "update": "the update ops run the optimizers' formulas in numpy; the optimizer classes "
              "compile the same formulas (cpu.backend.evaluate)",
}
FAMILIES = {
    **dict.fromkeys(("fully_connected", "dot", "batch_dot", "batch_dot_heads", "linalg_gemm",
                     "linalg_syrk", "linalg_trmm", "khatri_rao", "linalg_refused",
                     "linalg_sumlogdiag"), "blas"),
    **dict.fromkeys(("gather_views", "scatter_views", "axis_gather", "nd_index", "take",
                     "take_backward", "broadcast_to", "copy", "fill", "fill_element",
                     "fill_view", "constant", "arange", "shape_constant", "index_array",
                     "index_copy", "pad", "pad_backward", "diag", "linalg_trian", "one_hot",
                     "ravel", "unravel", "sum_copies", "sum_to_shape", "multi_transpose_cast",
                     "cast", "sequence", "columns", "where", "upsampling_nearest",
                     "pooling_gather"), "moves"),
    **dict.fromkeys(("reduce_backward", "reduce_each", "arg_reduce", "scan",
                     "allclose", "histogram", "rank_sort"), "reduce"),
    **dict.fromkeys(("softmax_cross_entropy",
                     "softmax_output_backward", "row_norm", "layer_norm_backward",
                     "batch_norm_backward", "batch_norm_relu", "lrn", "div_sqrt_dim",
                     "leaky_relu", "formula_of_input0", "conv_act_pool",
                     "conv_act_pool_backward"), "rows"),
    **dict.fromkeys(("random_draw", "multinomial", "dirichlet_pdf", "leading_elementwise",
                     "shuffle", "dropout"), "random"),
    **dict.fromkeys(("callback", "host", "unrolled", "detection", "detection_nms", "multibox",
                     "proposal", "roi", "deformable", "ctc"), "numpy_algorithm"),
    "update": "update",
}
# reasons that are not a missing family: (pattern, why it is right)
OTHER = [
    (r"one primitive \(\w+\): numpy's ufunc is as fast or faster", "one ufunc is one pass"),
    (r"\d+ elements, below MIN_ELEMENTS", "numpy takes microseconds there"),
    (r"primitive\(s\) .* have no compiled form", "erfinv and digamma: no numba form"),
    (r"pool_type='\w+' \(compiled: max\)", "float64 average pooling (oneDNN takes float32)"),
    (r"transposed '\w+' \(compiled: Convolution's calls\)", "Deconvolution"),
    (r"num_group=\d+ \(compiled: 1\)", "grouped convolution"),
    (r"\d-D (convolution|pooling) \(compiled: 2-D\)", "1-D and 3-D windows"),
    (r"pad \(\d+, \d+\) \(compiled: unpadded windows\)", "float64 padded pooling"),
    (r"dtypes \[.*\] \(compiled: .*\)", "integer or mixed dtypes"),
    (r"mixed dtypes \[.*\]", "a group over two dtypes"),
    (r"dtype \w+ \(compiled: .*\)", "an integer group, a narrow RNN"),
    (r"numpy's reduction \(compiled: a sum or mean over leading axes only\)",
     "other reductions: numpy's are one SIMD pass (WHY['reduce'])"),
    (r"numpy's reduction in \w+ \(compiled: float32, float64\)", "integer and narrow sums"),
    (r"\w+ \(compiled rows: softmax, log_softmax, _softmax_backward\)",
     "softmin, SoftmaxActivation"),
    (r"inputs or output of another dtype \(compiled rows: one dtype\)",
     "a narrow output gradient read as float"),
    (r"\w+=.* \(compiled rows: none\)", "a length, a temperature or an output dtype"),
    (r"axis -?\d+ of \d+ \(compiled rows: the last\)", "a softmax over another axis"),
    (r"an empty array \(compiled rows: non-empty\)", "nothing to compute"),
    (r"fewer than \d+ rows \(numpy's row adds are as fast\)", "small sums"),
]


def _fallbacks(case: Case) -> list:
    args, aux = R._sample(case)
    exe = case.build().bind(
        sg.cpu(), {k: sg.nd.array(v) for k, v in args.items()},
        args_grad={k: sg.nd.zeros(v.shape) for k, v in args.items()} if case.grad else None,
        aux_states={k: sg.nd.array(v) for k, v in aux.items()} or None)
    return list((exe._train if case.grad else exe._infer).program.fallbacks())


def _cases() -> list:
    return [pytest.param(c, id=c.name(), marks=() if c.name() in SAMPLE else pytest.mark.slow)
            for c in R.ALL_CASES if c.name() not in ("_arange", "_arange_stop_none", "_ones",
                                                      "_full")]


@pytest.mark.parametrize("case", _cases())
def test_every_fallback_says_why(case: Case, compiled: Path) -> None:
    for step in _fallbacks(case):
        m = re.fullmatch(r"no compiled '(\w+)' kernels", step.why)
        if m:
            assert m.group(1) in FAMILIES, f"{step.op}: family {m.group(1)!r} is not listed"
            continue
        assert any(re.fullmatch(p, step.why) for p, _ in OTHER), f"{step.op}: {step.why}"


def test_every_family_has_a_reason() -> None:
    assert set(FAMILIES.values()) == set(WHY)
    from symgraph.runtime.cpu.backend import COMPILERS
    assert not set(FAMILIES) & set(COMPILERS)  # a compiled family is not a fallback
