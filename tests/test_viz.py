"""plot_network / print_summary: structure of the DOT graph, shapes on edges, fused clusters,
SVG parsed with xml.etree when Graphviz's ``dot`` exists, and the summary's parameter counts."""
from __future__ import annotations

import re
import shutil
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import expr as E

graphviz = pytest.importorskip("graphviz")


def _mlp():
    x = sg.sym.var("data")
    x = sg.sym.FullyConnected(x, num_hidden=16, name="fc1")
    x = sg.sym.Activation(x, act_type="relu", name="relu1")
    x = sg.sym.FullyConnected(x, num_hidden=10, name="fc2")
    return sg.sym.SoftmaxOutput(x, name="softmax")


def _edges(dot):
    return re.findall(r"(\w+) -> (\w+)(?: \[label=\"?([\w]+)\"?\])?", dot.source)


def test_plot_network_nodes_and_shapes():
    dot = sg.viz.plot_network(_mlp(), title="mlp", save_format="svg", shape={"data": (2, 20)})
    assert isinstance(dot, graphviz.Digraph)
    src = dot.source
    assert "fc1_weight" not in src and "fc2_bias" not in src  # hide_weights
    assert "num_hidden=16" in src and "act_type=relu" in src
    labels = sorted(lbl for _, _, lbl in _edges(dot))
    # data->fc1: 20; fc1->relu1: 16; relu1->fc2: 16; fc2->softmax: 10 (batch axis dropped);
    # the label (2,) has only a batch axis and is shown whole
    assert labels == sorted(["20", "16", "16", "10", "2"])
    shown = sg.viz.plot_network(_mlp(), hide_weights=False)
    assert "fc1_weight" in shown.source and "label=" not in "".join(
        line for line in shown.source.splitlines() if "->" in line)


def test_fused_cluster_from_executor_like():
    a, b = sg.sym.var("a", shape=(2, 3)), sg.sym.var("b", shape=(2, 3))
    fused = sg.sym.apply_op("_fused", [a, b], {
        "exprs": (E.call("max", E.inp(0) + E.inp(1), 0.0),), "shapes": ((2, 3),),
        "members": ("broadcast_add", "relu"), "num_inputs": 2}, name="fused0")
    ex = fused.simple_bind(sg.cpu(), grad_req="null")
    dot = sg.viz.plot_network(ex, shape=None)
    src = dot.source
    assert "subgraph cluster_" in src and "fused: 2 ops" in src
    assert "broadcast_add" in src and "relu" in src
    ex.forward(a=np.ones((2, 3)), b=-2 * np.ones((2, 3)))
    assert (ex.outputs[0].asnumpy() == 0).all()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' binary not installed")
def test_svg_parses():
    dot = sg.viz.plot_network(_mlp(), save_format="svg", shape={"data": (1, 20)})
    root = ET.fromstring(dot.pipe(format="svg"))
    ns = {"s": "http://www.w3.org/2000/svg"}
    titles = [t.text for t in root.iterfind(".//s:g[@class='node']/s:title", ns)]
    assert len(titles) == 6  # data, fc1, relu1, fc2, softmax_label, softmax
    assert len(root.findall(".//s:g[@class='edge']", ns)) == 5


def test_print_summary_counts(capsys):
    text = sg.viz.print_summary(_mlp(), {"data": (1, 20)})
    assert "Total params: %d" % (20 * 16 + 16 + 16 * 10 + 10) in text
    row = next(line for line in text.splitlines() if line.startswith("fc1(FullyConnected)"))
    assert row.split()[1:4] == ["16", str(20 * 16 + 16), "data"]
    assert capsys.readouterr().out.strip() == text.strip()
    # without shapes (MXNet prints the table too): only what the attributes decide, the biases
    bare = sg.viz.print_summary(_mlp())
    assert "Total params: %d" % (16 + 10) in bare
    assert next(line for line in bare.splitlines() if line.startswith("fc2(")).split()[1:] == [
        "10", "relu1"]


def test_compiled_edges_leave_the_member_that_computes_them():
    """A fused group with several outputs (relu1's value, and its gradient mask for backward):
    the edge into fc2 starts at the member computing what fc2 reads (``_mul_scalar``), not at
    the group's last member (the mask, which nothing in the forward graph reads)."""
    x = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=6, name="fc1")
    x = sg.sym.exp(sg.sym.Activation(x, act_type="relu", name="relu1"), name="e") * 2.0
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(x, num_hidden=3, name="fc2"), name="sm")
    exe = net.simple_bind(sg.cpu(), data=(2, 5))
    src = sg.viz.plot_network(exe, shape={"data": (2, 5)}).source
    labels = dict(re.findall(r"^\s*(n\d+(?:_\d+)?) \[label=\"([^\"]*)\"", src, re.M))
    fc2 = next(i for i, text in labels.items() if text.startswith("FullyConnected\nfc2"))
    (src_id,) = [a for a, b in re.findall(r"(n\d+(?:_\d+)?) -> (n\d+(?:_\d+)?)", src)
                 if b == fc2]
    assert labels[src_id].startswith("_mul_scalar"), (labels[src_id], src)
    # the title names every user-level node, wrapped between parts (not one wide line)
    title = re.search(r'label="(fc1 \(FullyConnected\)[^"]*)"', src).group(1).split("\n")
    assert " ".join(title).replace(" + ", " ").split()[:4] == ["fc1", "(FullyConnected)",
                                                                "relu1", "(Activation)"]
    assert "e (exp)" in " ".join(title) and len(title) >= 3
    assert all(len(line) <= sg.viz.TITLE_WIDTH + 2 for line in title), title
    fused = [st.node for st in exe.schedule.steps if st.node.op == "_fused"]
    assert any(len(n.attrs["out_members"]) > 1 for n in fused)  # the case being tested


def test_incomplete_or_unknown_shapes_are_errors():
    """A table or picture with unknown sizes would count parameters wrongly: refuse, as MXNet
    refuses ("Input shape is incomplete"), naming what is missing."""
    with pytest.raises(sg.ShapeError, match=r"cannot decide the shapes of \['data', "
                                            r"'fc1_weight'"):
        sg.viz.print_summary(_mlp(), {"softmax_label": (2,)})
    with pytest.raises(sg.ShapeError, match="'dta' is not an input"):
        sg.viz.plot_network(_mlp(), shape={"dta": (2, 20)})


def test_compiled_edges_enter_the_member_that_reads_them():
    """A residual add fused after a convolution head: r1 feeds the convolution (the head) and
    the add (a body member); each edge enters the member reading it."""
    S = sg.sym
    x = S.Activation(S.Convolution(S.var("data"), kernel=(3, 3), num_filter=4, name="c1"),
                     act_type="relu", name="r1")
    y = S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c2")
    net = S.FullyConnected(S.Flatten(S.Activation(x + y, act_type="relu", name="r2")),
                           num_hidden=3, name="fc")
    exe = S.SoftmaxOutput(net, name="sm").simple_bind(sg.cpu(), data=(2, 3, 8, 8))
    src = sg.viz.plot_network(exe, shape={"data": (2, 3, 8, 8)}).source
    labels = dict(re.findall(r"^\s*(n\d+(?:_\d+)?) \[label=\"([^\"]*)\"", src, re.M))
    edges = re.findall(r"(n\d+(?:_\d+)?) -> (n\d+(?:_\d+)?)(?! \[arrowhead)", src)
    r1 = [a for a, _ in edges if labels.get(a, "").startswith("Activation\nr1")]
    readers = sorted(labels[b].split("\n")[0] for a, b in edges if a in r1)
    assert readers == ["Convolution", "broadcast_add"], (readers, src)


def test_plot_network_repeated_names_warns_and_draws() -> None:
    """MXNet's test_viz case: two layers named ``fc`` are drawn as two nodes (MXNet draws one,
    making the cycle it warns about), with MXNet's warning and ``shape(dtype)`` edges."""
    pytest.importorskip("graphviz")
    net = sg.sym.FullyConnected(sg.sym.var("data"), name="fc", num_hidden=128)
    net = sg.sym.Activation(net, name="relu1", act_type="relu")
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(net, name="fc", num_hidden=10), name="out")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dot = sg.viz.plot_network(net, shape={"data": (100, 200)}, dtype={"data": np.float32})
    assert [str(w.message).split(": ")[-1] for w in caught] == ["fc,fc_bias,fc_weight"]
    assert dot.source.count("FullyConnected") == 2
    for label in ("200(float32)", "128(float32)", "10(float32)"):
        assert f'label="{label}"' in dot.source
    with pytest.raises(sg.GraphError, match="duplicate argument name 'fc_weight'"):
        net.simple_bind(sg.cpu(), data=(100, 200))
