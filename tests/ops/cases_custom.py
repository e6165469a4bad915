"""Registry cases for ``Custom`` and ``_backward_Custom``: a Python op (x * scale + sin(x)
written with numpy inside a CustomOp) against an independent numpy reference."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal


class _ScaleSin(sg.operator.CustomOp):
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], x * self.scale + np.sin(x))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, dy = in_data[0].asnumpy(), out_grad[0].asnumpy()
        self.assign(in_grad[0], req[0], dy * (self.scale + np.cos(x)))


@sg.operator.register("test_scale_sin")
class _ScaleSinProp(sg.operator.CustomOpProp):
    def __init__(self, scale: str = "1") -> None:
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _ScaleSin(self.scale)


CASES = [Case("Custom", lambda: sg.sym.Custom(sg.sym.var("x"), op_type="test_scale_sin",
                                              scale=2.5, name="ss"),
              {"x": normal(3, 4)}, ref=lambda x: 2.5 * x + np.sin(x),
              also_covers=("_backward_Custom",))]
