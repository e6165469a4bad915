"""Channels-last pooling on the CUDA backend is a BindError naming the node and the layout (its
kernels index NCHW; the compiled CPU backend pools NHWC): checked by lowering alone (no GPU:
``lower_schedule`` is pure Python)."""
from __future__ import annotations

import pytest

import symgraph as sg
from symgraph.core.base import BindError
from symgraph.runtime.cuda.plan import lower_schedule

S = sg.sym


@pytest.mark.parametrize("grad", [False, True])
def test_channels_last_pooling_is_refused_by_name(grad: bool) -> None:
    x = S.var("data")
    y = S.Pooling(x, kernel=(2, 2), stride=(2, 2), layout="NHWC", name="pool")
    exe = S.sum(y, name="total").simple_bind(sg.cpu(), data=(2, 4, 4, 3),
                                             grad_req="write" if grad else "null")
    with pytest.raises(BindError, match=r"^pool(_backward\S*)? \((_backward_)?Pooling\): "
                                        r"layout NHWC: the CUDA backend pools channels first"):
        lower_schedule(exe._train.schedule, 132)
