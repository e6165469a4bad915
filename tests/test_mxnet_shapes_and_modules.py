"""MXNet 1.x details: sizes left to inference
(``sym.ones(shape=(-1, 3))``) and decided backward through transpose, ... References are
plain numpy; expected shapes are MXNet 1.9.1's (its test_transpose_infer_shape_* tests)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

S = sg.sym


@pytest.mark.parametrize("first, second", [((-1, -1), None), ((3, -1), (2, -1))])
def test_ones_minus_one_decided_backward_through_transpose(first, second) -> None:
    """(2, 3) + transpose(ones(shape=first)): the -1s are decided from the sum's other side."""
    left = S.ones(shape=(2, 3)) if second is None else S.ones(shape=second)
    out = left + S.transpose(S.ones(shape=first)) * 2.0
    exe = out.bind(sg.cpu(), args={})
    got = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(got, np.full((2, 3), 3.0))


def test_ones_minus_one_infer_shape_partial_leaves_it_unknown() -> None:
    t = S.transpose(S.ones(shape=(-1, 4)))
    _, outs, _ = t.infer_shape_partial()
    assert outs == [(4, 0)]
    with pytest.raises(sg.ShapeError):
        (S.var("x") + t).simple_bind(sg.cpu(), x=(3, 3))  # 4 cannot meet 3


def test_transpose_infers_its_input_from_its_output() -> None:
    x = S.var("x")
    y = S.elemwise_add(S.transpose(x, axes=(1, 2, 0)), S.var("z"))
    args, outs, _ = y.infer_shape(z=(3, 4, 2))
    assert args[0] == (2, 3, 4) and outs == [(3, 4, 2)]


def test_zero_size_arrays_stay_exact_in_a_bind() -> None:
    """A 0 in a bound array or a creation op's shape is an empty axis, not an unknown one."""
    y = S.transpose(S.var("x")) + S.zeros(shape=(3, 0))
    exe = y.bind(sg.cpu(), args={"x": sg.nd.zeros((0, 3))})
    assert exe.forward()[0].shape == (3, 0)


def test_pooling_same_refuses_pad_and_data_mxnet_refuses() -> None:
    x = sg.nd.array(np.zeros((1, 1, 10)))
    with pytest.raises(sg.AttrError, match="pad"):
        sg.nd.Pooling(x, kernel=(2,), stride=(2,), pad=(2,), pooling_convention="same")
    with pytest.raises(sg.ShapeError, match="3-D data"):
        sg.nd.Pooling(sg.nd.zeros((1, 1, 4, 4)), kernel=(2, 2), stride=(2, 2),
                      pooling_convention="same")
    assert sg.nd.Pooling(x, kernel=(2,), stride=(3,), pooling_convention="same").shape == \
        (1, 1, 4)  # ceil(10 / 3)


def test_prelu_gamma_that_does_not_fit_is_a_shape_error() -> None:
    y = S.LeakyReLU(S.var("x"), gamma=S.var("g"), act_type="prelu", name="act")
    with pytest.raises(sg.ShapeError, match=r"act \(LeakyReLU\).*gamma \(4, 3\) does not fit"):
        y.infer_shape(x=(3, 4, 5), g=(4, 3))


def test_data_parallel_module_splits_on_the_layout_batch_axis_and_keeps_dtype() -> None:
    """Two CPU contexts, data 'TNC': each device gets 4 of the 8 samples along axis 1; merged
    outputs and input gradients come back in float16 along that axis (MXNet's
    test_module_layout / test_module_dtype)."""
    sym = S.Activation(S.var("data"), act_type="relu", __layout__="TNC")
    mod = sg.mod.Module(sym, ("data",), None, context=[sg.cpu(0), sg.cpu(1)])
    mod.bind(data_shapes=[sg.io.DataDesc("data", (3, 8, 7), np.float16, layout="TNC")],
             inputs_need_grad=True)
    mod.init_params()
    x = np.random.default_rng(0).normal(size=(3, 8, 7)).astype(np.float16)
    mod.forward(sg.io.DataBatch(data=[sg.nd.array(x, dtype=np.float16)], label=None))
    dy = np.arange(3 * 8 * 7, dtype=np.float16).reshape(3, 8, 7)
    mod.backward([sg.nd.array(dy, dtype=np.float16)])
    out = mod.get_outputs()[0]
    assert out.dtype == np.float16 and out.shape == (3, 8, 7)
    np.testing.assert_array_equal(out.asnumpy(), np.maximum(x, 0))
    parts = mod.get_outputs(merge_multi_context=False)[0]
    assert [p.shape for p in parts] == [(3, 4, 7), (3, 4, 7)]
    np.testing.assert_array_equal(parts[1].asnumpy(), np.maximum(x, 0)[:, 4:])
    grad = mod.get_input_grads()[0]
    assert grad.dtype == np.float16
    np.testing.assert_array_equal(grad.asnumpy(), np.where(x > 0, dy, 0))


def test_monitor_names_inputs_as_mxnet() -> None:
    """MXNet's monitor calls the inputs of ops it registers without input names input<i>
    (Activation, SoftmaxActivation) and of variadic ones arg<i> (concat, UpSampling);
    the names are MXNet 1.9.1's (its test_op_all_names_monitor)."""
    data = S.var("data", shape=(2, 3, 4, 4))
    cases = [(S.Activation(data, act_type="relu", name="act"),
              ["data", "act_input0", "act_output"]),
             (S.UpSampling(data, scale=2, sample_type="nearest", name="up"),
              ["data", "up_arg0", "up_output"]),
             (S.concat(data, data, dim=0, name="cc"),
              ["data", "cc_arg0", "data", "cc_arg1", "cc_output"]),
             (S.softmax(data, name="sm"), ["data", "sm_data", "sm_output"])]
    for sym, want in cases:
        names: list[str] = []
        exe = sym.simple_bind(sg.cpu(), grad_req="null")
        exe.set_monitor_callback(lambda n, a: names.append(n.decode()), monitor_all=True)
        exe.forward()
        assert names == want


def _bucket_sym(key: int):
    """Data of width ``key``; one parameter ``a`` of shape (1,) shared by every bucket."""
    data = S.var("data")
    a = S.var("a", shape=(1,), init=sg.init.One())
    return S.make_loss(S.sum(S.broadcast_mul(data, a))), ("data",), None


def test_bucketing_module_shares_parameters_gradients_and_optimizer(monkeypatch) -> None:
    from symgraph.runtime import executor
    builds = []
    build = executor.build_stage
    monkeypatch.setattr(executor, "build_stage", lambda graph, wrt, train, ctx:
                        builds.append(train) or build(graph, wrt, train, ctx))
    mod = sg.mod.BucketingModule(sym_gen=_bucket_sym, default_bucket_key=10)
    mod.bind(data_shapes=[("data", (2, 10))], grad_req="add")
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "rescale_grad": 1.0})
    rng = np.random.default_rng(0)
    d10, d5 = rng.normal(size=(2, 10)), rng.normal(size=(2, 5))
    for d, key in ((d10, 10), (d5, 5)):
        mod.forward_backward(sg.io.DataBatch(
            [sg.nd.array(d)], None, bucket_key=key,
            provide_data=[sg.io.DataDesc("data", d.shape)]))
    assert mod._curr_module.data_shapes[0].shape == (2, 5)
    assert builds == [True, True]  # one training program per bucket (none thrown away)
    grad = mod._curr_module._exec_group.execs[0].grad_dict["a"].asnumpy()
    np.testing.assert_allclose(grad, [d10.sum() + d5.sum()], rtol=1e-5)  # 'add' accumulates
    mod.update()  # plain SGD on the shared weight, seen by the default bucket too
    want = 1.0 - 0.5 * (d10.sum() + d5.sum())
    np.testing.assert_allclose(mod._buckets[10]._exec.arg_dict["a"].asnumpy(), [want],
                               rtol=1e-5)
    np.testing.assert_allclose(mod.get_params()[0]["a"].asnumpy(), [want], rtol=1e-5)


def test_bucketing_monitor_reaches_buckets_bound_later() -> None:
    mod = sg.mod.BucketingModule(sym_gen=_bucket_sym, default_bucket_key=10)
    mod.bind(data_shapes=[("data", (2, 10))])
    mod.init_params()
    mon = sg.monitor.Monitor(1, pattern=".*")
    mod.install_monitor(mon)
    mon.tic()
    mod.forward(sg.io.DataBatch([sg.nd.ones((2, 5))], None, bucket_key=5,
                                provide_data=[sg.io.DataDesc("data", (2, 5))]), is_train=False)
    assert mod._curr_module._exec in mon.exes
    assert any(name.startswith("sum") for _, name, _ in mon.toc())  # the new bucket's node


GOLDEN = "tests/data/mxnet/rnn-golden.npz"  # made by tests/data/mxnet/make_rnn_golden.py


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_rnn_matches_mxnet_191_forward_and_gradients(mode: str) -> None:
    """2 bidirectional layers, state outputs, float64: outputs and the gradients of every
    input under fixed head gradients, against MXNet 1.9.1's values."""
    from pathlib import Path
    gold = np.load(Path(__file__).parent.parent / GOLDEN, allow_pickle=False)
    names = [k for k in ("x", "p", "h0", "c0") if f"{mode}:in:{k}" in gold]
    sym = S.RNN(*[S.var(n) for n in names], state_size=4, num_layers=2, bidirectional=True,
                mode=mode, state_outputs=True)
    args = {n: sg.nd.array(gold[f"{mode}:in:{n}"], dtype=np.float64) for n in names}
    grads = {n: sg.nd.zeros(a.shape, dtype=np.float64) for n, a in args.items()}
    exe = sym.bind(sg.cpu(), args, args_grad=grads)
    outs = exe.forward(is_train=True)
    exe.backward([sg.nd.array(gold[f"{mode}:head:{i}"], dtype=np.float64)
                  for i in range(len(outs))])
    tol = 1e-6 if mode == "rnn_relu" else 1e-10  # MXNet's relu RNN rounds through float32
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), gold[f"{mode}:out:{i}"], rtol=tol, atol=tol)
    for n in names:
        np.testing.assert_allclose(grads[n].asnumpy(), gold[f"{mode}:grad:{n}"], rtol=tol,
                                   atol=tol)


def test_rnn_refuses_what_it_does_not_implement_and_infers_parameter_size() -> None:
    x = S.var("x")
    with pytest.raises(sg.AttrError, match=r"projection_size=2.*not implemented"):
        S.RNN(x, state_size=4, num_layers=1, mode="lstm", projection_size=2
              ).infer_shape(x=(3, 2, 5))
    rnn = S.RNN(x, state_size=4, num_layers=2, mode="gru", name="rnn")
    args, outs, _ = rnn.infer_shape(x=(3, 2, 5))
    # layer 0: 3 gates x 4 x (5 + 4) + 2 x 12 biases; layer 1: 3 x 4 x (4 + 4) + 24
    assert dict(zip(rnn.list_arguments(), args))["rnn_parameters"] == (132 + 120,)
    assert outs == [(3, 2, 4)]


def test_gen_atomic_symbol_keeps_op_and_attributes() -> None:
    s = S.RNN(S.var("d"), S.var("p"), S.var("h"), S.var("c"), state_size=10, num_layers=2,
              bidirectional=True, state_outputs=True, mode="lstm", name="r")
    atomic = s._gen_atomic_symbol()
    assert atomic.list_outputs() == ["r_output", "r_state", "r_state_cell"]
    assert atomic.list_arguments() == ["r_data", "r_parameters", "r_state", "r_state_cell"]
    assert atomic.attr("mode") == "lstm" and atomic.attr("state_size") == "10"


def _total_mb(exe) -> int:
    import re
    return int(re.search(r"Total (\d+) MB allocated", exe.debug_str()).group(1))


def test_no_gradient_path_is_filled_not_computed() -> None:
    """stop_gradient: the data gradient is 0 and takes no arena memory (MXNet's
    test_zero_prop: same total as grad_req='null'); 'add' leaves the buffer as it was."""
    data = S.var("data")
    y = data
    for _ in range(3):
        y = y * y
    shape = (4, 64, 64)  # 64 KiB of float32 per array: 1 MiB per 16 arrays
    big = y.simple_bind(sg.cpu(), data=(16,) + shape)
    null = y.simple_bind(sg.cpu(), data=(16,) + shape, grad_req="null")
    stopped = S.stop_gradient(y).simple_bind(sg.cpu(), data=(16,) + shape)
    assert _total_mb(big) > _total_mb(stopped) == _total_mb(null)
    x = np.random.default_rng(0).normal(size=(16,) + shape).astype(np.float32)
    stopped.grad_dict["data"][:] = 5.0
    stopped.forward(is_train=True, data=x)
    stopped.backward()
    assert not stopped.grad_dict["data"].asnumpy().any()
    np.testing.assert_allclose(stopped.outputs[0].asnumpy(), x ** 8, rtol=1e-5)
    add = S.stop_gradient(y).simple_bind(sg.cpu(), data=(2, 3), grad_req="add")
    add.grad_dict["data"][:] = 5.0
    add.forward(is_train=True, data=np.ones((2, 3)))
    add.backward()
    np.testing.assert_array_equal(add.grad_dict["data"].asnumpy(), np.full((2, 3), 5.0))
