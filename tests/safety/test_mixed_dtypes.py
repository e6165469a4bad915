"""A float64 graph around an aot kernel with a float32 output. Its bprop's
float32 gradient is cast to the input's dtype, so the backward graph type-checks and
check_numeric_gradient passes; what cannot work is refused at bind, naming the node."""
from __future__ import annotations


import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.test_utils import check_numeric_gradient
from tests.safety.native_libs import MIXED_SRC, build

X = np.array([0.5, -1.0, 2.0, 1.5])


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> str:
    lib = build(tmp_path_factory.mktemp("c11"), "mixed", MIXED_SRC)
    decl = sg.operator.AotFunction(writes=lambda x: x, dtypes=("float64",))
    sg.operator.register_custom_ops_library(lib, {"Square64to32": decl})
    return lib


def _square(lib: str, x: sg.sym.Symbol, bprop) -> sg.sym.Symbol:
    """float32(x * x) from float64 x."""
    return sg.sym.Custom(x, func=f"{lib}:Square64to32", func_type="aot", out_shape=lambda s: s,
                         out_dtype="float32", bprop=bprop, name="sq")


def bprop32(x, out, dout):
    """d(x^2) = 2 x dout, computed in float32 (the kernel's dtype)."""
    return (sg.sym.Cast(2 * x, dtype="float32") * dout,)


def bprop64(x, out, dout):
    return (2 * x * sg.sym.Cast(dout, dtype="float64"),)


@pytest.mark.parametrize("bprop", [bprop32, bprop64])
def test_float32_kernel_in_a_float64_graph(lib: str, bprop) -> None:
    """The issue's failure: (float32 gradient + float64 gradient) of x met in one fused add and
    lowering raised 'fused_...: in2 has dtype float32, inferred float64'."""
    x = sg.sym.var("x")
    sym = sg.sym.Cast(_square(lib, x, bprop), dtype="float64") * x  # x^3
    check_numeric_gradient(sym, {"x": X}, rtol=1e-3, atol=1e-4)
    exe = sym.simple_bind(sg.cpu(), type_dict={"x": np.float64}, x=X.shape)
    exe.forward(is_train=True, x=X)
    exe.backward(sg.nd.array(np.ones(4), dtype=np.float64))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), X ** 3, rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 3 * X ** 2, rtol=1e-6)


def test_float32_output_alone(lib: str) -> None:
    check_numeric_gradient(_square(lib, sg.sym.var("x"), bprop32), {"x": X}, rtol=1e-3,
                           atol=1e-4)


def test_float32_input_refused_at_bind(lib: str) -> None:
    """The kernel reads float64: a float32 graph is a DTypeError naming the node at bind."""
    sym = _square(lib, sg.sym.var("x"), bprop32)
    x32 = sg.nd.array(X, dtype=np.float32)
    with pytest.raises(sg.DTypeError, match=r"sq \(Custom\): input x0 has dtype float32, but "
                                            r"Square64to32 in .*mixed.so is declared to read "
                                            r"only \['float64'\]"):
        sym.bind(sg.cpu(), {"x": x32}, args_grad={"x": sg.nd.zeros(4)})
    np.testing.assert_array_equal(x32.asnumpy(), X.astype(np.float32))


def test_mixing_without_a_cast_is_a_clear_bind_error(lib: str) -> None:
    """float32 * float64 with no Cast: refused at bind by the multiplication, named."""
    x = sg.sym.var("x")
    sym = _square(lib, x, bprop32) * x
    with pytest.raises(sg.DTypeError, match=r"\(broadcast_mul\): .* float64.*float32|"
                                            r"\(broadcast_mul\): .* float32.*float64"):
        sym.simple_bind(sg.cpu(), type_dict={"x": np.float64}, x=X.shape)
