"""The seed's LeNet with a YOLO-v2 "reorg" layer written as an ``NDArrayOp``.

conv5x5x20-tanh-reorg-conv5x5x20-tanh-conv5x5x50-tanh-flatten-fc500-tanh-fc10, SoftmaxOutput,
SGD lr 0.1, batch 100.
``python -m symgraph.interop.models.reorg_lenet --ctx cpu|gpu --epochs N --data-dir D``.

The reorg layer is space-to-depth with stride s (the seed uses 2):
``y[n, s*s*c + s*dy + dx, i, j] = x[n, c, s*i + dy, s*j + dx]``. On the GPU it runs the seed's
forward kernel unchanged through ``sg.rtc``; the seed's backward kernel writes the lower row of
each 2x2 block to the wrong place (``dx[.. + 2*j*yw + 2*t + k]`` drops the ``dy`` row offset),
so symgraph ships the correct adjoint (``depth_to_space``) and ``BWD_KERNEL`` below.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

import numpy as np

import symgraph as sg

FWD_KERNEL = """
            int i = threadIdx.x + blockIdx.x*blockDim.x ;
            int yw=y_dims[3];
            int yh = y_dims[2];
            int N = yw*yh;
            int xw=x_dims[3];
            int xh = x_dims[2];
            int len_block = x_dims[2]*x_dims[3];
            for(int j =0; j<xh; j+=2)
                for(int k=0; k<xw; k+=2)
                {   int t=j/2;
                    y[i*len_block+t*yw+k/2] = x[i*len_block+j*xw+k];
                    y[i*len_block+t*yw+k/2+N] = x[i*len_block + j*xw+k+1];
                    y[i*len_block+t*yw+k/2+2*N] = x[i*len_block +(j+1)*xw+k];
                    y[i*len_block+t*yw+k/2+3*N] = x[i*len_block +(j+1)*xw+k+1];
                }
            """
"""The seed's forward kernel body, verbatim (one thread per (n, c) plane)."""

BWD_KERNEL = """
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int yh = y_dims[2];
    int yw = y_dims[3];
    int N = yw * yh;
    int xw = dx_dims[3];
    int old_block = dx_dims[2] * dx_dims[3];
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < yh; ++j)
            for (int t = 0; t < yw; ++t)
                dx[i*old_block + (2*j + k/2)*xw + 2*t + k%2] = y[i*old_block + k*N + j*yw + t];
"""
"""The corrected backward: block row k/2, column k%2 of output position (j, t)."""


def space_to_depth(x: np.ndarray, s: int) -> np.ndarray:
    n, c, h, w = x.shape
    return (x.reshape(n, c, h // s, s, w // s, s).transpose(0, 1, 3, 5, 2, 4)
            .reshape(n, c * s * s, h // s, w // s))


def depth_to_space(y: np.ndarray, s: int) -> np.ndarray:
    """The adjoint (and inverse) of :func:`space_to_depth`."""
    n, cs, h, w = y.shape
    c = cs // (s * s)
    return y.reshape(n, c, s, s, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c, h * s, w * s)


class NDArrayReorg(sg.operator.NDArrayOp):
    """The seed's reorg layer: rtc kernels on the GPU, numpy on the CPU."""

    def __init__(self, stride: int = 2) -> None:
        super().__init__(True)
        self.stride = stride
        self.fwd_kernel: Optional[Any] = None
        self.bwd_kernel: Optional[Any] = None

    def list_arguments(self) -> list[str]:
        return ["data"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def infer_shape(self, in_shape: list) -> tuple:
        n, c, h, w = in_shape[0]
        if h % self.stride or w % self.stride:
            raise sg.ShapeError(f"reorg: height and width {h}x{w} must divide by the stride "
                                f"{self.stride}")
        s = self.stride
        return [in_shape[0]], [[n, c * s * s, h // s, w // s]]

    def forward(self, in_data: list, out_data: list) -> None:
        x, y = in_data[0], out_data[0]
        if sg.rtc.gpu_context(x) is None:
            y[:] = space_to_depth(x.asnumpy(), self.stride)
            return
        self._need_stride2()
        if self.fwd_kernel is None:
            self.fwd_kernel = sg.rtc.Rtc("reorg", [("x", x)], [("y", y)], FWD_KERNEL)
        self.fwd_kernel.push([x], [y], (x.shape[0] * x.shape[1], 1, 1), (1, 1, 1))

    def backward(self, out_grad: list, in_data: list, out_data: list, in_grad: list) -> None:
        y, dx = out_grad[0], in_grad[0]
        if sg.rtc.gpu_context(y) is None:
            dx[:] = depth_to_space(y.asnumpy(), self.stride)
            return
        self._need_stride2()
        if self.bwd_kernel is None:
            self.bwd_kernel = sg.rtc.Rtc("reorg_grad", [("y", y)], [("dx", dx)], BWD_KERNEL)
        self.bwd_kernel.push([y], [dx], (y.shape[0] * y.shape[1] // 4, 1, 1), (1, 1, 1))

    def _need_stride2(self) -> None:
        if self.stride != 2:
            raise sg.ExecutionError(f"reorg: the GPU kernels are written for stride 2, "
                                    f"got {self.stride}")


def reorg_lenet() -> sg.sym.Symbol:
    """The seed's network."""
    S = sg.sym
    data = S.var("data")
    conv1 = S.Convolution(data=data, kernel=(5, 5), num_filter=20)
    tanh1 = S.Activation(data=conv1, act_type="tanh")
    reg = NDArrayReorg(stride=2)(data=tanh1, name="reorg")
    conv2 = S.Convolution(data=reg, kernel=(5, 5), num_filter=20)
    tanh2 = S.Activation(data=conv2, act_type="tanh")
    conv3 = S.Convolution(data=tanh2, kernel=(5, 5), num_filter=50)
    tanh3 = S.Activation(data=conv3, act_type="tanh")
    flatten = S.flatten(data=tanh3)
    fc1 = S.FullyConnected(data=flatten, num_hidden=500)
    tanh4 = S.Activation(data=fc1, act_type="tanh")
    fc2 = S.FullyConnected(data=tanh4, num_hidden=10)
    return S.SoftmaxOutput(data=fc2, name="softmax")


RECIPE = {"batch_size": 100, "optimizer": "sgd", "learning_rate": 0.1, "momentum": 0.0,
          "initializer": "xavier"}  # the seed's recipe: plain SGD, lr 0.1, batch 100
build = reorg_lenet

if __name__ == "__main__":
    from symgraph.interop.models.runner import main
    sys.exit(main("reorg_lenet", sys.argv[1:]))
