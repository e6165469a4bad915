"""Convolution with layout NHWC (and NWC): shapes, values against a direct float64 loop,
gradients against central differences, and the errors of unsupported layouts."""
import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import ShapeError

S = sg.sym


def direct_nhwc(x: np.ndarray, w: np.ndarray, b, stride: int, pad: int, dilate: int,
                groups: int) -> np.ndarray:
    """Cross-correlation of NHWC ``x`` with OHWI ``w``, one output element at a time."""
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh = (h + 2 * pad - dilate * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilate * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, oh, ow, o))
    per = o // groups
    for f in range(o):
        g = f // per
        for i in range(oh):
            for j in range(ow):
                rows = i * stride + dilate * np.arange(kh)
                cols = j * stride + dilate * np.arange(kw)
                patch = xp[:, rows][:, :, cols][..., g * cg:(g + 1) * cg]
                y[:, i, j, f] = np.einsum("nabc,abc->n", patch, w[f])
    return y + (0 if b is None else b)


CASES = [dict(stride=1, pad=1, dilate=1, groups=1, bias=True),
         dict(stride=2, pad=1, dilate=1, groups=2, bias=False),
         dict(stride=1, pad=2, dilate=2, groups=1, bias=True)]


def _bind(case: dict, x_shape: tuple, filters: int = 4):
    kw = dict(kernel=(3, 3), num_filter=filters, num_group=case["groups"],
              stride=(case["stride"],) * 2, pad=(case["pad"],) * 2,
              dilate=(case["dilate"],) * 2, no_bias=not case["bias"], layout="NHWC", name="c")
    sym = S.Convolution(S.var("data"), **kw)
    names = sym.list_arguments()
    exe = sym.simple_bind(sg.cpu(), type_dict={n: np.float64 for n in names}, data=x_shape)
    rng = np.random.default_rng(3)
    for n in names:
        exe.arg_dict[n][:] = rng.normal(size=exe.arg_dict[n].shape)
    return sym, exe


@pytest.mark.parametrize("case", CASES)
def test_nhwc_convolution_matches_a_direct_loop(case: dict) -> None:
    sym, exe = _bind(case, (2, 7, 6, 4))
    arg_shapes, out_shapes, _ = sym.infer_shape(data=(2, 7, 6, 4))
    assert arg_shapes[1] == (4, 3, 3, 4 // case["groups"])  # OHWI
    args = {k: v.asnumpy() for k, v in exe.arg_dict.items()}
    want = direct_nhwc(args["data"], args["c_weight"], args.get("c_bias"), case["stride"],
                       case["pad"], case["dilate"], case["groups"])
    got = exe.forward(is_train=True)[0].asnumpy()
    assert got.shape == want.shape == tuple(out_shapes[0])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", CASES[:2])
def test_nhwc_convolution_gradients_are_central_differences(case: dict) -> None:
    """d sum(y * r) / d(each input) by the executor and by central differences."""
    sym, exe = _bind(case, (1, 5, 5, 4), filters=2)
    rng = np.random.default_rng(5)
    y = exe.forward(is_train=True)[0].asnumpy()
    r = rng.normal(size=y.shape)
    exe.backward([sg.nd.array(r, dtype=np.float64)])
    args = {k: v.asnumpy().copy() for k, v in exe.arg_dict.items()}

    def loss(values: dict) -> float:
        b = values.get("c_bias")
        return float((direct_nhwc(values["data"], values["c_weight"], b, case["stride"],
                                  case["pad"], case["dilate"], case["groups"]) * r).sum())
    for name, value in args.items():
        grad = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            for sign in (1, -1):
                moved = dict(args, **{name: value.copy()})
                moved[name][idx] += sign * 1e-6
                grad[idx] += sign * loss(moved) / 2e-6
        np.testing.assert_allclose(exe.grad_dict[name].asnumpy(), grad, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_one_d_channel_last_layout_is_nwc() -> None:
    sym = S.Convolution(S.var("data"), kernel=(3,), num_filter=5, layout="NWC", name="c")
    args, outs, _ = sym.infer_shape(data=(2, 9, 3))
    assert args[1] == (5, 3, 3) and outs[0] == (2, 7, 5)


@pytest.mark.parametrize("make", [
    lambda: S.Convolution(S.var("data"), kernel=(3, 3), num_filter=2, layout="NWHC"),
    lambda: S.Convolution(S.var("data"), kernel=(3, 3), num_filter=2, layout="NWC"),
    lambda: S.Deconvolution(S.var("data"), kernel=(3, 3), num_filter=2, layout="NHWC"),
])
def test_unsupported_layouts_are_shape_errors(make) -> None:
    with pytest.raises(ShapeError, match="layout"):
        make().infer_shape(data=(1, 5, 5, 2))


@pytest.mark.gpu
@pytest.mark.parametrize("cudnn", ["auto", "0"])
@pytest.mark.parametrize("case", CASES)
def test_nhwc_convolution_on_the_gpu(case: dict, cudnn: str, monkeypatch) -> None:
    """cuDNN reads channels-last operands in place; without it (SYMGRAPH_CUDNN=0) the
    fallback transposes them around the NCHW kernels. Forward and gradients in float32 against
    the float64 CPU run."""
    monkeypatch.setenv("SYMGRAPH_CUDNN", cudnn)
    sym, cpu = _bind(case, (2, 7, 6, 4))
    names = sym.list_arguments()
    gpu = sym.simple_bind(sg.gpu(0), data=(2, 7, 6, 4))
    for n in names:
        gpu.arg_dict[n][:] = cpu.arg_dict[n].asnumpy().astype(np.float32)
    r = np.random.default_rng(1).normal(size=cpu.forward(is_train=True)[0].shape)
    cpu.backward([sg.nd.array(r, dtype=np.float64)])
    np.testing.assert_allclose(gpu.forward(is_train=True)[0].asnumpy(),
                               cpu.outputs[0].asnumpy(), rtol=1e-4, atol=1e-4)
    gpu.backward([sg.nd.array(r.astype(np.float32), ctx=sg.gpu(0))])
    for n in names:
        np.testing.assert_allclose(gpu.grad_dict[n].asnumpy(), cpu.grad_dict[n].asnumpy(),
                                   rtol=1e-4, atol=1e-4, err_msg=n)
