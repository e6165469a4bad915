"""Errors point at what the user did: an unnamed node by its op and the user's line, a dtype
conflict by the odd input (int32 data, not the float32 weight), a Module backward without a
batch, a Cast to a dtype no kernel has; ``SYMGRAPH_DEBUG=0`` is the integer 0 (off)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DTypeError, ExecutionError

S = sg.sym


def test_unnamed_node_errors_name_the_op_and_the_line() -> None:
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(AttrError) as err:
        S.FullyConnected(S.var("x"), 4, False, True, 7, name=None)
    assert str(err.value).startswith(
        f"FullyConnected (unnamed, at test_error_names.py:{line}): 4 positional attributes")
    with pytest.raises(AttrError, match=r"^Custom \(unnamed, at test_error_names.py:\d+\): "
                                        r"func_type='aot' needs out_shape"):
        S.Custom(S.var("x"), func="lib.so:F")


def test_int32_data_is_reported_against_data() -> None:
    fc = S.FullyConnected(S.var("data"), num_hidden=2, name="fc")
    args = {"data": sg.nd.ones((3, 4), dtype="int32"), "fc_weight": sg.nd.ones((2, 4)),
            "fc_bias": sg.nd.ones(2)}
    with pytest.raises(DTypeError, match=r"^fc \(FullyConnected\): data has dtype int32, but "
                                         r"weight, bias have float32; cast data"):
        fc.bind(sg.cpu(), args)
    net = sg.gluon.nn.Dense(2, in_units=4)
    net.initialize()
    net.hybridize()
    with pytest.raises(DTypeError, match=r"data has dtype int32, but weight, bias have float32"):
        net(sg.nd.ones((3, 4), dtype="int32"))


def test_module_backward_before_forward_is_refused() -> None:
    mod = sg.mod.Module(S.FullyConnected(S.var("data"), num_hidden=2, name="fc"),
                        label_names=None)
    mod.bind(data_shapes=[("data", (3, 4))])
    mod.init_params()
    with pytest.raises(ExecutionError, match=r"backward: no forward\(\) has run since bind"):
        mod.backward([sg.nd.ones((3, 2))])
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    mod.forward(sg.io.DataBatch([sg.nd.array(x)]), is_train=True)
    mod.backward([sg.nd.ones((3, 2))])
    grad = mod._exec.grad_dict["fc_weight"].asnumpy()
    np.testing.assert_allclose(grad, np.ones((2, 3)) @ x)  # d(sum)/dW = dout^T x


@pytest.mark.parametrize("dtype", [object, "object", "str", "U4", "datetime64[s]"])
def test_cast_to_a_non_numeric_dtype_is_refused(dtype) -> None:
    x = sg.nd.array([1.0, 2.0])
    with pytest.raises(AttrError, match="Cast.*expected a (numeric )?dtype"):
        S.Cast(S.var("x"), dtype=dtype)
    with pytest.raises(AttrError, match="Cast.*expected a (numeric )?dtype"):
        x.astype(dtype)
    np.testing.assert_array_equal(x.asnumpy(), [1.0, 2.0])


def test_symgraph_debug_zero_is_off(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture) -> None:
    def compile_once() -> str:
        x = S.var("x")
        (S.relu(x) * 2 + 1).bind(sg.cpu(), {"x": sg.nd.ones(3)}).forward()
        return capsys.readouterr().out + capsys.readouterr().err
    monkeypatch.setenv("SYMGRAPH_DEBUG", "0")
    assert compile_once() == ""  # the string "0" is not a true value
    monkeypatch.setenv("SYMGRAPH_DEBUG", "1")
    assert "relu" in compile_once()
