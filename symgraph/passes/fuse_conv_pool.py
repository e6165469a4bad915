"""Convolution -> activation -> max pooling into one ``_conv_act_pool`` op: ``Graph -> Graph``.

Runs on the forward graph, before autodiff (the fused op has its own gradient rule), because the
gain is a tensor that is never stored: the convolution's output, which a LeNet-style first layer
makes 4x larger than its pooled result (and larger than anything else in the network), is
neither written by the forward nor re-read by the backward (see ``ops/conv_act_pool.py``).

Requires: the graph's types (``Graph.types``; without shapes nothing fires). Fires when

* a max ``Pooling`` with a 2-D window equal to its stride, no padding, and 'valid' rounding (or
  'full' on sizes it divides) reads
* an activation the fused op knows (``Activation`` or the same-named unary op; or none) that reads
* a 2-D, ungrouped, undilated NCHW ``Convolution`` whose receptive field (input channels x
  kernel) has at most ``MAX_FIELD`` values, so that it lives in a thread's registers,

and nothing else reads the convolution's or the activation's output. Guarantees: every other
node, and every output's value, unchanged.
"""
from __future__ import annotations

from typing import Optional

from ..attrs import Attrs
from ..graph import Graph, Node, rewrite
from ..ops.conv_act_pool import ACT_GRAD
from ..typetable import TypeTable, types_of

MAX_FIELD = 32
"""Largest input-channels x kernel-area the fused kernels hold per thread (a 3x3 kernel on up to
3 channels); wider convolutions are left to cuDNN."""

# The activations the fused op implements, by how the graph spells them.
ACTIVATIONS = {"Activation": lambda a: a["act_type"], "relu": lambda a: "relu",
               "sigmoid": lambda a: "sigmoid", "tanh": lambda a: "tanh"}


def _pool_window(pool: Node, conv_out: tuple) -> Optional[tuple[int, int]]:
    """The window of a pooling the fused op can stand for, else None."""
    a = pool.attrs
    k = tuple(a["kernel"])
    if a["pool_type"] != "max" or a["global_pool"] or len(k) != 2 or tuple(a["stride"]) != k:
        return None
    if any(a["pad"]) or a["layout"] not in (None, "NCHW"):
        return None
    if a["pooling_convention"] == "full" and any(o % w for o, w in zip(conv_out[2:], k)):
        return None
    return k


def _conv_ok(conv: Node, sc: TypeTable) -> bool:
    if conv.op != "Convolution":
        return False
    a, data = conv.attrs, sc.shape(conv.inputs[0])
    return (data is not None and len(a["kernel"]) == 2
            and a["num_group"] == 1 and not any(d != 1 for d in a["dilate"])
            and a["layout"] in (None, "NCHW")
            and data[1] * a["kernel"][0] * a["kernel"][1] <= MAX_FIELD)


def _matches(graph: Graph) -> dict[str, tuple[Optional[str], tuple[int, int]]]:
    """Pooling node name -> (activation, window) for every chain that fuses."""
    users = graph.consumers()
    outputs = {e.node for e in graph.outputs}
    sc = types_of(graph)
    found = {}
    for pool in graph.nodes():
        if pool.op != "Pooling":
            continue
        act_node: Optional[Node] = pool.inputs[0].node
        act = None
        if act_node.op in ACTIVATIONS:
            act = ACTIVATIONS[act_node.op](act_node.attrs)
            conv = act_node.inputs[0].node
        else:
            conv, act_node = act_node, None
        chain = [n for n in (conv, act_node) if n is not None]
        if act not in ACT_GRAD or not _conv_ok(conv, sc):
            continue
        if any(n in outputs or len(users[n]) != 1 for n in chain):
            continue
        window = _pool_window(pool, sc.shape(conv.entries()[0]))
        if window is not None:
            found[pool.name] = (act, window)
    return found


def fuse_conv_pool(graph: Graph) -> Graph:
    """Replace each matching Convolution-activation-Pooling chain by ``_conv_act_pool``."""
    found = _matches(graph)
    if not found:
        return graph

    def fuse(node: Node) -> Optional[Node]:
        if node.name not in found:
            return None
        act, window = found[node.name]
        chain = [node.inputs[0].node]
        if act is not None:
            chain.insert(0, chain[0].inputs[0].node)
        conv = chain[0]
        names = [n.name for n in chain] + [node.name]
        attrs = Attrs({**conv.attrs, "act_type": act, "pool_kernel": window})
        return Node("_conv_act_pool", "_".join(names), attrs, conv.inputs, conv.extra)
    return rewrite(graph, fuse)
