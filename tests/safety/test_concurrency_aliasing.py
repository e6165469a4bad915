"""One executor used from two threads at once raises ExecutionError; an array
bound in two roles is a BindError; out-of-range class labels behave as in MXNet 1.9.1."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import symgraph as sg

ENTERED = threading.Event()
RELEASE = threading.Event()


class Gate(sg.operator.CustomOp):
    """y = x + 1, but the forward waits for the test to open the gate."""

    def forward(self, is_train, req, in_data, out_data, aux):
        ENTERED.set()
        assert RELEASE.wait(20)
        self.assign(out_data[0], req[0], in_data[0].asnumpy() + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@sg.operator.register("safety_gate")
class GateProp(sg.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Gate()


def _run_blocked(call, result: dict) -> threading.Thread:
    ENTERED.clear()
    RELEASE.clear()

    def body() -> None:
        try:
            result["value"] = call()
        except Exception as exc:  # reported to the main thread
            result["error"] = exc
    t = threading.Thread(target=body)
    t.start()
    assert ENTERED.wait(20)
    return t


@pytest.mark.parametrize("second", ["forward", "backward", "train_step"])
def test_concurrent_use_of_one_executor_raises(second: str) -> None:
    sym = sg.sym.Custom(sg.sym.var("x"), op_type="safety_gate", name="gate")
    exe = sym.simple_bind(sg.cpu(), x=(3,))
    result: dict = {}
    t = _run_blocked(lambda: exe.forward(is_train=True, x=np.array([1., 2., 3.]))[0].asnumpy(),
                     result)
    try:
        with pytest.raises(sg.ExecutionError, match=rf"Executor.{second}: this executor is "
                                                    rf"running in another thread"):
            getattr(exe, second)()
        np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy(), [1., 2., 3.])
    finally:
        RELEASE.set()
        t.join(20)
    assert "error" not in result, result.get("error")
    np.testing.assert_array_equal(result["value"], [2., 3., 4.])
    exe.backward()  # usable again once the other thread is done
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [1., 1., 1.])


def test_one_executor_per_thread_is_correct() -> None:
    sym = sg.sym.FullyConnected(sg.sym.var("x"), num_hidden=4, name="fc")
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(4, 5)), rng.normal(size=(4,))
    wrong: list = []

    def worker(seed: int) -> None:
        exe = sym.simple_bind(sg.cpu(), grad_req="null", x=(2, 5))
        exe.copy_params_from({"fc_weight": w, "fc_bias": b})
        r = np.random.default_rng(seed)
        for _ in range(30):
            x = r.normal(size=(2, 5))
            got = exe.forward(x=x)[0].asnumpy()
            if not np.allclose(got, x @ w.T + b, rtol=1e-4, atol=1e-4):
                wrong.append(seed)
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def _fc_sym() -> sg.sym.Symbol:
    return sg.sym.FullyConnected(sg.sym.var("x"), sg.sym.var("w"), num_hidden=3, no_bias=True,
                                 name="fc")


def test_same_array_as_two_arguments() -> None:
    """A run only reads arguments, so one array may be bound as two (MXNet allows it); each
    gets its own gradient: d(a * b)/da = b and d(a * b)/db = a."""
    sym = sg.sym.var("a") * sg.sym.var("b")
    a = sg.nd.array([1., 2.])
    grads = {"a": sg.nd.zeros(2), "b": sg.nd.zeros(2)}
    exe = sym.bind(sg.cpu(), {"a": a, "b": a}, args_grad=grads)
    np.testing.assert_array_equal(exe.forward(is_train=True)[0].asnumpy(), [1., 4.])
    exe.backward(sg.nd.array([1., 10.]))
    np.testing.assert_array_equal(grads["a"].asnumpy(), [1., 20.])
    np.testing.assert_array_equal(grads["b"].asnumpy(), [1., 20.])
    np.testing.assert_array_equal(a.asnumpy(), [1., 2.])



def test_argument_as_its_own_gradient() -> None:
    x = sg.nd.array(np.ones((2, 3)))
    w = sg.nd.array(np.ones((3, 3)))
    with pytest.raises(sg.BindError, match="gradient w and argument w are the same array"):
        _fc_sym().bind(sg.cpu(), {"x": x, "w": w}, args_grad={"w": w})
    with pytest.raises(sg.BindError, match="gradient x and argument x"):
        _fc_sym().bind(sg.cpu(), {"x": x, "w": w}, args_grad={"x": x})
    np.testing.assert_array_equal(w.asnumpy(), np.ones((3, 3)))


def test_one_gradient_for_two_arguments() -> None:
    sym = sg.sym.var("a") * sg.sym.var("b")
    g = sg.nd.zeros(2)
    with pytest.raises(sg.BindError, match="gradient b and gradient a are the same array"):
        sym.bind(sg.cpu(), {"a": sg.nd.ones(2), "b": sg.nd.ones(2)},
                 args_grad={"a": g, "b": g})


def test_aux_state_shared_with_an_argument() -> None:
    sym = sg.sym.BatchNorm(sg.sym.var("x"), name="bn")
    x = sg.nd.ones((2, 3))
    gamma = sg.nd.ones(3)
    args = {"x": x, "bn_gamma": gamma, "bn_beta": sg.nd.zeros(3)}
    with pytest.raises(sg.BindError, match="bn_moving_mean and argument bn_gamma|"
                                           "argument bn_gamma and aux state bn_moving_mean"):
        sym.bind(sg.cpu(), args, aux_states={"bn_moving_mean": gamma,
                                             "bn_moving_var": sg.nd.ones(3)})


def test_unused_gradient_array_may_be_shared() -> None:
    """grad_req 'null' binds no gradient, so nothing is written through it."""
    sym = sg.sym.var("a") + sg.sym.var("b")
    a, b = sg.nd.array([1., 2.]), sg.nd.array([3., 4.])
    exe = sym.bind(sg.cpu(), {"a": a, "b": b}, args_grad={"a": a, "b": sg.nd.zeros(2)},
                   grad_req={"a": "null", "b": "write"})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [4., 6.])


# -- out-of-range class labels: MXNet 1.9.1's behaviour (checked with mxnet 1.9.1) ------------

X = np.array([[1., 2., 3.], [1., 1., 1.], [0., 2., 1.]])
LABELS = np.array([5., -1., 1.])


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _grad(sym: sg.sym.Symbol, x: np.ndarray, label: np.ndarray) -> tuple:
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x, dtype=np.float64),
                              "l": sg.nd.array(label, dtype=np.float64)},
                   args_grad={"x": sg.nd.zeros(x.shape, dtype=np.float64)},
                   grad_req={"x": "write", "l": "null"})
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    return out, exe.grad_dict["x"].asnumpy()


def test_softmax_output_gradient_ignores_out_of_range_labels() -> None:
    """MXNet: a label outside [0, classes) is no class, so its row's gradient is the
    probability (not clipped to the first or last class)."""
    out, grad = _grad(sg.sym.SoftmaxOutput(sg.sym.var("x"), sg.sym.var("l")), X, LABELS)
    p = _softmax(X)
    want = p.copy()
    want[2, 1] -= 1.0
    np.testing.assert_allclose(out, p, rtol=1e-12)
    np.testing.assert_allclose(grad, want, rtol=1e-12)


def test_softmax_cross_entropy_clips_forward_ignores_in_backward() -> None:
    out, grad = _grad(sg.sym.softmax_cross_entropy(sg.sym.var("x"), sg.sym.var("l")), X, LABELS)
    logp = np.log(_softmax(X))
    np.testing.assert_allclose(out, [-(logp[0, 2] + logp[1, 0] + logp[2, 1])], rtol=1e-12)
    want = _softmax(X)
    want[2, 1] -= 1.0
    np.testing.assert_allclose(grad, want, rtol=1e-12)


def test_index_ops_follow_mxnet() -> None:
    """one_hot: zero rows; take: clip (default) or wrap; Embedding: clip."""
    lab = sg.nd.array(LABELS)
    exe = sg.sym.one_hot(sg.sym.var("l"), depth=3).bind(sg.cpu(), {"l": lab})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(),
                                  [[0, 0, 0], [0, 0, 0], [0, 1, 0]])
    for mode, rows in (("clip", [2, 0, 1]), ("wrap", [2, 2, 1])):
        exe = sg.sym.take(sg.sym.var("x"), sg.sym.var("l"), mode=mode).bind(
            sg.cpu(), {"x": sg.nd.array(X), "l": lab})
        np.testing.assert_array_equal(exe.forward()[0].asnumpy(), X[rows])
    emb = sg.sym.Embedding(sg.sym.var("l"), sg.sym.var("w"), input_dim=3, output_dim=3)
    exe = emb.bind(sg.cpu(), {"l": lab, "w": sg.nd.array(X)})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), X[[2, 0, 1]])


def test_cuda_softmax_output_kernel_agrees(tmp_path) -> None:
    """The CUDA kernel of SoftmaxOutput's gradient, compiled as host C++ (tests/cuda/host_run),
    gives the same no-class rows as the numpy reference for labels outside [0, classes)."""
    from symgraph.core.registry import RunCtx, get_op
    from tests.cuda.host_run import host_compiler, lowered, run_on_host, runnable
    if host_compiler() is None:
        pytest.skip("g++ not on PATH")
    sym = sg.sym.SoftmaxOutput(sg.sym.var("x"), sg.sym.var("l"), name="so")
    exe = sym.simple_bind(sg.cpu(), x=(4, 3), l=(4,))
    sch = exe._train.schedule
    step = next(st for st in sch.steps if st.node.op == "_backward_SoftmaxOutput")
    assert runnable(lowered(step, sch.shapes, sch.dtypes)[0])
    prob = _softmax(np.vstack([X, [[3., 0., 1.]]])).astype(np.float32)
    xs = [prob, np.array([5., -1., 1., 3.], np.float32)]
    got = run_on_host(step, sch.shapes, sch.dtypes, xs, tmp_path)[0]
    want = get_op(step.node.op).compute(step.node.attrs, xs, RunCtx(is_train=True))[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    expected = prob.copy()
    expected[2, 1] -= 1.0
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
