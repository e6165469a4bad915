"""fuse_elementwise: maximal groups, GEMM epilogues, several outputs, no cycles, no recompute."""
import numpy as np

import symgraph as sg
from symgraph.core import attrs as core_attrs
from symgraph.core.graph import Graph
from symgraph.compiler.passes.fuse_elementwise import fuse_elementwise
from symgraph.compiler.passes.verify import verify

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


def test_gemm_head_input_from_an_elementwise_node_stays_outside_its_group() -> None:
    """tanh's only reader is the GEMM head: it must not be moved into the head's group
    (regression: the head's input was then defined inside the fused node itself)."""
    fc = sg.sym.FullyConnected(sg.sym.tanh(x), num_hidden=5, name="fc")
    sym = sg.sym.relu(fc) * 2.0

    def ref(v):
        return [2 * np.maximum(np.tanh(v["x"]) @ v["fc_weight"].T + v["fc_bias"], 0)]
    out = _check(sym, ref, x=(4, 3))
    heads = [n for n in _fused(out) if n.attrs["head"] is not None]
    assert len(heads) == 1 and "tanh" not in heads[0].attrs["members"]


def test_pooling_takes_an_elementwise_epilogue() -> None:
    """Ops marked ``epilogue`` (pooling) head a group like GEMMs do."""
    pooled = sg.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    sym = sg.sym.relu(pooled) * 3.0

    def ref(v):
        p = v["x"].reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5))
        return [np.maximum(p, 0) * 3]
    out = _check(sym, ref, x=(2, 3, 4, 4))
    (node,) = _fused(out)
    assert node.attrs["head"][0] == "Pooling" and ops_of(out) == ["_fused"]


def test_no_cycle_through_another_member_of_a_group() -> None:
    """A node whose outside input sits in a group one of whose *other* members reads this
    node's group: the node-level check let it join and the two fused kernels read each other
    (found by random graphs); fusion now regroups with group-level checks. Values against
    numpy in float64."""
    import numpy as np

    import symgraph as sg
    S = sg.sym
    x0, x1, x2 = (S.var(n) for n in ("x0", "x1", "x2"))
    a = x2 + x1
    b = x1 - x1
    c = S.add_n(x0, a, x2)
    d = S.sigmoid(-S.add_n(a, b, c))
    f = S.FullyConnected(c, num_hidden=4, name="fc4")
    net = S.Group([d, S.tanh(S.add_n(b, f))])
    rng = np.random.default_rng(0)
    v = {k: rng.normal(size=(2, 4)) for k in ("x0", "x1", "x2")}
    w, bias = rng.normal(size=(4, 4)), rng.normal(size=4)
    exe = net.simple_bind(sg.cpu(), x0=(2, 4), x1=(2, 4), x2=(2, 4))
    for k, val in {**v, "fc4_weight": w, "fc4_bias": bias}.items():
        exe.arg_dict[k][:] = val
    got = [o.asnumpy() for o in exe.forward(is_train=True)]
    av, bv = v["x2"] + v["x1"], v["x1"] - v["x1"]
    cv = v["x0"] + av + v["x2"]
    want = [1 / (1 + np.exp(av + bv + cv)), np.tanh(bv + cv @ w.T + bias)]
    for g, wv in zip(got, want):
        np.testing.assert_allclose(g, wv, rtol=1e-5, atol=1e-6)


def test_fused_attrs_are_made_sorted_and_equal_a_parsed_copy() -> None:
    """Fusion builds each kernel's attrs with ``Attrs.from_sorted`` (no sort): the keys must be
    written in order, or hashing and equality (CSE keys, compile caches) would differ from
    ``Attrs`` made the ordinary way."""
    fc = sg.sym.FullyConnected(x, num_hidden=5, name="fc")
    sym = sg.sym.Group([sg.sym.relu(fc) * 2.0, sg.sym.exp(x) + 1.0])
    out = fuse_elementwise(declared(sym, x=(4, 3)))
    assert len(_fused(out)) == 2
    for node in _fused(out):
        assert list(node.attrs) == sorted(node.attrs)
        again = core_attrs.Attrs(dict(node.attrs))
        assert again == node.attrs and hash(again) == hash(node.attrs)
