"""fuse_elementwise: maximal groups, GEMM epilogues, several outputs, no cycles, no recompute."""
import numpy as np

import symgraph as sg
from symgraph.graph import Graph
from symgraph.passes.fuse_elementwise import fuse_elementwise
from symgraph.passes.verify import verify

from .util import declared, ops_of, random_inputs, run_graph, train_results, assert_same

x, y, w = sg.sym.var("x"), sg.sym.var("y"), sg.sym.var("w")


def _fused(graph: Graph) -> list:
    return [n for n in graph.nodes() if n.op == "_fused"]


def _check(sym, ref, **shapes) -> Graph:
    g = declared(sym, **shapes)
    out = fuse_elementwise(g)
    verify(out)
    vals = random_inputs(g)
    want = ref({k: v.astype(np.float64) for k, v in vals.items()})
    for got, exp in zip(run_graph(out, vals), want):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)
    return out


def test_chain_with_broadcast_becomes_one_node() -> None:
    sym = (sg.sym.broadcast_mul(x, y) > 0.5) * sg.sym.exp(x)
    out = _check(sym, lambda v: [((v["x"] * v["y"]) > 0.5) * np.exp(v["x"])],
                 x=(3, 4), y=(1, 4))
    assert ops_of(out) == ["_fused"]
    node = _fused(out)[0]
    assert node.attrs["name"].startswith("fused_broadcast_mul_greater_scalar")
    assert sorted(node.attrs["members"]) == sorted(["broadcast_mul", "_greater_scalar", "exp",
                                                    "broadcast_mul"])
    assert node.attrs["shapes"] == ((3, 4),)


def test_gemm_epilogue_when_only_consumer() -> None:
    fc = sg.sym.FullyConnected(x, num_hidden=5, name="fc")
    sym = sg.sym.Activation(fc, act_type="relu")
    shapes = {"x": (4, 3)}

    def ref(v):
        return [np.maximum(v["x"] @ v["fc_weight"].T + v["fc_bias"], 0)]
    out = _check(sym, ref, **shapes)
    (node,) = _fused(out)
    assert node.attrs["head"][0] == "FullyConnected" and node.attrs["head"][2] == 3
    assert ops_of(out) == ["_fused"]


def test_gemm_with_two_consumers_keeps_its_own_step() -> None:
    fc = sg.sym.FullyConnected(x, num_hidden=5, name="fc")
    sym = sg.sym.Group([sg.sym.relu(fc), fc])
    out = _check(sym, lambda v: [np.maximum(v["x"] @ v["fc_weight"].T + v["fc_bias"], 0),
                                 v["x"] @ v["fc_weight"].T + v["fc_bias"]], x=(4, 3))
    assert "FullyConnected" in ops_of(out)
    assert all(n.attrs["head"] is None for n in _fused(out)) or not _fused(out)


def test_several_outputs_and_no_recompute() -> None:
    a = sg.sym.exp(x)
    b = sg.sym.tanh(a) * 2.0
    sym = sg.sym.Group([a, b + 1.0, sg.sym.sum(b)])
    out = _check(sym, lambda v: [np.exp(v["x"]), np.tanh(np.exp(v["x"])) * 2 + 1,
                                 (np.tanh(np.exp(v["x"])) * 2).sum()], x=(2, 3))
    (node,) = _fused(out)
    assert len(node.attrs["exprs"]) == 3  # a, b (read by sum) and b + 1
    assert len(node.attrs["members"]) == 4  # every member exactly once


def test_no_cycle_through_a_reduction() -> None:
    a = sg.sym.exp(x)
    r = sg.sym.sum(a, axis=1, keepdims=True)
    sym = sg.sym.broadcast_div(a, r) + 1.0
    out = _check(sym, lambda v: [np.exp(v["x"]) / np.exp(v["x"]).sum(1, keepdims=True) + 1],
                 x=(2, 3))
    assert ops_of(out).count("sum") == 1
    assert len(_fused(out)) == 1  # div and +1 fuse; exp stays alone (it feeds the sum)


def test_relu_backward_fuses_and_training_matches() -> None:
    net = sg.sym.FullyConnected(x, num_hidden=6, name="fc1")
    net = sg.sym.Activation(net, act_type="relu")
    net = sg.sym.FullyConnected(net, num_hidden=3, name="fc2")
    sym = sg.sym.SoftmaxOutput(net, sg.sym.var("label"), name="sm")
    on = train_results(sym, {"x": (5, 4), "label": (5,)}, True)
    off = train_results(sym, {"x": (5, 4), "label": (5,)}, False)
    assert_same(on, off)
    exe = sym.simple_bind(sg.cpu(), x=(5, 4), label=(5,))
    sch = exe.schedule
    fwd_fused = [s for s in sch.steps[:sch.n_forward_steps] if s.node.op == "_fused"]
    bwd_fused = [s for s in sch.steps[sch.n_forward_steps:] if s.node.op == "_fused"]
    # relu is fc1's epilogue; its mask (y > 0) is computed beside the backward multiply, not
    # saved from the forward kernel as a second output
    assert [len(s.outputs) for s in fwd_fused] == [1]
    assert any("_greater_scalar" in s.node.attrs["members"] for s in bwd_fused)
    text = exe.debug_str()
    assert "members:" in text and "broadcast_mul" in text and "planned peak" in text
