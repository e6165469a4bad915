"""sg.nd.split_v2 / sg.sym.split_v2 against numpy.split (indices and sections)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError


@pytest.mark.parametrize("how, axis", [((1, 3), 0), ((3,), -2), (2, 1), ((), 0)])
def test_split_v2_matches_numpy(how, axis) -> None:
    x = np.arange(5 * 4 * 2.0).reshape(5, 4, 2)
    want = np.split(x, how, axis=axis)
    got = sg.nd.split_v2(sg.nd.array(x), how, axis=axis)
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.asnumpy(), w)
    sym = sg.sym.split_v2(sg.sym.var("x"), how, axis=axis)
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x)}, args_grad={"x": sg.nd.zeros(x.shape)})
    outs = exe.forward(is_train=True)
    exe.backward([sg.nd.ones(o.shape) * (k + 1) for k, o in enumerate(outs)])
    heads = np.concatenate([np.full(w.shape, k + 1.0) for k, w in enumerate(want)], axis=axis)
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), heads)


def test_split_v2_squeezes_and_refuses_other_kinds() -> None:
    parts = sg.nd.split_v2(sg.nd.zeros((3, 2)), (1, 2), axis=0, squeeze_axis=True)
    assert [p.shape for p in parts] == [(2,)] * 3
    with pytest.raises(AttrError, match="indices_or_sections"):
        sg.nd.split_v2(sg.nd.zeros((3, 2)), 1.5)
