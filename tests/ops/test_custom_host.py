"""A Python op that only launches ``mx.rtc`` kernels is refused when bound on the CPU, at bind,
by the name of the class the user wrote, with the ways out (seed 003's reorg layer in ``fit``);
ops with a host path bind and run; a kernel launched where the check cannot see it still fails
at run time under the user's class name."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.interop.models.reorg_lenet import NDArrayReorg as ShippedReorg
from symgraph.compiler.ops.custom_host import gpu_only_methods

REORG_SOURCE = "y[0] = x[0];"  # the body does not matter: nothing may be compiled on the CPU


class NDArrayReorg(mx.operator.NDArrayOp):
    """Seed 003's layer as written there: rtc kernels, no host path."""

    def __init__(self, stride: int = 2) -> None:
        super(NDArrayReorg, self).__init__(True)
        self.stride = stride
        self.fwd_kernel = None
        self.bwd_kernel = None

    def list_arguments(self) -> list:
        return ['data']

    def list_outputs(self) -> list:
        return ['output']

    def infer_shape(self, in_shape: list) -> tuple:
        n, c, h, w = in_shape[0]
        return [in_shape[0]], [[n, c * 4, h // self.stride, w // self.stride]]

    def forward(self, in_data: list, out_data: list) -> None:
        x, y = in_data[0], out_data[0]
        if self.fwd_kernel is None:
            self.fwd_kernel = mx.rtc('reorg', [('x', x)], [('y', y)], REORG_SOURCE)
        self.fwd_kernel.push([x], [y], (x.shape[0] * x.shape[1], 1, 1), (1, 1, 1))

    def backward(self, out_grad: list, in_data: list, out_data: list, in_grad: list) -> None:
        y, dx = out_grad[0], in_grad[0]
        if self.bwd_kernel is None:
            self.bwd_kernel = mx.rtc('reorg_grad', [('y', y)], [('dx', dx)], REORG_SOURCE)
        self.bwd_kernel.push([y], [dx], (y.shape[0] * y.shape[1] // 4, 1, 1), (1, 1, 1))


def _launch(x, y) -> None:
    mx.rtc('copy', [('x', x)], [('y', y)], REORG_SOURCE).push([x], [y])


class HiddenKernel(NDArrayReorg):
    """Launches its forward kernel through a helper the bind check does not read; its
    backward has the shipped layer's host path."""

    def forward(self, in_data: list, out_data: list) -> None:
        _launch(in_data[0], out_data[0])

    backward = ShippedReorg.backward


def _net(layer: mx.operator.NDArrayOp) -> mx.sym.Symbol:
    data = mx.sym.var('data')
    reg = layer(data=data, name='reorg')
    fc = mx.sym.FullyConnected(data=mx.sym.flatten(data=reg), num_hidden=3)
    return mx.sym.SoftmaxOutput(data=fc, name='softmax')


def _fit_on_cpu(layer: mx.operator.NDArrayOp) -> mx.mod.Module:
    rng = np.random.default_rng(0)
    it = mx.io.NDArrayIter(rng.normal(size=(8, 1, 4, 4)).astype(np.float32),
                           rng.integers(0, 3, 8).astype(np.float32), 4)
    mod = mx.mod.Module(symbol=_net(layer), context=mx.cpu())
    mod.fit(it, optimizer='sgd', optimizer_params={'learning_rate': 0.1}, num_epoch=1)
    return mod


def test_seed_003_layer_is_refused_at_bind_by_its_class() -> None:
    layer = NDArrayReorg(stride=2)
    with pytest.raises(mx.BindError) as err:
        _fit_on_cpu(layer)
    msg = str(err.value)
    assert msg.startswith("reorg (Custom NDArrayReorg): NDArrayReorg.forward runs CUDA kernels")
    for advice in ("context=mx.gpu()", "numpy path", "symgraph train reorg_lenet --ctx cpu"):
        assert advice in msg, advice
    assert "_ndarrayop" not in msg and "Runner" not in msg
    assert layer.fwd_kernel is None  # refused before any batch ran


def test_gpu_only_methods_reads_the_code() -> None:
    assert gpu_only_methods(NDArrayReorg) == ["forward", "backward"]
    assert gpu_only_methods(ShippedReorg) == []  # looks at gpu_context, has a numpy path
    assert gpu_only_methods(HiddenKernel) == []  # forward's launch is in a helper


def test_declared_gpu_only_overrides_the_reading() -> None:
    declared_cpu = type("DeclaredCpu", (NDArrayReorg,), {"gpu_only": False})
    declared_gpu = type("DeclaredGpu", (ShippedReorg,), {"gpu_only": True})
    assert gpu_only_methods(declared_cpu) == []
    with pytest.raises(mx.BindError, match=r"reorg \(Custom DeclaredGpu\)"):
        _fit_on_cpu(declared_gpu(stride=2))


def test_layer_with_a_host_path_trains_on_cpu() -> None:
    """The shipped reorg layer binds on the CPU; its output is space-to-depth (channel
    4c + 2dy + dx holds pixel (2i + dy, 2j + dx)), and fit runs."""
    x = np.random.default_rng(1).normal(size=(2, 1, 4, 4))
    sym = ShippedReorg(stride=2)(data=mx.sym.var('data'), name='reorg')
    exe = sym.bind(mx.cpu(), {'data': mx.nd.array(x)})
    y = exe.forward()[0].asnumpy()
    for c, (dy, dx) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        np.testing.assert_allclose(y[:, c], x[:, 0, dy::2, dx::2], rtol=1e-6)
    arg, _ = _fit_on_cpu(ShippedReorg(stride=2)).get_params()
    assert all(np.isfinite(v.asnumpy()).all() for v in arg.values())


def test_unseen_kernel_fails_at_run_time_under_the_users_class() -> None:
    with pytest.raises(mx.BindError) as err:
        _fit_on_cpu(HiddenKernel(stride=2))
    msg = str(err.value)
    assert msg.startswith("Custom HiddenKernel: HiddenKernel.forward: sg.rtc: array on cpu(0)")
    assert "numpy path" in msg and "_NDArrayOpRunner" not in msg
