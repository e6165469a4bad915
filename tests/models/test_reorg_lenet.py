"""The seed's reorg layer (an NDArrayOp) and the reorg LeNet."""
from __future__ import annotations

import time

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.models.reorg_lenet import NDArrayReorg, reorg_lenet
from symgraph.interop.test_utils import assert_almost_equal, check_numeric_gradient


def _reference_space_to_depth(x: np.ndarray) -> np.ndarray:
    """Written from the definition, element by element."""
    n, c, h, w = x.shape
    y = np.zeros((n, 4 * c, h // 2, w // 2))
    for b in range(n):
        for ch in range(c):
            for i in range(h // 2):
                for j in range(w // 2):
                    for dy in range(2):
                        for dx in range(2):
                            y[b, 4 * ch + 2 * dy + dx, i, j] = x[b, ch, 2 * i + dy, 2 * j + dx]
    return y


def _seed_backward(dy: np.ndarray, dx_shape: tuple) -> np.ndarray:
    """The seed's reorg_grad kernel ported statement by statement (one 'thread' per (n, c))."""
    n, c4, yh, yw = dy.shape
    planes = n * c4 // 4
    big_n = yh * yw
    old_block = dx_shape[2] * dx_shape[3]
    y = dy.reshape(-1)
    dx = np.zeros(int(np.prod(dx_shape)))
    for i in range(planes):
        for k in range(4):
            for j in range(yw):
                for t in range(yh):
                    dx[i * old_block + 2 * j * yw + t * 2 + k] = y[i * old_block + k * big_n
                                                                   + j * yw + t]
    return dx.reshape(dx_shape)


class SeedReorg(NDArrayReorg):
    """The reorg layer with the seed's backward indexing."""

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = _seed_backward(out_grad[0].asnumpy(), in_grad[0].shape)


def test_forward_equals_numpy_space_to_depth(rng) -> None:
    x = rng.normal(size=(2, 3, 6, 8))
    sym = NDArrayReorg(stride=2)(data=sg.sym.var("data"), name="reorg")
    assert sym.infer_shape(data=x.shape)[1] == [(2, 12, 3, 4)]
    out = sym.bind(sg.cpu(), {"data": sg.nd.array(x, dtype=np.float64)}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), _reference_space_to_depth(x))


def test_gradient_passes_numeric_check(rng) -> None:
    sym = NDArrayReorg(stride=2)(data=sg.sym.var("data"), name="reorg")
    check_numeric_gradient(sym, {"data": rng.normal(size=(2, 2, 4, 4))})
    # inside a graph, differentiated through tanh on both sides
    net = sg.sym.tanh(NDArrayReorg(2)(data=sg.sym.tanh(sg.sym.var("data")))) * 3
    check_numeric_gradient(net, {"data": rng.normal(size=(1, 2, 4, 6))})


def test_seed_backward_is_rejected(rng) -> None:
    sym = SeedReorg(stride=2)(data=sg.sym.var("data"), name="reorg")
    with pytest.raises(AssertionError, match="symbolic gradient of data"):
        check_numeric_gradient(sym, {"data": rng.normal(size=(2, 2, 4, 4))})


def test_seed_backward_port_agrees_on_the_top_row(rng) -> None:
    """The seed's kernel is right for the first row of blocks (j = 0): the port is faithful
    and wrong only where the issue says."""
    dy = rng.normal(size=(1, 4, 3, 3))
    ours = np.zeros((1, 1, 6, 6))
    for k in range(4):
        ours[0, 0, k // 2::2, k % 2::2] = dy[0, k]
    seed = _seed_backward(dy, (1, 1, 6, 6))
    np.testing.assert_array_equal(seed[0, 0, 0, :2], ours[0, 0, 0, :2])
    assert not np.array_equal(seed, ours)


def test_bad_shape_is_reported() -> None:
    sym = NDArrayReorg(stride=2)(data=sg.sym.var("data"), name="reorg")
    with pytest.raises(sg.ShapeError, match="divide by the stride"):
        sym.infer_shape(data=(1, 1, 5, 4))


def test_json_round_trip_in_process(rng) -> None:
    sym = NDArrayReorg(stride=2)(data=sg.sym.var("data"), name="reorg")
    again = sg.sym.load_json(sym.tojson())
    x = rng.normal(size=(1, 1, 4, 4)).astype(np.float32)
    a = sym.bind(sg.cpu(), {"data": sg.nd.array(x)}).forward()[0]
    b = again.bind(sg.cpu(), {"data": sg.nd.array(x)}).forward()[0]
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


needs_conv = pytest.mark.skipif(not hasattr(sg.sym, "Convolution"),
                                reason="needs sg.sym.Convolution (ops branch)")


@needs_conv
def test_reorg_lenet_shapes() -> None:
    args, outs, _ = reorg_lenet().infer_shape(data=(100, 1, 28, 28))
    assert outs == [(100, 10)]


@needs_conv
@pytest.mark.slow
def test_reorg_lenet_one_epoch_cpu(mnist_dir) -> None:
    from symgraph.interop.models import reorg_lenet as model
    from symgraph.interop.models.runner import parser, train
    start = time.perf_counter()
    args = parser("reorg_lenet", model.RECIPE).parse_args(["--data-dir", str(mnist_dir)])
    acc = train("reorg_lenet", args, model.RECIPE, reorg_lenet())["accuracy"]
    print(f"reorg LeNet 1 epoch CPU: accuracy {acc:.4f}, {time.perf_counter() - start:.0f} s")
    assert acc >= 0.97


@pytest.mark.gpu
def test_reorg_gpu_matches_cpu(rng) -> None:
    x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
    dy = rng.normal(size=(2, 12, 4, 4)).astype(np.float32)
    results = []
    for ctx in (sg.cpu(), sg.gpu()):
        sym = NDArrayReorg(stride=2)(data=sg.sym.var("data"), name="reorg")
        exe = sym.bind(ctx, {"data": sg.nd.array(x, ctx)},
                       args_grad={"data": sg.nd.zeros(x.shape, ctx)})
        out = exe.forward(is_train=True)[0].asnumpy()
        exe.backward(sg.nd.array(dy, ctx))
        results.append((out, exe.grad_dict["data"].asnumpy()))
    assert_almost_equal(results[1][0], results[0][0])
    assert_almost_equal(results[1][1], results[0][1])
