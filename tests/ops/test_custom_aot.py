"""The aot kind of ``Custom`` (MindSpore's ABI) on the CPU twin of the seed's kernel, built with
gcc; the GPU test builds the seed's ``custom_add.cu`` with nvcc and compares with the CPU."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.models.aot_custom_add import build_library, correct_bprop, run
from symgraph.interop.test_utils import assert_almost_equal, check_numeric_gradient

FAIL_SRC = r"""
#include <stdint.h>
/* Writes garbage into its output, then reports failure: symgraph must not show that output. */
int CustomFail(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
               void *stream, void *extra) {
    float *out = (float *)params[nparam - 1];
    for (int64_t i = 0; i < shapes[nparam - 1][0]; ++i) out[i] = 99.0f;
    return 7;
}
"""

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> str:
    return build_library("cpu", str(tmp_path_factory.mktemp("aot")))


@pytest.fixture(scope="module")
def fail_lib(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("aotfail")
    (d / "fail.c").write_text(FAIL_SRC)
    out = str(d / "fail.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", out, str(d / "fail.c")], check=True)
    return out


def _add(lib: str, *inputs, **kw) -> sg.sym.Symbol:
    kw.setdefault("out_shape", lambda a, b: a)
    kw.setdefault("out_dtype", lambda a, b: a)
    return sg.sym.Custom(*inputs, func=f"{lib}:CustomAdd", func_type="aot", name="add", **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_equals_numpy_sum(lib: str, rng, dtype) -> None:
    a, b = rng.normal(size=(4, 5)).astype(dtype), rng.normal(size=(4, 5)).astype(dtype)
    sym = _add(lib, sg.sym.var("a"), sg.sym.var("b"))
    exe = sym.bind(sg.cpu(), {"a": sg.nd.array(a, dtype=dtype), "b": sg.nd.array(b, dtype=dtype)})
    out = exe.forward()[0]
    assert out.dtype == dtype and out.shape == (4, 5)
    assert_almost_equal(out, a.astype(np.float64) + b, rtol=1e-6)


def test_value_form_shape_and_dtype(lib: str) -> None:
    sym = _add(lib, sg.sym.var("a"), sg.sym.var("b"), out_shape=[3], out_dtype="float32")
    _, outs, _ = sym.infer_shape(a=(3,), b=(3,))
    assert outs == [(3,)]
    assert sym.infer_type(a=np.float32, b=np.float32)[1] == [np.dtype(np.float32)]


def test_numeric_gradient_with_bprop(lib: str, rng) -> None:
    sym = _add(lib, sg.sym.var("a"), sg.sym.var("b"), bprop=correct_bprop)
    check_numeric_gradient(sym, {"a": rng.normal(size=(3, 2)), "b": rng.normal(size=(3, 2))})


def test_bprop_may_use_custom_ops(lib: str, rng) -> None:
    """The backward graph itself calls the aot kernel (dout + dout) and a Python Custom op."""
    def bprop(x, y, out, dout):
        twice = sg.sym.Custom(dout, dout, func=f"{lib}:CustomAdd", func_type="aot",
                              out_shape=lambda a, b: a, out_dtype=lambda a, b: a)
        # (2 dout + sin dout) - (dout + sin dout) = dout
        ones = (sg.sym.Custom(dout, op_type="test_scale_sin", scale=2)
                - sg.sym.Custom(dout, op_type="test_scale_sin", scale=1))
        return (twice * 0.5, ones)
    import tests.ops.cases_custom  # noqa: F401  (registers test_scale_sin)
    a = sg.sym.var("a")
    sym = _add(lib, a, sg.sym.var("b"), bprop=bprop)
    check_numeric_gradient(sym, {"a": rng.normal(size=(5,)), "b": rng.normal(size=(5,))})
    # and the composed function (x + y) * x goes through autodiff around the aot node
    prod = sym * a
    check_numeric_gradient(prod, {"a": rng.normal(size=(5,)), "b": rng.normal(size=(5,))})


def test_seed_example_prints_seed_values(lib: str) -> None:
    res, grad = run("cpu", lib)
    np.testing.assert_array_equal(res, np.array([1., 2., 3.]) + np.array([3., 2., 1.]))
    np.testing.assert_array_equal(grad, np.array([3., 2., 1.]))  # the seed's bprop returns y


def test_nonzero_return_raises_and_outputs_untouched(fail_lib: str) -> None:
    sym = sg.sym.Custom(sg.sym.var("a"), func=f"{fail_lib}:CustomFail", func_type="aot",
                        out_shape=(4,), out_dtype="float32", name="bad")
    exe = sym.bind(sg.cpu(), {"a": sg.nd.ones(4)})
    exe.outputs[0][:] = 5.0
    with pytest.raises(sg.ExecutionError, match=r"CustomFail.*fail\.so.*returned 7"):
        exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full(4, 5.0, np.float32))


def test_wrong_dtype_is_refused_at_bind(lib: str) -> None:
    """symgraph.interop.models.aot_custom_add declares the dtypes CustomAdd reads (f32/f64)."""
    from symgraph.interop.models.aot_custom_add import allow_library
    allow_library(lib)
    sym = _add(lib, sg.sym.var("a"), sg.sym.var("b"))
    ints = {k: sg.nd.ones(3, dtype=np.int32) for k in ("a", "b")}
    with pytest.raises(sg.DTypeError, match=r"add \(Custom\): input x0 has dtype int32.*"
                                            r"declared to read only \['float32', 'float64'\]"):
        sym.bind(sg.cpu(), ints)


def test_missing_symbol(lib: str) -> None:
    with pytest.raises(sg.AttrError, match=r"custom_add_cpu\.so has no exported function 'Nope'"):
        sg.sym.Custom(sg.sym.var("a"), func=f"{lib}:Nope", func_type="aot", out_shape=(1,),
                      out_dtype="float32")


def test_unloadable_library(tmp_path) -> None:
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not a library")
    with pytest.raises(sg.AttrError, match=r"cannot load library .*bogus\.so \(for function F\)"):
        sg.sym.Custom(sg.sym.var("a"), func=f"{bogus}:F", func_type="aot", out_shape=(1,),
                      out_dtype="float32")
    with pytest.raises(sg.AttrError, match="missing.so"):
        sg.sym.Custom(sg.sym.var("a"), func=f"{tmp_path}/missing.so:F", func_type="aot",
                      out_shape=(1,), out_dtype="float32")


def test_missing_bprop_fails_at_bind(lib: str) -> None:
    sym = _add(lib, sg.sym.var("a"), sg.sym.var("b"))
    with pytest.raises(sg.GraphError, match="add \\(Custom\\).*no bprop"):
        sym.simple_bind(sg.cpu(), a=(3,), b=(3,))
    sym.simple_bind(sg.cpu(), grad_req="null", a=(3,), b=(3,))  # inference is fine


def test_json_callables_refused_values_round_trip(lib: str, rng) -> None:
    with pytest.raises(sg.GraphError, match="add \\(Custom\\): attribute .* Python callable"):
        _add(lib, sg.sym.var("a"), sg.sym.var("b")).tojson()
    sym = _add(lib, sg.sym.var("a"), sg.sym.var("b"), out_shape=(2, 3), out_dtype="float32")
    again = sg.sym.load_json(sym.tojson())
    assert again.tojson() == sym.tojson()
    assert again.outputs_[0].node.attrs == sym.outputs_[0].node.attrs
    a, b = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)
    exe = again.bind(sg.cpu(), {"a": sg.nd.array(a), "b": sg.nd.array(b)})
    assert_almost_equal(exe.forward()[0], a.astype(np.float64) + b, rtol=1e-6)


def test_bad_attributes(lib: str) -> None:
    with pytest.raises(sg.AttrError, match="out_shape and out_dtype"):
        sg.sym.Custom(sg.sym.var("a"), func=f"{lib}:CustomAdd", func_type="aot")
    with pytest.raises(sg.AttrError, match="library.so:FunctionName"):
        sg.sym.Custom(sg.sym.var("a"), func="nocolon", func_type="aot", out_shape=(1,),
                      out_dtype="float32")
    with pytest.raises(sg.AttrError, match="positionally"):
        sg.sym.Custom(x=sg.sym.var("a"), func=f"{lib}:CustomAdd", func_type="aot",
                      out_shape=(1,), out_dtype="float32")


@pytest.mark.gpu
def test_gpu_matches_cpu(tmp_path) -> None:
    cpu_res, cpu_grad = run("cpu", build_library("cpu", str(tmp_path)))
    gpu_res, gpu_grad = run("gpu", build_library("gpu", str(tmp_path)))
    np.testing.assert_array_equal(gpu_res, cpu_res)
    np.testing.assert_array_equal(gpu_grad, cpu_grad)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_seed_cuda_source_compiles(tmp_path) -> None:
    out = build_library("gpu", str(tmp_path))
    assert subprocess.run(["nm", "-D", out], capture_output=True, text=True,
                          check=True).stdout.count(" T CustomAdd") == 1
