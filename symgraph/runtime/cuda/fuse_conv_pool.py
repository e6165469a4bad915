"""Convolution -> activation -> max pooling into one ``_conv_act_pool`` op: ``Graph -> Graph``.

Runs on the forward graph, before autodiff (the fused op has its own gradient rule), because the
gain is a tensor that is never stored: the convolution's output, which a LeNet-style first layer
makes 4x larger than its pooled result (and larger than anything else in the network), is
neither written by the forward nor re-read by the backward (see ``ops/conv_act_pool.py``).

Requires: the graph's types (``Graph.types``; without shapes nothing fires). Fires when

* a ``Pooling`` the fused op can stand for (``ops/conv_act_pool.pool_window``) reads
* an activation the fused op knows (an op whose ``OpDef.activation`` is in ``ACT_GRAD``; or
  none) that reads
* a ``Convolution`` small enough for it (``fits_convolution``: its receptive field lives in a
  thread's registers),

and nothing else reads the convolution's or the activation's output. Guarantees: every other
node, and every output's value, unchanged.
"""
from __future__ import annotations

from typing import Optional

from ...core.attrs import Attrs
from ...core.graph import Graph, Node, rewrite
from ...compiler.ops.conv_act_pool import ACT_GRAD, CONVOLUTION, POOLING, fits_convolution, pool_window
from ...core.registry import get_op
from ...core.types.table import types_of


def _activation(node: Node) -> Optional[str]:
    return None if node.is_variable else get_op(node.op).activation_of(node.attrs)


def _matches(graph: Graph) -> dict[str, tuple[Optional[str], tuple[int, int]]]:
    """Pooling node name -> (activation, window) for every chain that fuses."""
    users = graph.consumers()
    outputs = {e.node for e in graph.outputs}
    sc = types_of(graph)
    found = {}
    for pool in graph.nodes():
        if pool.op != POOLING:
            continue
        act_node: Optional[Node] = pool.inputs[0].node
        act = _activation(act_node)
        if act is not None:
            conv = act_node.inputs[0].node
        else:
            conv, act_node = act_node, None
        chain = [n for n in (conv, act_node) if n is not None]
        if act not in ACT_GRAD or conv.op != CONVOLUTION \
                or not fits_convolution(conv.attrs, sc.shape(conv.inputs[0])):
            continue
        if any(n in outputs or len(users[n]) != 1 for n in chain):
            continue
        window = pool_window(pool.attrs, sc.shape(conv.entries()[0]))
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
