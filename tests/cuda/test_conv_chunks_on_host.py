"""The generated convolution fallback in chunks of images (``lowering_conv.COL_BYTES``): with
a column budget of two images, the forward, data gradient and weight gradient (summed over
the chunks with cuBLAS's beta = 1) of a grouped, strided, padded convolution over five
images (chunks of 2, 2, 1) equal the numpy references on the host, and the step's scratch is
one chunk's."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.registry import RunCtx, get_op
from symgraph.runtime.cuda import lowering_conv
from symgraph.runtime.cuda.actions import Gemm

from .host_run import host_compiler, lowered, run_on_host

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
S = sg.sym
OPS = ("Convolution", "_backward_Convolution_data", "_backward_Convolution_weight")


def test_chunked_fallback_matches_numpy(monkeypatch, tmp_path: Path) -> None:
    n, c, f, hw = 5, 4, 6, (7, 6)
    net = S.Convolution(S.var("x"), num_filter=f, kernel=(3, 3), stride=(2, 1), pad=(1, 1),
                        num_group=2, name="conv")
    sch = S.MakeLoss(S.sum(net * net)).simple_bind(sg.cpu(), x=(n, c) + hw)._train.schedule
    steps = [st for st in sch.steps if st.node.op in OPS]
    assert sorted(st.node.op for st in steps) == sorted(OPS)
    whole = {st.node.op: lowered(st, sch.shapes, sch.dtypes)[1] for st in steps}
    pix = 4 * 6  # output cells of one image: (7 + 2 - 3) // 2 + 1 = 4 rows, 6 columns
    monkeypatch.setattr(lowering_conv, "COL_BYTES", 2 * c * 9 * pix * 4)
    rng = np.random.default_rng(3)
    for st in steps:
        acts, scratch, _ = lowered(st, sch.shapes, sch.dtypes)
        gemms = [a for a in acts if isinstance(a, Gemm)]
        assert len(gemms) == 3, st.node.op
        assert [g.accumulate for g in gemms] == \
            ([False, True, True] if st.node.op == OPS[2] else [False] * 3)
        assert scratch < whole[st.node.op] / 2, (st.node.op, scratch, whole[st.node.op])
        xs = [rng.normal(size=sch.shapes[s]).astype(np.float32) for s in st.inputs]
        want = get_op(st.node.op).compute(st.node.attrs, xs, RunCtx(is_train=True))
        got = run_on_host(st, sch.shapes, sch.dtypes, xs, tmp_path)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w, np.float32).reshape(g.shape),
                                       rtol=1e-5, atol=1e-5, err_msg=st.node.op)


@pytest.mark.gpu
def test_chunked_fallback_and_arena_scratch_on_the_device() -> None:
    """Generated convolutions only (no cuDNN), a column matrix of 86 MiB per layer: the device
    runs them in chunks with the scratch placed in the arena; gradients equal the CPU's."""
    from symgraph.core import config
    x = S.var("data")
    h = S.Activation(S.Convolution(x, num_filter=32, kernel=(3, 3), pad=(1, 1), name="c1"),
                     act_type="relu")
    h = S.Convolution(h, num_filter=16, kernel=(3, 3), pad=(1, 1), name="c2")
    net = S.MakeLoss(S.sum(h * h) * 1e-4)
    shape = (96, 8, 28, 28)
    got = []
    for ctx in (sg.gpu(0), sg.cpu()):
        with config.override("SYMGRAPH_CUDNN", "0"):
            exe = net.simple_bind(ctx, data=shape)
            rng = np.random.default_rng(0)
            for name, arr in exe.arg_dict.items():
                arr[:] = rng.normal(size=arr.shape) * (1.0 if name == "data" else 0.1)
            exe.forward(is_train=True)
            exe.backward()
            got.append({k: g.asnumpy() for k, g in exe.grad_dict.items()})
    for k in got[1]:
        np.testing.assert_allclose(got[0][k], got[1][k], rtol=2e-3,
                                   atol=2e-3 * float(np.abs(got[1][k]).max()), err_msg=k)
