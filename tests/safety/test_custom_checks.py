"""What custom ops give back is checked, and errors name the op."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from tests.safety.native_libs import F32_SRC, build, build_custom_add


@pytest.fixture(scope="module")
def add_lib(tmp_path_factory) -> str:
    lib = build_custom_add(tmp_path_factory.mktemp("c10"))
    sg.operator.register_custom_ops_library(
        lib, {"CustomAdd": sg.operator.AotFunction(writes=sg.operator.same_shape)})
    return lib


def _aot_add(lib: str, bprop) -> sg.sym.Symbol:
    return sg.sym.Custom(sg.sym.var("a"), sg.sym.var("b"), func=f"{lib}:CustomAdd",
                         func_type="aot", out_shape=lambda a, b: a, out_dtype=lambda a, b: a,
                         bprop=bprop, name="add")


def _bind_grad(sym: sg.sym.Symbol) -> sg.Executor:
    return sym.simple_bind(sg.cpu(), a=(3,), b=(3,))


@pytest.mark.parametrize("bad, shown", [(3.0, "float 3.0"), (np.ones(3), "ndarray"),
                                        ("dout", "str 'dout'")])
def test_bprop_must_return_symbols(add_lib: str, bad, shown: str) -> None:
    sym = _aot_add(add_lib, lambda x, y, out, dout: (bad, dout))
    with pytest.raises(sg.GraphError, match=rf"add \(Custom\): bprop returned {shown}.* "
                                            rf"gradient of x0; return a one-output sg.sym"):
        _bind_grad(sym)


def test_bprop_gradient_of_the_wrong_shape(add_lib: str) -> None:
    sym = _aot_add(add_lib, lambda x, y, out, dout: (sg.sym.sum(dout), dout))
    with pytest.raises(sg.ShapeError, match=r"add \(Custom\): bprop's gradient of x0 has shape "
                                            r"\(1,\), the input has \(3,\)"):
        _bind_grad(sym)
    # inference only needs no bprop: the same graph binds without gradients
    exe = sym.simple_bind(sg.cpu(), grad_req="null", a=(3,), b=(3,))
    np.testing.assert_array_equal(exe.forward(a=np.ones(3), b=np.ones(3))[0].asnumpy(), [2] * 3)


def test_gpu_library_on_the_cpu(tmp_path: Path) -> None:
    lib = build_custom_add(tmp_path, "gpu")
    sym = sg.sym.Custom(sg.sym.var("a"), sg.sym.var("b"), func=f"{lib}:CustomAdd",
                        func_type="aot", out_shape=(3,), out_dtype="float32", name="add")
    a, b = sg.nd.array([1., 2., 3.]), sg.nd.array([1., 1., 1.])
    exe = sym.bind(sg.cpu(), {"a": a, "b": b})
    exe.outputs[0][:] = 7.0
    with pytest.raises(sg.ExecutionError, match=r"CustomAdd in .*custom_add_gpu.so holds CUDA "
                                                r"device code .* cannot run on a cpu context"):
        exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [7.] * 3)
    np.testing.assert_array_equal(a.asnumpy(), [1., 2., 3.])


@pytest.mark.gpu
def test_cpu_library_on_the_gpu(add_lib: str) -> None:
    sym = sg.sym.Custom(sg.sym.var("a"), sg.sym.var("b"), func=f"{add_lib}:CustomAdd",
                        func_type="aot", out_shape=(3,), out_dtype="float32", name="add")
    ctx = sg.gpu()
    exe = sym.bind(ctx, {"a": sg.nd.ones(3, ctx), "b": sg.nd.ones(3, ctx)})
    with pytest.raises(sg.ExecutionError, match=r"CustomAdd in .*custom_add_cpu.so holds host "
                                                r"code only .* cannot run on a gpu context"):
        exe.forward()


def test_float64_inputs_to_float32_code(tmp_path: Path) -> None:
    lib = build(tmp_path, "triple32", F32_SRC)
    decl = sg.operator.AotFunction(writes=lambda x: x, dtypes=("float32",))
    sg.operator.register_custom_ops_library(lib, {"Triple32": decl})
    sym = sg.sym.Custom(sg.sym.var("x"), func=f"{lib}:Triple32", func_type="aot",
                        out_shape=lambda x: x, out_dtype="float32", name="tri")
    x64 = sg.nd.array([1., 2.], dtype=np.float64)
    with pytest.raises(sg.DTypeError, match=r"tri \(Custom\): input x0 has dtype float64, but "
                                            r"Triple32 in .*triple32.so is declared to read only "
                                            r"\['float32'\]"):
        sym.bind(sg.cpu(), {"x": x64})
    np.testing.assert_array_equal(x64.asnumpy(), [1., 2.])
    # cast in the graph, as the message says: then it runs
    cast = sg.sym.Custom(sg.sym.Cast(sg.sym.var("x"), dtype="float32"), func=f"{lib}:Triple32",
                         func_type="aot", out_shape=lambda x: x, out_dtype="float32",
                         name="tri")
    exe = cast.bind(sg.cpu(), {"x": x64})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [3., 6.])


# -- Python CustomOp / CustomOpProp ---------------------------------------------------------------

class Scale(sg.operator.CustomOp):
    def __init__(self, mode: str) -> None:
        self.mode = mode

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        value = x[:1] if self.mode == "fwd_shape" else 2 * x
        self.assign(out_data[0], req[0], value)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        dy = out_grad[0].asnumpy()
        if self.mode == "bwd_returns":
            return [2 * dy]
        if self.mode == "bwd_shape":
            self.assign(in_grad[0], req[0], (2 * dy).sum(axis=0))
            return None
        self.assign(in_grad[0], req[0], 2 * dy)
        return None


@sg.operator.register("safety_scale")
class ScaleProp(sg.operator.CustomOpProp):
    def __init__(self, mode: str = "ok", shape: str = "") -> None:
        super().__init__()
        self.mode, self.shape = mode, shape

    def infer_shape(self, in_shape):
        if self.shape == "frac":
            return in_shape, [[in_shape[0][0], 3.5]], []
        if self.shape == "neg":
            return in_shape, [[-1, in_shape[0][1]]], []
        return in_shape, [in_shape[0]], []

    def infer_type(self, in_type):
        if self.shape == "baddtype":
            return in_type, ["no-such-dtype"], []
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Scale(self.mode)


def _scale(**kw) -> sg.sym.Symbol:
    return sg.sym.Custom(sg.sym.var("x"), op_type="safety_scale", name="sc", **kw)


@pytest.mark.parametrize("shape, err, msg", [
    ("frac", sg.ShapeError, r"dimension 3.5 is not an integer"),
    ("neg", sg.ShapeError, r"dimension -1 is negative"),
    ("baddtype", sg.DTypeError, r"ScaleProp.infer_type returned .*non-dtype")])
def test_prop_inference_results_are_checked(shape: str, err: type, msg: str) -> None:
    sym = _scale(shape=shape)
    with pytest.raises(err, match=rf"sc \(Custom\): Custom op_type 'safety_scale': .*{msg}"):
        sym.simple_bind(sg.cpu(), x=(2, 4))


def _run(mode: str) -> sg.Executor:
    x = np.arange(6.).reshape(2, 3)
    exe = _scale(mode=mode).bind(sg.cpu(), {"x": sg.nd.array(x)},
                                 args_grad={"x": sg.nd.full((2, 3), 9.0)})
    exe.forward(is_train=True)
    exe.backward()
    return exe


def test_forward_writing_the_wrong_shape() -> None:
    with pytest.raises(sg.BindError, match=r"Custom op_type 'safety_scale': Scale.forward: "
                                           r"assign: value of shape \(1, 3\) .* \(2, 3\)"):
        _run("fwd_shape")


def test_backward_writing_the_wrong_shape_leaves_gradients() -> None:
    x = np.arange(6.).reshape(2, 3)
    exe = _scale(mode="bwd_shape").bind(sg.cpu(), {"x": sg.nd.array(x)},
                                        args_grad={"x": sg.nd.full((2, 3), 9.0)})
    exe.forward(is_train=True)
    with pytest.raises(sg.BindError, match=r"Custom op_type 'safety_scale': Scale.backward: "
                                           r"assign: value of shape \(3,\)"):
        exe.backward()
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.full((2, 3), 9.0))


def test_backward_returning_instead_of_assigning() -> None:
    with pytest.raises(sg.ExecutionError, match=r"Custom op_type 'safety_scale': Scale.backward "
                                                r"returned list .*self.assign"):
        _run("bwd_returns")


def test_well_behaved_op_still_works() -> None:
    exe = _run("ok")
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), 2 * np.arange(6.).reshape(2, 3))
