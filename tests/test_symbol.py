"""Symbol API: naming, composition, introspection, operators, JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.test_utils import assert_almost_equal

S = sg.sym


def mlp():
    data = S.var("data")
    fc1 = S.FullyConnected(data=data, num_hidden=128, name="fc1")
    act1 = S.Activation(fc1, act_type="relu", name="relu1")
    fc2 = S.FullyConnected(act1, num_hidden=10, name="fc2")
    return S.SoftmaxOutput(fc2, name="softmax")


def test_auto_created_parameters_and_order() -> None:
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                    "softmax_label"]
    assert net.list_outputs() == ["softmax_output"]
    assert net.list_auxiliary_states() == []
    assert S.FullyConnected(S.var("d"), num_hidden=3, no_bias=True, name="f").list_arguments() \
        == ["d", "f_weight"]


def test_automatic_names_and_prefix() -> None:
    with sg.name.NameManager():
        a = S.FullyConnected(S.var("x"), num_hidden=2)
        b = S.FullyConnected(a, num_hidden=2)
        assert (a.name, b.name) == ("fullyconnected0", "fullyconnected1")
        assert b.list_arguments()[-1] == "fullyconnected1_bias"
    with sg.name.Prefix("net_"):
        c = S.FullyConnected(S.var("x"), num_hidden=2, name="fc")
    assert c.name == "net_fc" and "net_fc_weight" in c.list_arguments()


def test_inputs_by_keyword_and_position_are_equivalent() -> None:
    x, w = S.var("x"), S.var("w")
    a = S.FullyConnected(x, w, num_hidden=4, no_bias=True, name="f")
    b = S.FullyConnected(weight=w, data=x, num_hidden=4, no_bias=True, name="f")
    assert a.tojson() == b.tojson()


def test_operator_overloading_matches_numpy(rng) -> None:
    a, b = S.var("a"), S.var("b")
    expr = (a + b) * 2 - b / a + a ** 2 - (-b) + abs(a) + 1 / (1 + a * a) + 3 - a
    av, bv = rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, (1, 4))
    want = (av + bv) * 2 - bv / av + av ** 2 + bv + np.abs(av) + 1 / (1 + av * av) + 3 - av
    exe = expr.bind(sg.cpu(), {"a": sg.nd.array(av, dtype=np.float64),
                               "b": sg.nd.array(bv, dtype=np.float64)})
    assert_almost_equal(exe.forward()[0], want, 1e-12, 1e-12)


def test_comparisons_give_zero_one(rng) -> None:
    a = S.var("a")
    av = rng.integers(-2, 3, (5,)).astype(np.float32)
    for sym, ref in (((a > 0), av > 0), ((a <= 1), av <= 1), ((a == 1), av == 1),
                     ((a != 1), av != 1)):
        out = sym.bind(sg.cpu(), {"a": sg.nd.array(av)}).forward()[0].asnumpy()
        np.testing.assert_array_equal(out, ref.astype(np.float32))


def test_group_internals_children_and_indexing() -> None:
    net = mlp()
    internals = net.get_internals()
    names = internals.list_outputs()
    assert "fc1_output" in names and "relu1_output" in names and "fc1_weight" in names
    fc1 = internals["fc1_output"]
    assert fc1.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert fc1.get_children().list_outputs() == ["data", "fc1_weight", "fc1_bias"]
    assert S.var("x").get_children() is None
    g = S.Group([fc1, net])
    assert g.list_outputs() == ["fc1_output", "softmax_output"] and len(g) == 2
    assert g[1].name == "softmax"
    with pytest.raises(sg.GraphError, match="no output named"):
        g["nope"]


def test_attributes() -> None:
    w = S.var("w", lr_mult=2.0, wd_mult=0.0, shape=(3, 4), dtype="float16", attr={"mood": "x"})
    assert w.attr("__lr_mult__") == "2.0" and w.attr("__shape__") == "(3, 4)"
    assert w.attr("__dtype__") == "float16" and w.attr("mood") == "x"
    fc = S.FullyConnected(S.var("d"), num_hidden=7, name="fc")
    assert fc.attr("num_hidden") == "7"
    assert fc.attr_dict()["fc"]["num_hidden"] == "7"
    assert S.var("q").attr("missing") is None


def test_composition_substitutes_variables(rng) -> None:
    net = S.FullyConnected(S.var("data"), num_hidden=3, name="fc")
    pre = S.exp(S.var("raw"))
    composed = net(data=pre)
    assert composed.list_arguments() == ["raw", "fc_weight", "fc_bias"]
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias"]  # original untouched
    with pytest.raises(sg.GraphError, match="no variable named"):
        net(nothing=pre)


def test_json_round_trip_and_format(tmp_path) -> None:
    net = mlp()
    text = net.tojson()
    doc = json.loads(text)
    assert doc["attrs"]["symgraph_json_version"] == ["int", 1]
    assert doc["nodes"][doc["heads"][0][0]]["op"] == "SoftmaxOutput"
    again = S.load_json(text)
    assert again.tojson() == text
    path = tmp_path / "net.json"
    net.save(str(path))
    assert S.load(str(path)).tojson() == text


def test_loads_mxnet_style_json() -> None:
    text = json.dumps({"nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "null", "name": "fc_weight", "inputs": []},
        {"op": "null", "name": "fc_bias", "inputs": []},
        {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "5"},
         "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
        {"op": "Flatten", "name": "fl", "param": {}, "inputs": [[3, 0, 0]]}],
        "arg_nodes": [0, 1, 2], "heads": [[4, 0, 0]],
        "attrs": {"mxnet_version": ["int", 10900]}})
    sym = S.load_json(text)
    assert sym.infer_shape(data=(2, 3))[1] == [(2, 5)]


@pytest.mark.parametrize("text, match", [
    ("not json", "malformed"),
    ('{"nodes": [], "heads": [[0, 0, 0]]}', "malformed"),
    ('{"nodes": [{"op": "Frobnicate", "name": "f", "inputs": []}], "heads": [[0,0,0]]}',
     "unknown operator 'Frobnicate'"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "relu", "name": "r", '
     '"inputs": [[5, 0, 0]]}], "heads": [[1,0,0]]}', "not defined before"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "FullyConnected", '
     '"name": "fc", "attrs": {"num_hidden": "two"}, "inputs": [[0,0,0],[0,0,0],[0,0,0]]}], '
     '"heads": [[1,0,0]]}', "fc \\(FullyConnected\\): attribute num_hidden"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[0,0,0]], '
     '"attrs": {"symgraph_json_version": ["int", 99]}}', "newer"),
])
def test_bad_json_is_refused(text: str, match: str) -> None:
    with pytest.raises(sg.GraphError, match=match):
        S.load_json(text)


def test_bad_attributes_name_the_node() -> None:
    with pytest.raises(sg.AttrError, match=r"fc \(FullyConnected\): unknown attribute"):
        S.FullyConnected(S.var("x"), num_hidden=3, num_hiden=2, name="fc")
    with pytest.raises(sg.AttrError, match=r"fc \(FullyConnected\): attribute num_hidden"):
        S.FullyConnected(S.var("x"), num_hidden="lots", name="fc")
    with pytest.raises(sg.AttrError, match="missing required attribute 'num_hidden'"):
        S.FullyConnected(S.var("x"), name="fc")
    with pytest.raises(sg.AttrError, match="must be one of"):
        S.Activation(S.var("x"), act_type="swish", name="act")
    with pytest.raises(sg.AttrError, match="no input named"):
        S.relu(S.var("x"), weight=S.var("w"))
