"""Behaviour of the issue-3 ops beyond the generic registry cases: bad input, BatchNorm's
auxiliary states, Dropout's masks and seeds, Cast's dtypes, MXNet attribute defaults."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.registry import get_op

S = sg.sym


def _bind(sym, **shapes):
    return sym.simple_bind(sg.cpu(), **shapes)


@pytest.mark.parametrize("make, shape, pattern", [
    (lambda d: S.Convolution(d, kernel=(5, 5), num_filter=2, name="conv"), (1, 1, 3, 3),
     r"conv \(Convolution\): kernel \(5, 5\).*larger than the padded input \(3, 3\)"),
    (lambda d: S.Convolution(d, kernel=(3, 3), dilate=(2, 2), pad=(0, 0), num_filter=2,
                             name="conv"), (1, 1, 3, 3),
     r"conv \(Convolution\): kernel \(3, 3\) \(dilated \(5, 5\)\) is larger"),
    (lambda d: S.Pooling(d, kernel=(4, 4), name="pool"), (1, 1, 3, 3),
     r"pool \(Pooling\): kernel \(4, 4\) is larger than the padded input"),
    (lambda d: S.Convolution(d, kernel=(3, 3), num_filter=4, num_group=2, name="conv"),
     (1, 3, 5, 5), r"conv \(Convolution\): data channels 3 .* divisible by num_group 2"),
    (lambda d: S.Convolution(d, kernel=(3, 3), num_filter=3, num_group=2, name="conv"),
     (1, 4, 5, 5), r"num_filter 3 must be divisible by num_group 2"),
    (lambda d: S.Convolution(d, kernel=(3, 3), num_filter=3, name="conv"), (1, 4, 5),
     r"conv \(Convolution\): data \(1, 4, 5\) must be 4-D"),
    (lambda d: S.Deconvolution(d, kernel=(3, 3), stride=(2, 2), adj=(2, 0), num_filter=2,
                               name="dc"), (1, 2, 3, 3),
     r"dc \(Deconvolution\): adj \(2, 0\) must be smaller than stride"),
    (lambda d: S.Deconvolution(d, kernel=(3, 3), target_shape=(9, 9), num_filter=2,
                               name="dc"), (1, 2, 3, 3),
     r"dc \(Deconvolution\): target_shape \(9, 9\) is larger"),
    (lambda d: S.LinearRegressionOutput(d, name="lro"), (4, 3),
     None),
])
def test_bad_window_shapes_name_the_node(make, shape, pattern) -> None:
    sym = make(S.var("data"))
    if pattern is None:
        with pytest.raises(sg.ShapeError, match=r"lro \(LinearRegressionOutput\): label"):
            _bind(sym, data=shape, lro_label=(4, 2))
        return
    with pytest.raises(sg.ShapeError, match=pattern):
        _bind(sym, data=shape)


def test_wrong_label_shapes() -> None:
    with pytest.raises(sg.ShapeError, match=r"xent \(softmax_cross_entropy\): label has shape "
                                            r"\(3,\), expected \(4,\)"):
        _bind(S.softmax_cross_entropy(S.var("d"), S.var("l"), name="xent"), d=(4, 5), l=(3,))


def test_unknown_pool_type_names_the_node() -> None:
    with pytest.raises(sg.AttrError, match=r"pool1 \(Pooling\): attribute pool_type='lp2'"):
        S.Pooling(S.var("data"), kernel=(2, 2), pool_type="lp2", name="pool1")


def test_pooling_needs_a_kernel() -> None:
    with pytest.raises(sg.ShapeError, match=r"p \(Pooling\): kernel is required"):
        _bind(S.Pooling(S.var("data"), name="p"), data=(1, 1, 4, 4))


def test_errors_leave_user_arrays_untouched() -> None:
    data = sg.nd.array(np.ones((1, 1, 3, 3), np.float32))
    weight = sg.nd.array(np.ones((2, 1, 5, 5), np.float32))
    sym = S.Convolution(S.var("data"), S.var("w"), kernel=(5, 5), num_filter=2, no_bias=True)
    with pytest.raises(sg.ShapeError):
        sym.bind(sg.cpu(), {"data": data, "w": weight})
    assert np.all(data.asnumpy() == 1) and np.all(weight.asnumpy() == 1)


def test_batchnorm_updates_moving_stats_in_training_only() -> None:
    rng = np.random.default_rng(0)
    sym = S.BatchNorm(S.var("x"), momentum=0.8, name="bn")
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert sym.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    exe = _bind(sym, x=(6, 3, 2, 2))
    x = rng.normal(size=(6, 3, 2, 2)).astype(np.float32) * 2 + 1
    mm0, mv0 = rng.normal(size=3).astype(np.float32), rng.uniform(1, 2, 3).astype(np.float32)
    exe.aux_dict["bn_moving_mean"][:] = mm0
    exe.aux_dict["bn_moving_var"][:] = mv0
    exe.forward(is_train=False, x=x)
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_mean"].asnumpy(), mm0)
    exe.forward(is_train=True, x=x)
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(),
                               0.8 * mm0 + 0.2 * mean, rtol=1e-5)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_var"].asnumpy(),
                               0.8 * mv0 + 0.2 * var, rtol=1e-5)


def test_batchnorm_output_mean_var() -> None:
    sym = S.BatchNorm(S.var("x"), output_mean_var=True, name="bn")
    assert sym.list_outputs() == ["bn_output", "bn_mean", "bn_var"]
    x = np.random.default_rng(1).normal(size=(4, 2, 3)).astype(np.float32)
    out = _bind(sym, x=x.shape).forward(is_train=True, x=x)
    np.testing.assert_allclose(out[1].asnumpy(), x.mean(axis=(0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[2].asnumpy(), x.var(axis=(0, 2)), rtol=1e-5)


def test_dropout_masks_scale_and_reproduce() -> None:
    sym = S.Dropout(S.var("x"), p=0.25)
    exe = _bind(sym, x=(200, 50))
    x = np.ones((200, 50), np.float32)
    np.testing.assert_array_equal(exe.forward(is_train=False, x=x)[0].asnumpy(), x)
    sg.random.seed(7)
    a = exe.forward(is_train=True)[0].asnumpy()
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((a == 0).mean() - 0.25) < 0.02
    exe.backward(sg.nd.array(np.full(x.shape, 3.0, np.float32)))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 3.0 * a)
    sg.random.seed(7)
    np.testing.assert_array_equal(exe.forward(is_train=True)[0].asnumpy(), a)
    assert not np.array_equal(exe.forward(is_train=True)[0].asnumpy(), a)


def test_dropout_always_and_axes() -> None:
    sym = S.Dropout(S.var("x"), p=0.5, mode="always", axes=(1,))
    out = _bind(sym, x=(8, 6)).forward(is_train=False, x=np.ones((8, 6), np.float32))[0]
    rows = out.asnumpy()
    assert np.all(rows == rows[:, :1])  # one mask value per row, shared along axis 1
    assert 0 < (rows[:, 0] == 0).sum() < 8


def test_cast_dtypes() -> None:
    sym = S.Cast(S.var("x"), dtype="float16")
    _, out_types, _ = sym.infer_type(x=np.float32)
    assert out_types == [np.dtype("float16")]
    exe = sym.simple_bind(sg.cpu(), x=(2, 3))
    out = exe.forward(is_train=True, x=np.full((2, 3), 1.5, np.float32))[0]
    assert out.dtype == np.float16 and np.all(out.asnumpy() == 1.5)
    exe.backward(sg.nd.array(np.full((2, 3), 2.0), dtype=np.float16))
    assert exe.grad_dict["x"].dtype == np.float32
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), 2.0)


def test_index_inputs_keep_their_own_dtype() -> None:
    sym = S.Embedding(S.var("i", dtype="int32"), input_dim=4, output_dim=2, name="emb")
    arg_types, out_types, _ = sym.infer_type()
    assert arg_types == [np.dtype("int32"), np.dtype("float32")]
    assert out_types == [np.dtype("float32")]


def test_train_dependent_ops_are_marked() -> None:
    for name in ("BatchNorm", "Dropout"):
        assert get_op(name).train_dependent
    assert get_op("BatchNorm").mutates == ((3, 3), (4, 4))
    assert not get_op("Convolution").train_dependent


def test_mxnet_defaults() -> None:
    conv = S.Convolution(S.var("d"), kernel=(3, 3), num_filter=2, name="c")
    assert conv.list_arguments() == ["d", "c_weight", "c_bias"]
    assert conv.attr("num_group") == "1" and conv.attr("no_bias") == "False"
    bn = S.BatchNorm(S.var("d"), name="bn")
    assert (bn.attr("eps"), bn.attr("momentum"), bn.attr("fix_gamma")) == ("0.001", "0.9", "True")
    pool = S.Pooling(S.var("d"), kernel=(2, 2), name="p")
    assert (pool.attr("pool_type"), pool.attr("pooling_convention")) == ("max", "valid")
    assert S.LeakyReLU(S.var("d")).attr("slope") == "0.25"
    assert S.Deconvolution(S.var("d"), kernel=(2, 2), num_filter=2,
                           name="dc").list_arguments() == ["d", "dc_weight"]
    assert S.split(S.var("d"), num_outputs=3).list_outputs()[2].endswith("output2")


def test_argmax_is_not_differentiable() -> None:
    from symgraph.core.registry import NOT_DIFFERENTIABLE
    for name in ("argmax", "argmin", "one_hot"):
        assert get_op(name).gradient == NOT_DIFFERENTIABLE


def _narrow_bn_run(ctx, dtype, axis: int) -> tuple:
    """One training forward/backward of BatchNorm on ``dtype`` data (gamma, beta and the
    statistics float32, as inferred): output, gradients, moving statistics, all as float64."""
    sym = S.BatchNorm(S.var("x"), fix_gamma=False, momentum=0.7, axis=axis, name="bn")
    exe = sym.simple_bind(ctx, type_dict={"x": dtype}, x=(6, 3, 4, 5))
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(6, 3, 4, 5)) * 3 + 2).astype(dtype)
    dy = rng.normal(size=x.shape).astype(dtype)
    exe.arg_dict["x"][:] = x
    exe.arg_dict["bn_gamma"][:] = rng.uniform(0.5, 2, exe.arg_dict["bn_gamma"].shape)
    exe.arg_dict["bn_beta"][:] = rng.normal(size=exe.arg_dict["bn_beta"].shape)
    exe.aux_dict["bn_moving_mean"][:] = 0.0
    exe.aux_dict["bn_moving_var"][:] = 1.0
    y = exe.forward(is_train=True)[0]
    exe.backward([sg.nd.array(dy, ctx=ctx, dtype=dtype)])
    f64 = lambda a: a.asnumpy().astype(np.float64)  # noqa: E731
    return (x.astype(np.float64), dy.astype(np.float64), {k: f64(v) for k, v in
            exe.arg_dict.items()}, f64(y), {k: f64(v) for k, v in exe.grad_dict.items()},
            {k: (f64(v), v.dtype) for k, v in exe.aux_dict.items()})


@pytest.mark.parametrize("axis", [1, 3])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batchnorm_on_narrow_data_keeps_float32_statistics(dtype: str, axis: int,
                                                           ctx=None) -> None:
    """MXNet's rule: float16 (here also bfloat16) data, float32 gamma/beta/statistics; the
    statistics are those of the data computed in float (against float64 of the same values)."""
    from symgraph.core.dtypes import as_dtype
    dt = as_dtype(dtype)
    x, dy, args, y, grads, aux = _narrow_bn_run(ctx or sg.cpu(), dt, axis)
    assert args["bn_gamma"].dtype == np.float64 and grads["x"].shape == x.shape
    assert {t for _, t in aux.values()} == {np.dtype(np.float32)}
    red = tuple(i for i in range(4) if i != axis)
    shape = [1] * 4
    shape[axis] = x.shape[axis]
    mean, var = x.mean(axis=red), x.var(axis=red)
    np.testing.assert_allclose(aux["bn_moving_mean"][0], 0.3 * mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(aux["bn_moving_var"][0], 0.7 + 0.3 * var, rtol=1e-5)
    g, b = args["bn_gamma"].reshape(shape), args["bn_beta"].reshape(shape)
    xhat = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
    tol = 1e-2 if dtype == "float16" else 4e-2  # one rounding of the output to dtype
    np.testing.assert_allclose(y, xhat * g + b, rtol=tol, atol=tol * 3)
    dgamma, dbeta = (dy * xhat).sum(axis=red), dy.sum(axis=red)
    np.testing.assert_allclose(grads["bn_gamma"], dgamma, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(grads["bn_beta"], dbeta, rtol=1e-3, atol=1e-3)
    m = x.size // x.shape[axis]
    dx = (dy - dbeta.reshape(shape) / m - xhat * dgamma.reshape(shape) / m) * g / \
        np.sqrt(var.reshape(shape) + 1e-3)
    np.testing.assert_allclose(grads["x"], dx, rtol=tol, atol=tol * np.abs(dx).max())


@pytest.mark.gpu
@pytest.mark.parametrize("axis", [1, 3])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batchnorm_on_narrow_data_on_the_gpu(dtype: str, axis: int) -> None:
    test_batchnorm_on_narrow_data_keeps_float32_statistics(dtype, axis, sg.gpu(0))
