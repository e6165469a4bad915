"""Semantics MXNet 1.9.1's test_operator.py relies on, against independent references (numpy
float64, float64 central differences): linalg gradients of 1x1 matrices, slicing partial
shapes, the shape a broadcast ``+`` gives an unshaped operand (and an explicit broadcast_add
that learns its operand elsewhere first), empty max/min, 0-d index_array, Module's grad_req
forms, errors of Python custom ops, NumpyOp, and check_numeric_gradient's float32 step."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.test_utils import check_numeric_gradient

S = sg.sym


@pytest.mark.parametrize("op, shape", [("potrf", (3, 1, 1)), ("gelqf", (2, 1, 4))])
def test_linalg_gradient_of_one_row_matrices(op: str, shape: tuple) -> None:
    """potrf of 1x1 and gelqf of 1xN matrices: their gradients use the strict triangle of a
    1x1 matrix, which is empty."""
    x = np.random.default_rng(1).uniform(1.0, 3.0, size=shape)
    sym = getattr(S.linalg, op)(S.var("a"))
    if op == "gelqf":
        sym = S.Group([sym[0] * 2.0, sym[1] * 3.0])
    check_numeric_gradient(sym, {"a": x}, rtol=1e-5, atol=1e-7)
    if op == "potrf":  # d sqrt(a) / da, in closed form
        exe = sym.bind(sg.cpu(), {"a": sg.nd.array(x, dtype="float64")},
                       args_grad={"a": sg.nd.zeros(shape, dtype="float64")})
        exe.forward(is_train=True)
        exe.backward(sg.nd.ones(shape, dtype="float64"))
        np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), 0.5 / np.sqrt(x), rtol=1e-12)


@pytest.mark.parametrize("begin, end, step, want", [
    ((None, 3), (None, 10), (), (0, 7)), ((2, 3), (None, 10), (None, 3), (0, 3))])
def test_slice_keeps_unknown_dimensions_unknown(begin, end, step, want) -> None:
    data = S.var("data", shape=(0, 20))
    out = S.slice(data, begin=begin, end=end, step=step)
    assert out.infer_shape_partial()[1] == [want]
    with sg.np_shape(True):  # numpy shapes spell the unknown dimension -1
        data = S.var("data", shape=(-1, 20))
        out = S.slice(data, begin=begin, end=end, step=step)
        assert out.infer_shape_partial()[1] == [(-1,) + want[1:]]
    assert S.slice_axis(S.var("d", shape=(10, 0)), axis=0, begin=0,
                        end=5).infer_shape_partial()[1] == [(5, 0)]


def test_plus_gives_an_unshaped_operand_the_other_shape() -> None:
    """MXNet's ``a + b`` is same-shape, so it infers ``b``; symgraph's ``+`` broadcasts and
    falls back to that reading only where nothing else decides ``b``."""
    scores = S.batch_dot(S.var("q"), S.var("k"), transpose_b=True)
    out = S.softmax(scores + S.var("mask"))
    args, outs, _ = out.infer_shape(q=(2, 3, 4), k=(2, 5, 4))
    assert dict(zip(out.list_arguments(), args))["mask"] == (2, 3, 5)
    assert outs == [(2, 3, 5)]
    # MXNet's test_backward_infer: an explicit broadcast_add whose operand another rule
    # decides keeps that shape (the guess comes after every rule has had its say)
    w, shift = S.var("weight"), S.var("wshift", shape=(1,))
    wt = S._internal._identity_with_attr_like_rhs(S.broadcast_add(w, shift), w)
    net = S.FullyConnected(data=S.var("data"), weight=wt, num_hidden=11, no_bias=True)
    args, _, _ = net.infer_shape(data=(7, 100))
    assert dict(zip(net.list_arguments(), args))["weight"] == (11, 100)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_over_an_empty_axis_is_a_shape_error(op: str) -> None:
    x = sg.nd.zeros((5, 0))
    with pytest.raises(sg.ShapeError, match=rf"{op} over an empty axis of \(5, 0\)"):
        getattr(x, op)().asnumpy()
    assert getattr(sg.nd, op)(x, axis=0).shape == (0,)  # over the non-empty axis: fine


def test_index_array_of_0d_data_has_no_coordinates() -> None:
    got = S.contrib.index_array(S.var("d")).bind(sg.cpu(), {"d": sg.nd.ones(())}).forward()[0]
    assert got.shape == (0,) and got.dtype == np.int64
    got = sg.nd.contrib.index_array(sg.nd.ones((2, 3)), axes=(1,)).asnumpy()
    np.testing.assert_array_equal(got, np.indices((2, 3))[1][..., None])


def test_module_grad_req_dict_and_list() -> None:
    sym = S.FullyConnected(S.var("data"), num_hidden=3, name="fc")
    mod = sg.mod.Module(sym, label_names=None)
    mod.bind([("data", (2, 4))], inputs_need_grad=True, grad_req={"data": "add",
                                                                  "fc_bias": "null"})
    mod.init_params()
    x = np.ones((2, 4), np.float32)
    for _ in range(2):  # 'add' accumulates the data's gradient: twice W's column sums
        mod.forward(sg.io.DataBatch([sg.nd.array(x)]), is_train=True)
        mod.backward([sg.nd.ones((2, 3))])
    w = mod.get_params()[0]["fc_weight"].asnumpy()
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(),
                               np.tile(2 * w.sum(axis=0), (2, 1)), rtol=1e-5)
    with pytest.raises(sg.BindError, match="grad_req has 1 entries for the 3 arguments"):
        sg.mod.Module(sym, label_names=None).bind([("data", (2, 4))], grad_req=["write"])


class _Boom(sg.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        assert False, "user assertion"


@sg.operator.register("suite_boom")
class _BoomProp(sg.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Boom()


def test_python_error_in_custom_op_is_an_execution_error() -> None:
    with pytest.raises(sg.ExecutionError, match="forward raised AssertionError: user "
                                                "assertion") as info:
        sg.nd.Custom(sg.nd.ones(3), op_type="suite_boom").asnumpy()
    assert isinstance(info.value.__cause__, AssertionError)


def test_numpy_op_sees_numpy_arrays() -> None:
    class Square(sg.operator.NumpyOp):
        def forward(self, in_data, out_data):
            assert isinstance(in_data[0], np.ndarray)
            out_data[0][:] = in_data[0] ** 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * in_data[0] * out_grad[0]
    check_numeric_gradient(Square().get_symbol(S.var("x")), {"x": np.array([0.5, -1.5, 2.0])})


def test_numeric_gradient_float32_step_is_mxnets() -> None:
    """float32 central differences with step 2^-9 (MXNet's default) resolve softmin's
    gradient; step 1e-4 drowned it in rounding (the reason test_softmin failed)."""
    x = np.random.default_rng(3).uniform(-2, 2, size=(3, 4, 5)).astype(np.float32)
    check_numeric_gradient(S.softmin(S.var("x"), axis=1), {"x": x}, rtol=1e-3, atol=1e-3,
                           dtype=np.float32)


@pytest.mark.parametrize("shapes, dim", [([(0, 8, 3), (3, 8, 3), (0, 8, 3)], 0),
                                         ([(0, 3, 2), (0, 4, 2)], 1)])
def test_concat_of_zero_size_arrays_is_numpys(shapes: list, dim: int) -> None:
    """A bound zero-size array's 0 is an empty axis (only a partial shape's is unknown)."""
    xs = [np.random.default_rng(k).normal(size=s) for k, s in enumerate(shapes)]
    got = sg.nd.Concat(*[sg.nd.array(x) for x in xs], dim=dim)
    np.testing.assert_allclose(got.asnumpy(), np.concatenate(xs, axis=dim), rtol=1e-6)
    assert S.Concat(S.var("a", shape=(0, 3)), S.var("b", shape=(2, 3)),
                    dim=0).infer_shape_partial()[1] == [(0, 3)]  # unknown + 2: unknown


def test_bilinear_upsampling_unrolls_to_deconvolution_nearest_stays() -> None:
    """The CUDA backend's unroll pass turns bilinear UpSampling into its Deconvolution (same
    values as the op's numpy reference) and leaves nearest UpSampling, which has a kernel."""
    from tests.cuda.graphs import unrolled
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(1, 2, 3, 3)), rng.normal(size=(2, 1, 4, 4))
    sym = S.UpSampling(S.var("x"), S.var("w"), scale=2, sample_type="bilinear", num_filter=2,
                       num_args=2)
    flat = unrolled(sym, {"x": x.shape, "w": w.shape}, "float64")
    assert [n.op for n in flat.graph().nodes() if not n.is_variable] == ["Deconvolution"]
    args = {"x": sg.nd.array(x, dtype="float64"), "w": sg.nd.array(w, dtype="float64")}
    np.testing.assert_allclose(flat.bind(sg.cpu(), args).forward()[0].asnumpy(),
                               sym.bind(sg.cpu(), args).forward()[0].asnumpy(), rtol=1e-12)
    near = S.UpSampling(S.var("x"), scale=2, sample_type="nearest")
    assert "UpSampling" in [n.op for n in unrolled(near, {"x": x.shape}, "float64")
                            .graph().nodes()]


def test_arange_infer_range_takes_its_length_from_the_consumer() -> None:
    """MXNet's ``infer_range``: no stop, the length is what the consumer needs (symbolic)."""
    x = np.random.default_rng(5).normal(size=5)
    sym = S.arange(start=2, step=-0.5, infer_range=True, repeat=2, dtype=np.float64) \
        + S.var("x")
    got = sym.bind(sg.cpu(), {"x": sg.nd.array(x, dtype="float64")}).forward()[0].asnumpy()
    np.testing.assert_allclose(got, np.repeat(np.arange(2, -1, -0.5), 2)[:5] + x, rtol=1e-12)
    with pytest.raises(sg.AttrError, match="step=0: must not be 0"):
        sg.nd.arange(1, 3, 0)
