"""``layout`` as ``help()`` documents it is what the ops do: every layout a doc names as taken
is taken (with the shape it implies), every refused one is a ShapeError naming it, and Pooling
no longer reads channels-last data as channels-first."""
from __future__ import annotations

import re

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import ShapeError
from symgraph.frontend.opdoc import param_doc
from symgraph.core.registry import get_op

S = sg.sym
FIRST = ("NCW", "NCHW", "NCDHW")
LAST = ("NWC", "NHWC", "NDHWC")


def _layout_doc(op: str) -> str:
    opdef = get_op(op)
    return param_doc(opdef, "layout", opdef.params["layout"])


def _layer(op: str, layout: str, rank: int) -> S.Symbol:
    k = (2,) * rank
    if op == "Pooling":
        return S.Pooling(S.var("data"), kernel=k, pool_type="max", layout=layout, name="l")
    return getattr(S, op)(S.var("data"), kernel=k, num_filter=4, layout=layout, name="l")


def _taken(doc: str) -> list[str]:
    """Layouts the doc names before any 'refused' clause."""
    return re.findall(r"\bN[CDHW]+\b", doc.split("refused")[0].split("; channels-last")[0])


@pytest.mark.parametrize("op", ["Convolution", "Deconvolution", "Pooling"])
def test_documented_layouts_are_the_supported_ones(op: str) -> None:
    doc = _layout_doc(op)
    assert "only the default" not in doc and doc in sg.sym.__dict__[op].__doc__
    taken = _taken(doc)
    refused = [lay for lay in FIRST + LAST if lay not in taken]
    assert set(FIRST) <= set(taken) and (op != "Deconvolution") == (refused == [])
    for layout in taken:
        rank = len(layout) - 2
        channel_axis = layout.index("C")
        shape = [2] + [6] * rank
        shape.insert(channel_axis, 3)
        out = _layer(op, layout, rank).infer_shape(data=tuple(shape))[1][0]
        assert out[channel_axis] == (3 if op == "Pooling" else 4), (layout, out)
    for layout in refused:
        shape = (2,) + (6,) * (len(layout) - 2) + (3,)
        with pytest.raises(ShapeError, match=f"layout {layout} is not supported"):
            _layer(op, layout, len(layout) - 2).infer_shape(data=shape)


def test_convolution_summary_names_its_channels_last_layouts() -> None:
    summary = S.Convolution.__doc__.split("\n\n")[0]
    assert all(lay in summary for lay in LAST[1:]) and "N(D)(H)WC" not in summary


def test_pooling_with_default_layout_named_matches_numpy() -> None:
    """layout='NCHW' spelled out is the default: 2x2 max pooling, against numpy."""
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 6))
    exe = _layer("Pooling", "NCHW", 2).bind(sg.cpu(), {"data": sg.nd.array(x)})
    got = exe.forward()[0].asnumpy()
    want = np.stack([x[:, :, i:i + 2, j:j + 2].max(axis=(2, 3))
                     for i in range(3) for j in range(5)], -1).reshape(2, 3, 3, 5)
    np.testing.assert_allclose(got, want, rtol=1e-6)
