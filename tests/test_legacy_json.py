"""Old MXNet checkpoints: a 2016-era ``-symbol.json`` (``param`` attributes, two-element
inputs, ``_Plus``/``_MulScalar``/``Convolution_v1``/``Pooling_v1`` spellings: the hand-written
fixture tests/data/mxnet/legacy_2016-symbol.json) loads and computes what MXNet 1.9.1
computes from it; MXNet's initializer spellings in ``__init__`` attributes load."""
from __future__ import annotations

import json
import os
import textwrap

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, GraphError
from symgraph.compiler.ops.legacy import LEGACY
from symgraph.core.registry import get_op, has_op

from .mxnet_live import mxnet_json

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "mxnet", "legacy_2016-symbol.json")
SHAPES = {"data": (2, 3, 6, 6), "softmax_label": (2,)}


def _values() -> dict:
    sym = sg.sym.load(FIXTURE)
    arg_shapes = sym.infer_shape(**SHAPES)[0]
    rng = np.random.default_rng(0)
    vals = {n: rng.uniform(-1, 1, s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes)}
    vals["softmax_label"] = np.array([0.0, 2.0], np.float32)
    return vals


def test_legacy_fixture_loads_with_canonical_ops() -> None:
    sym = sg.sym.load(FIXTURE)
    ops = {n.op for n in sym.graph().nodes() if not n.is_variable}
    assert {"elemwise_add", "_mul_scalar", "Convolution", "Pooling", "add_n"} <= ops
    assert not ops & set(LEGACY), "a graph holds canonical names only"
    assert sym.infer_shape(**SHAPES)[1] == [(2, 3)]


def test_every_legacy_spelling_resolves_to_its_op() -> None:
    for old, new in LEGACY.items():
        if has_op(new):
            assert get_op(old) is get_op(new), old


CHILD = textwrap.dedent("""
    import json, sys
    import mxnet as mx
    import numpy as np
    path, vals = json.load(sys.stdin)
    sym = mx.sym.load(path)
    args = {k: mx.nd.array(np.array(v, dtype=np.float32)) for k, v in vals.items()}
    ex = sym.bind(mx.cpu(), args)
    print(json.dumps(ex.forward()[0].asnumpy().tolist()))
""")


@pytest.mark.mxnet
def test_legacy_fixture_matches_mxnet() -> None:
    vals = _values()
    theirs = mxnet_json(CHILD, [FIXTURE, {k: v.tolist() for k, v in vals.items()}])
    ex = sg.sym.load(FIXTURE).bind(sg.cpu(), {k: sg.nd.array(v) for k, v in vals.items()})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.asarray(theirs), rtol=1e-5,
                               atol=1e-6)


# what MXNet 1.9.1 writes for LeakyReLU(act_type='prelu') (its tojson(), abridged)
PRELU_JSON = json.dumps({
    "nodes": [{"op": "null", "name": "data", "inputs": []},
              {"op": "null", "name": "act_gamma",
               "attrs": {"__init__": "[\"Constant\", {\"value\": 0.25}]", "act_type": "prelu"},
               "inputs": []},
              {"op": "LeakyReLU", "name": "act", "attrs": {"act_type": "prelu"},
               "inputs": [[0, 0, 0], [1, 0, 0]]}],
    "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3], "heads": [[2, 0, 0]],
    "attrs": {"mxnet_version": ["int", 10901]}})


def test_prelu_json_initializer_spelling_loads() -> None:
    sym = sg.sym.load_json(PRELU_JSON)
    mod = sg.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind([("data", (2, 3))])
    mod.init_params()
    np.testing.assert_array_equal(mod.get_params()[0]["act_gamma"].asnumpy(), [0.25] * 3)


def test_initializer_names_are_case_insensitive_and_bad_ones_typed() -> None:
    assert isinstance(sg.init.create('["Xavier", {"magnitude": 2}]'), sg.init.Xavier)
    with pytest.raises(AttrError, match="unknown initializer 'nosuch'"):
        sg.init.create('["NoSuch", {}]')
    with pytest.raises(AttrError, match="Constant.*unexpected keyword"):
        sg.init.create('["Constant", {"bogus": 1}]')


def test_unknown_legacy_op_is_a_graph_error() -> None:
    bad = PRELU_JSON.replace('"LeakyReLU"', '"_NoSuchLegacyOp"')
    with pytest.raises(GraphError, match="_NoSuchLegacyOp"):
        sg.sym.load_json(bad)
