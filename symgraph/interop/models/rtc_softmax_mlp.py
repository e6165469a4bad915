"""The seed's (MXNet ``example/numpy-ops/ndarray_softmax.py``) softmax loss layer written as an
``NDArrayOp``, on an MLP: the GPU runs the seed's two ``mx.rtc`` kernels unchanged through
``sg.rtc.Rtc``; the CPU computes the same op with numpy.

``python -m symgraph.interop.models.rtc_softmax_mlp --ctx cpu|gpu --epochs N --data-dir D``.
The forward kernel uses one thread per sample in a single block, so the batch must be at most
1024 (the seed uses 100).
"""
from __future__ import annotations

import sys
from typing import Any, Optional

import numpy as np

import symgraph as sg

SOFTMAX_KERNEL = """
int i = threadIdx.x + blockIdx.x*blockDim.x;
float max_x = x[i*x_dims[1]];
for (int j = 1; j < x_dims[1]; ++j) {
    if (max_x < x[i*x_dims[1]+j]) {
        max_x = x[i*x_dims[1]+j];
    }
}
float sum = 0.0f;
for (int j = 0; j < x_dims[1]; ++j) {
    sum += expf(x[i*x_dims[1]+j]-max_x);
}
for (int j = 0; j < x_dims[1]; ++j) {
    y[i*x_dims[1]+j] = expf(x[i*x_dims[1]+j]-max_x)/sum;
}
"""

SOFTMAX_GRAD_KERNEL = """
int i = blockIdx.x;
int j = threadIdx.x;
int k = static_cast<int>(l[i]);
if (j == k) {
    dx[i*dx_dims[1]+j] = y[i*dx_dims[1]+j] - 1.0f;
} else {
    dx[i*dx_dims[1]+j] = y[i*dx_dims[1]+j];
}
"""


class NDArraySoftmax(sg.operator.NDArrayOp):
    """Softmax with a cross-entropy gradient (a loss layer: no top gradient needed)."""

    def __init__(self) -> None:
        super().__init__(False)
        self.fwd_kernel: Optional[Any] = None
        self.bwd_kernel: Optional[Any] = None

    def list_arguments(self) -> list[str]:
        return ["data", "label"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def infer_shape(self, in_shape: list) -> tuple:
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        return [data_shape, label_shape], [data_shape]

    def forward(self, in_data: list, out_data: list) -> None:
        x, y = in_data[0], out_data[0]
        if sg.rtc.gpu_context(x) is None:
            v = x.asnumpy()
            e = np.exp(v - v.max(axis=1, keepdims=True))
            y[:] = e / e.sum(axis=1, keepdims=True)
            return
        if self.fwd_kernel is None:
            self.fwd_kernel = sg.rtc.Rtc("softmax", [("x", x)], [("y", y)], SOFTMAX_KERNEL)
        self.fwd_kernel.push([x], [y], (1, 1, 1), (x.shape[0], 1, 1))

    def backward(self, out_grad: list, in_data: list, out_data: list, in_grad: list) -> None:
        lab, y, dx = in_data[1], out_data[0], in_grad[0]
        if sg.rtc.gpu_context(y) is None:
            g = y.asnumpy().copy()
            g[np.arange(g.shape[0]), lab.asnumpy().astype(np.int64)] -= 1.0
            dx[:] = g
            return
        if self.bwd_kernel is None:
            self.bwd_kernel = sg.rtc.Rtc("softmax_grad", [("y", y), ("l", lab)], [("dx", dx)],
                                         SOFTMAX_GRAD_KERNEL)
        self.bwd_kernel.push([y, lab], [dx], (y.shape[0], 1, 1), (y.shape[1], 1, 1))


def mlp(num_hidden: tuple[int, ...] = (128, 64)) -> sg.sym.Symbol:
    """data -> (fc-relu)* -> fc10 -> the rtc softmax loss."""
    h = sg.sym.flatten(sg.sym.var("data"))
    for i, n in enumerate(num_hidden):
        h = sg.sym.Activation(sg.sym.FullyConnected(h, num_hidden=n, name=f"fc{i + 1}"),
                              act_type="relu", name=f"relu{i + 1}")
    fc = sg.sym.FullyConnected(h, num_hidden=10, name=f"fc{len(num_hidden) + 1}")
    return NDArraySoftmax()(data=fc, name="softmax")


RECIPE = {"batch_size": 100, "optimizer": "sgd", "learning_rate": 0.1, "momentum": 0.0,
          "initializer": "xavier"}
build = mlp

if __name__ == "__main__":
    from symgraph.interop.models.runner import main
    sys.exit(main("rtc_softmax_mlp", sys.argv[1:]))
