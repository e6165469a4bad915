"""Cutting a phase at host steps so the device-only runs between them are still replayed as
CUDA graphs (custom-op Python must not break graph replay)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda.plan import segments
from symgraph.interop.test_utils import assert_almost_equal


def test_segments_cut_at_every_host_step() -> None:
    host = [False, False, True, False, True, True, False]
    assert segments(host, 0, 7) == [(0, 2, False), (2, 3, True), (3, 4, False), (4, 5, True),
                                    (5, 6, True), (6, 7, False)]
    assert segments(host, 3, 6) == [(3, 4, False), (4, 5, True), (5, 6, True)]
    assert segments([False] * 4, 1, 4) == [(1, 4, False)]
    assert segments(host, 2, 2) == []


class _Twice(sg.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0].asnumpy() * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0].asnumpy() * 2)


@sg.operator.register("test_segments_twice")
class _TwiceProp(sg.operator.CustomOpProp):
    def list_arguments(self):
        return ["data"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Twice()


def _net() -> sg.sym.Symbol:
    S = sg.sym
    h = S.Activation(S.FullyConnected(S.var("data"), num_hidden=16, name="fc1"), act_type="relu")
    h = S.Custom(h, op_type="test_segments_twice", name="twice")
    return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=4, name="fc2"), name="softmax")


@pytest.mark.gpu
def test_python_op_between_captured_graphs_matches_cpu() -> None:
    from symgraph.runtime.cuda.graphs import CudaGraph
    rng = np.random.default_rng(0)
    params = {"fc1_weight": rng.normal(size=(16, 8)) * 0.3, "fc1_bias": rng.normal(size=16),
              "fc2_weight": rng.normal(size=(4, 16)) * 0.3, "fc2_bias": rng.normal(size=4)}
    execs = {}
    for ctx in (sg.cpu(), sg.gpu(0)):
        exe = execs[ctx.device_type] = _net().simple_bind(ctx, data=(5, 8))
        exe.copy_params_from({k: sg.nd.array(v) for k, v in params.items()})
    for step in range(4):
        x = rng.normal(size=(5, 8)).astype(np.float32)
        y = rng.integers(0, 4, 5).astype(np.float32)
        got = {}
        for dev, exe in execs.items():
            out = exe.forward(is_train=True, data=x, softmax_label=y)[0].asnumpy()
            exe.backward()
            got[dev] = (out, exe.grad_dict["fc1_weight"].asnumpy())
        for a, b in zip(got["gpu"], got["cpu"]):
            assert_almost_equal(a, b, rtol=1e-4, atol=1e-5)
    program = execs["gpu"]._train.program
    assert any(isinstance(g, CudaGraph) for g in program.graphs.graphs.values()), \
        "no device-only segment was captured"
