"""2-D convolutions, and the layers around them, in channels-last layout (NHWC): ``Graph ->
Graph``, for a backend whose convolution library runs NHWC data best (:class:`Policy`).

Runs on the forward graph, before autodiff (a backend's ``FORWARD_PIPELINE``); autodiff then
gives the gradients in the same layout.

* cuDNN (:data:`CUDNN`): its convolution kernels are faster on NHWC data than on NCHW, and its
  tensor-core kernels for float16 and bfloat16 need it. float32 convolutions stay NCHW: on the
  H100, cuDNN's FMA kernels for NHWC float32 were slower than its NCHW ones (ResNet-20's
  training step 5.6 against 3.9 ms; docs/performance.md).
* oneDNN (:data:`ONEDNN`, the compiled CPU backend): its kernels run NHWC float32 data in place
  as fast as its own blocked layout, where NCHW data is reordered into that layout and back on
  every call (ResNet-18 inference at batch 32: about 240 of 1190 ms). Pooling passes NHWC
  values through (the backend pools them in place), and the graph converts only when its
  convolutions' data outweighs their weights: the weights' transposes cost about what the
  data's reorders save (ResNet-18 at batch 1 keeps NCHW).

Requires: the graph's types. Converts a 2-D ``Convolution`` over NCHW data of a dtype the
policy takes and of known shape to ``layout='NHWC'`` when its data is NHWC already or its
output reaches another convolution through the layers below (a lone convolution would pay two
transposes for one call). Its data comes in transposed (once per value) and its OIHW weight
transposed to OHWI. A converted value stays NHWC through the layers that do not care where the
channels are: elementwise ops (and AMP's casts) whose inputs all have its shape,
``BatchNorm`` over axis 1, which becomes axis 3, and (where the policy says) 2-D ``Pooling``.
Any other reader, and a graph output, gets the NCHW value back through one transpose per value.

Guarantees: every output keeps its value (up to the order of float sums), its name and its
type; variables are untouched (weights stay OIHW); every node not converted is the same node
on the NCHW values it read before.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable, Optional

import numpy as np

from ...core.attrs import Attrs, parse_attrs
from ...core.graph import Entry, Graph, Node
from ...core.registry import (BROADCAST, CHANNEL_AXIS, CONVOLUTION, ELEMWISE, POSITIONAL, WINDOW,
                              get_op)
from ...core.types.table import types_of

TO_LAST, TO_FIRST = (0, 2, 3, 1), (0, 3, 1, 2)


@dataclass(frozen=True)
class Policy:
    """Which convolutions a backend's library wants NHWC. ``dtype``: whether a convolution
    over data of this dtype converts; ``windows``: Pooling takes NHWC values; ``weigh``:
    convert only when the convertible convolutions' data has more elements than their
    weights (each weight is transposed on every run)."""

    dtype: Callable[[np.dtype], bool]
    windows: bool = False
    weigh: bool = False


CUDNN = Policy(lambda d: d.itemsize < 4)
ONEDNN = Policy(lambda d: d == np.float32, windows=True, weigh=True)


def _transpose(e: Entry, axes: tuple, name: str) -> Entry:
    attrs = parse_attrs(get_op("transpose").params, {"axes": axes}, name)
    return Entry(Node("transpose", name, attrs, (e,)))


class _Layouts:
    """The rebuilt graph's entries of each old entry: NCHW (``first``) and NHWC (``last``)."""

    def __init__(self, graph: Graph, policy: Policy) -> None:
        self.types, self.policy = types_of(graph), policy
        self.first: dict[Entry, Entry] = {}
        self.last: dict[Entry, Entry] = {}
        self.feeds_conv = _feeding_convolutions(graph, policy)

    def nchw(self, e: Entry) -> Entry:
        got = self.first.get(e)
        if got is None:  # a converted value read by a layer that needs NCHW: the transpose
            # takes the old node's name (its NHWC node has another), so outputs keep theirs
            name = f"{e.node.name}_output{e.index}" if e.index else e.node.name
            got = self.first[e] = _transpose(self.last[e], TO_FIRST, name)
        return got

    def nhwc(self, e: Entry) -> Entry:
        got = self.last.get(e)
        if got is None:
            got = self.last[e] = _transpose(self.first[e], TO_LAST, f"{e.node.name}_nhwc_in")
        return got

    def four_d(self, e: Entry) -> bool:
        s = self.types.shape(e)
        return s is not None and len(s) == 4

    def convertible(self, node: Node) -> bool:
        """Whether the policy takes convolution ``node`` (2-D, NCHW, its data's dtype)."""
        a, data = node.attrs, node.inputs[0]
        return (len(a["kernel"]) == 2 and a["layout"] in (None, "NCHW") and self.four_d(data)
                and self.policy.dtype(np.dtype(self.types.dtype(data))))

    def convert(self, node: Node) -> Optional[Node]:
        """The NHWC node standing for ``node`` (its outputs recorded), or None."""
        a, ins, rule = node.attrs, node.inputs, _rule(node, self.policy)
        if rule == CONVOLUTION:
            if not self.convertible(node) or \
                    not (ins[0] in self.last or node in self.feeds_conv):
                return None
            new_ins = (self.nhwc(ins[0]),
                       _transpose(self.nchw(ins[1]), TO_LAST, f"{node.name}_weight_ohwi"),
                       *[self.nchw(e) for e in ins[2:]])
            attrs = Attrs({**a, "layout": "NHWC"})
        elif rule == CHANNEL_AXIS:
            if ins[0] not in self.last or a["axis"] % 4 != 1:
                return None
            new_ins = (self.last[ins[0]], *[self.nchw(e) for e in ins[1:]])
            attrs = Attrs({**a, "axis": 3})
        elif rule == WINDOW:  # pooled in place, never transposed to be pooled
            if ins[0] not in self.last or a["layout"] not in (None, "NCHW"):
                return None
            new_ins, attrs = (self.last[ins[0]],), Attrs({**a, "layout": "NHWC"})
        elif rule == POSITIONAL:
            shapes = {self.types.shape(e) for e in ins}
            if not any(e in self.last for e in ins) or len(shapes) != 1:
                return None
            new_ins, attrs = tuple(self.nhwc(e) for e in ins), a
        else:
            return None
        new = Node(node.op, f"{node.name}_nhwc", attrs, new_ins, node.extra)
        olds, news = node.entries(), new.entries()
        self.last[olds[0]] = news[0]
        for old, e in zip(olds[1:], news[1:]):  # BatchNorm's statistics are vectors
            (self.first if rule == CHANNEL_AXIS else self.last)[old] = e
        return new


def _rule(node: Node, policy: Policy) -> str | None:
    """``node``'s channels-last rule (``OpDef.layout``; elementwise and broadcast ops are
    positional; windows only where the policy pools NHWC)."""
    op = get_op(node.op)
    if op.pattern in (ELEMWISE, BROADCAST):
        return POSITIONAL
    return op.layout if op.layout != WINDOW or policy.windows else None


def _layout_free(node: Node, policy: Policy) -> bool:
    """Whether an NHWC value may pass through ``node`` (a channel-axis op: by moving its axis)."""
    return _rule(node, policy) in (POSITIONAL, CHANNEL_AXIS, WINDOW)


def _feeding_convolutions(graph: Graph, policy: Policy) -> set[Node]:
    """The nodes whose output reaches a Convolution through layout-free nodes only."""
    users = graph.consumers()
    feeds: set[Node] = set()
    for node in reversed(graph.nodes()):
        if any(_rule(u, policy) == CONVOLUTION or u in feeds and _layout_free(u, policy)
               for u in users[node]):
            feeds.add(node)
    return feeds


def _outweighed(lay: _Layouts, convs: list[Node]) -> bool:
    """Whether the convolutions' weights have more elements than their data."""
    size = lambda e: prod(lay.types.shape(e) or (0,))  # noqa: E731
    return sum(size(n.inputs[1]) for n in convs) > sum(size(n.inputs[0]) for n in convs)


def channel_last(graph: Graph, policy: Policy = CUDNN) -> Graph:
    """``graph`` with its 2-D convolutions (and what follows them) in NHWC; see the module."""
    convs = [n for n in graph.nodes() if not n.is_variable and _rule(n, policy) == CONVOLUTION]
    if not convs:
        return graph
    lay = _Layouts(graph, policy)
    if policy.weigh and _outweighed(lay, [n for n in convs if lay.convertible(n)]):
        return graph
    for node in graph.nodes():
        if node.is_variable or lay.convert(node) is None:
            ins = tuple(lay.nchw(e) for e in node.inputs)
            new = node
            if ins != node.inputs:
                new = node.with_inputs(ins)
                lay.types.copy(node, new)
            for old, e in zip(node.entries(), new.entries()):
                lay.first[old] = e
    if not lay.last:
        return graph
    return Graph(tuple(lay.nchw(e) for e in graph.outputs), graph.types)
