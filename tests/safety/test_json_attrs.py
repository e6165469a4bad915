"""Symbol JSON is loaded strictly. Unknown attributes, wrong JSON types and bad indices
raise GraphError naming the node and attribute (or the index); MXNet's ``__dunder__`` user
attributes stay allowed. A hypothesis fuzz over the model zoo's JSON: every mutation either
loads into a well-formed graph or raises GraphError."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symgraph as sg
from symgraph.core.graph import Graph
from symgraph.compiler.passes.verify import verify

S = sg.sym
GOLDEN = Path(__file__).resolve().parents[1] / "data" / "mxnet"


def _conv_doc() -> dict:
    x = S.Convolution(S.var("data"), kernel=(3, 3), num_filter=4, stride=(2, 2), name="conv1")
    return json.loads(S.relu(x, name="r").tojson())


def _load(doc: Any) -> S.Symbol:
    return sg.sym.load_json(json.dumps(doc))


def _node(doc: dict, name: str) -> dict:
    return next(n for n in doc["nodes"] if n["name"] == name)


@pytest.mark.parametrize("key", ["strides", "no_bais", "kernal", "num_filters"])
def test_unknown_attribute_names_node_and_attr(key: str) -> None:
    doc = _conv_doc()
    _node(doc, "conv1")["attrs"][key] = "(1, 1)" if key != "no_bais" else "True"
    before = copy.deepcopy(doc)
    with pytest.raises(sg.GraphError, match=rf"conv1 \(Convolution\): unknown attribute '{key}'"):
        _load(doc)
    assert doc == before
    with pytest.raises(sg.AttrError, match=key):  # the Python API refuses them too
        S.Convolution(S.var("data"), kernel=(3, 3), num_filter=4, **{key: (1, 1)})


def test_op_user_attributes_must_be_dunder_in_python_too(tmp_path: Path) -> None:
    """Otherwise a graph would save and then not load."""
    with pytest.raises(sg.AttrError, match=r"fc \(FullyConnected\): user attribute 'mood' must "
                                           r"be named like __mood__"):
        S.FullyConnected(S.var("x"), num_hidden=3, attr={"mood": "x"}, name="fc")
    sym = S.FullyConnected(S.var("x"), num_hidden=3, attr={"__mood__": "x"}, name="fc")
    sym.save(str(tmp_path / "s.json"))
    assert sg.sym.load(str(tmp_path / "s.json")).attr("__mood__") == "x"


def test_variable_dtype_codes_and_bad_user_attributes() -> None:
    """MXNet writes a variable's __dtype__ as its type code ("2" is float16 in MXNet's table,
    the one tests/data/mxnet/dtype-*.params pin down); symgraph reads and writes the same."""
    doc = _conv_doc()
    _node(doc, "data")["attrs"].update(__dtype__="2", __shape__="(1, 3, 8, 8)")
    sym = _load(doc)
    assert sym.infer_type()[0][0] == np.float16
    assert _node(json.loads(sym.tojson()), "data")["attrs"]["__dtype__"] == "2"
    for key, value in (("__dtype__", "99"), ("__dtype__", "complex64"), ("__dtype__", "x"),
                       ("__shape__", "(2, -3)"), ("__shape__", "(a, b)"),
                       ("__lr_mult__", "fast"), ("__init__", '["nosuch", {}]'),
                       ("__init__", '["xavier", 5]'), ("__init__", "[" * 5000)):
        doc = _conv_doc()
        _node(doc, "data")["attrs"][key] = value
        with pytest.raises(sg.GraphError, match=f"variable data: bad user attribute .*{key}"):
            _load(doc)


def test_dunder_user_attributes_stay_allowed() -> None:
    doc = _conv_doc()
    _node(doc, "conv1")["attrs"].update(__lr_mult__="0.5", __ctx_group__="dev1", __layout__="NCHW")
    sym = _load(doc)
    conv = sym.get_internals()["conv1_output"]
    assert conv.attr("__lr_mult__") == "0.5" and conv.attr("__ctx_group__") == "dev1"
    assert json.loads(sym.tojson())["nodes"][3]["attrs"]["__ctx_group__"] == "dev1"
    doc = _conv_doc()
    _node(doc, "data")["attrs"]["mood"] = "angry"  # variables take any attribute (MXNet too)
    assert _load(doc).get_internals()["data"].attr("mood") == "angry"


@pytest.mark.parametrize("where,value,match", [
    ("input", 1.0, "node index must be an integer, got 1.0"),
    ("input", 0.5, "must be an integer"),
    ("input", -1, r"node index is -1, outside \[0, 3\)"),
    ("input", True, "must be an integer, got True"),
    ("input", "0", "must be an integer, got '0'"),
    ("input", 7, "refers to node 7, which is not defined before it"),
    ("head", -1, r"head 0 node index is -1"),
    ("head", 2.0, "head 0 node index must be an integer"),
    ("head", 99, "head 0 refers to node 99"),
    ("head_output", 1, r"output index of r is 1, outside \[0, 1\)"),
    ("head_output", -1, r"output index of r is -1"),
    ("arg_nodes", -2, r"arg_nodes\[0\] node index is -2|arg_nodes\[0\] is -2"),
    ("arg_nodes", 3, "arg_nodes.* not a variable"),
])
def test_bad_indices(where: str, value: Any, match: str) -> None:
    doc = _conv_doc()
    if where == "input":
        _node(doc, "conv1")["inputs"][0][0] = value
    elif where == "head":
        doc["heads"][0][0] = value
    elif where == "head_output":
        doc["heads"][0][1] = value
    else:
        doc["arg_nodes"][0] = value
    with pytest.raises(sg.GraphError, match=match):
        _load(doc)


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.update(nodes={"a": 1}), "'nodes' must be a non-empty list"),
    (lambda d: d.update(nodes=[]), "'nodes' must be a non-empty list"),
    (lambda d: d.update(heads="r"), "'heads' must be a non-empty list"),
    (lambda d: d["nodes"].__setitem__(0, ["data"]), "node 0 must be an object"),
    (lambda d: d["nodes"][3].update(attrs=["kernel"]), "conv1: 'attrs' must be an object"),
    (lambda d: d["nodes"][3]["attrs"].update(num_filter=4), "conv1: attribute num_filter must "
                                                            "be a string, got 4"),
    (lambda d: d["nodes"][3].update(inputs={"0": 0}), "conv1: 'inputs' must be a list"),
    (lambda d: d["nodes"][3]["inputs"].__setitem__(0, 0), r"must be \[node, output, version\]"),
    (lambda d: d["nodes"][3].update(name=3), "node 3 needs string 'op' and non-empty 'name'"),
    (lambda d: d["nodes"][3].update(op=None), "node 3 needs string 'op'"),
    (lambda d: d["nodes"][3].update(op="NoSuchOp"), "unknown operator 'NoSuchOp'"),
    (lambda d: d["nodes"][3].update(op="_fused"), r"conv1 \(_fused\): internal op"),
    (lambda d: d["nodes"][1].update(name="data"), "both variables named 'data'"),
    (lambda d: d["nodes"][0].update(inputs=[[0, 0, 0]]), "not defined before it|has inputs"),
    (lambda d: d["nodes"][3]["attrs"].update(kernel="(3, 3"), r"conv1 \(Convolution\): "
                                                              r"attribute kernel"),
    (lambda d: d["attrs"].update(symgraph_json_version="one"), "symgraph_json_version must be"),
    (lambda d: d["nodes"][4]["inputs"].append([3, 0, 0]), r"r \(relu\): 2 inputs in JSON"),
])
def test_wrong_json_types_raise_graph_error(mutate: Any, match: str) -> None:
    doc = _conv_doc()
    mutate(doc)
    with pytest.raises(sg.GraphError, match=match):
        _load(doc)


def test_nesting_depth_limit() -> None:
    deep = "[" * 3000 + "]" * 3000
    for text in (deep, '{"nodes": ' + deep + ', "heads": []}'):
        with pytest.raises(sg.GraphError, match="nesting deeper than 32"):
            sg.sym.load_json(text)
    # brackets inside strings do not count
    doc = _conv_doc()
    _node(doc, "conv1")["attrs"]["__note__"] = "[" * 100
    assert _load(doc).get_internals()["conv1_output"].attr("__note__") == "[" * 100


def test_non_text_and_non_json() -> None:
    for bad in (b'{"nodes": []}', None, 3):
        with pytest.raises(sg.GraphError, match="expected text"):
            sg.sym.load_json(bad)  # type: ignore[arg-type]
    for bad in ("", "{", "[1, 2]", '"nodes"', "nul"):
        with pytest.raises(sg.GraphError, match="malformed symbol JSON"):
            sg.sym.load_json(bad)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    f = tmp_path / "net-symbol.json"
    doc = _conv_doc()
    _node(doc, "conv1")["attrs"]["strides"] = "(2, 2)"
    f.write_text(json.dumps(doc))
    before = f.read_bytes()
    with pytest.raises(sg.GraphError, match=rf"{f}: conv1 \(Convolution\): unknown attribute"):
        sg.sym.load(str(f))
    assert f.read_bytes() == before
    f.write_bytes(b"\xff\xfe{}")
    with pytest.raises(sg.GraphError, match=f"{f}: symbol JSON is not UTF-8"):
        sg.sym.load(str(f))
    with pytest.raises(sg.DataError, match="symbol file .*missing.json not found"):
        sg.sym.load(str(tmp_path / "missing.json"))


# -- fuzz ------------------------------------------------------------------------------------

def _zoo() -> list[dict]:
    from symgraph.interop.models import lenet, mlp, simple_cnn
    docs = [json.loads(m.build().tojson()) for m in (mlp, lenet, simple_cnn)]
    docs += [json.loads((GOLDEN / f"{p}-symbol.json").read_text()) for p in ("bn", "cnn")]
    return docs


ZOO = _zoo()
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
                    st.sampled_from(["(3, 3)", "(-1, 2)", "()", "None", "relu", "inf", "1e400",
                                     "(0,)", "-1", "0", "True", "__x__", "null", "Convolution"]))
VALUES = st.recursive(SCALARS, lambda c: st.one_of(st.lists(c, max_size=3),
                                                    st.dictionaries(st.text(max_size=6), c,
                                                                    max_size=3)), max_leaves=6)


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, path + (i,))
    return out


def _mutate(doc: dict, data: st.DataObject) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        action = data.draw(st.sampled_from(["replace", "delete", "copy_sibling", "add_key"]))
        if action == "replace":
            parent[path[-1]] = data.draw(VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "copy_sibling" and isinstance(parent, list) and parent:
            parent.insert(data.draw(st.integers(0, len(parent))),
                          copy.deepcopy(data.draw(st.sampled_from(parent))))
        elif isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["strides", "__a__", "inputs", "op", "attr",
                                              "param", "num_args"]))] = data.draw(VALUES)
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_fuzz_zoo_json_mutations(data: st.DataObject) -> None:
    doc = _mutate(data.draw(st.sampled_from(ZOO)), data)
    text = json.dumps(doc)
    try:
        sym = sg.sym.load_json(text)
    except sg.GraphError:
        return
    verify(Graph(tuple(sym.outputs_)))  # well formed: registered ops, arities, acyclic
    assert sym.list_arguments() is not None and sym.list_outputs()
    again = sg.sym.load_json(sym.tojson())  # and it round-trips
    assert again.tojson() == sym.tojson()


def test_fuzz_survivors_still_compute() -> None:
    """An unmutated zoo graph (the fuzz's starting point) loads and runs."""
    sym = sg.sym.load_json(json.dumps(ZOO[0]))
    exe = sym.simple_bind(sg.cpu(), data=(2, 784), grad_req="null")
    assert np.isfinite(exe.forward()[0].asnumpy()).all()
