"""2-D convolutions, and the layers around them, in channels-last layout (NHWC): ``Graph ->
Graph``.

Runs on the forward graph, before autodiff (the CUDA backend's ``FORWARD_PIPELINE``): cuDNN's
convolution kernels are faster on NHWC data than on NCHW, and its tensor-core kernels for
float16 and bfloat16 need it; autodiff then gives the gradients in the same layout.

Requires: the graph's types. Converts a 2-D ``Convolution`` over narrow NCHW data (float16,
bfloat16) of known shape to ``layout='NHWC'`` when its data is NHWC already or its output
reaches another convolution through the layers below (a lone convolution would pay two
transposes for one call). float32 convolutions stay NCHW: on the H100, cuDNN's FMA kernels
for NHWC float32 were slower than its NCHW ones (ResNet-20's training step 5.6 against 3.9 ms;
docs/performance.md). Its data comes in transposed (once per value) and its OIHW weight
transposed to OHWI. A converted value stays NHWC through the layers that do not care where the
channels are: elementwise ops (and AMP's casts) whose inputs all have its shape, and
``BatchNorm`` over axis 1, which becomes axis 3. Any other reader, and a graph output, gets
the NCHW value back through one transpose per value.

Guarantees: every output keeps its value (up to the order of float sums), its name and its
type; variables are untouched (weights stay OIHW); every node not converted is the same node
on the NCHW values it read before.
"""
from __future__ import annotations

from typing import Optional

from ...core.attrs import Attrs, parse_attrs
from ...core.graph import Entry, Graph, Node
from ...core.registry import BROADCAST, CHANNEL_AXIS, CONVOLUTION, ELEMWISE, POSITIONAL, get_op
from ...core.types.table import types_of

TO_LAST, TO_FIRST = (0, 2, 3, 1), (0, 3, 1, 2)


def _transpose(e: Entry, axes: tuple, name: str) -> Entry:
    attrs = parse_attrs(get_op("transpose").params, {"axes": axes}, name)
    return Entry(Node("transpose", name, attrs, (e,)))


class _Layouts:
    """The rebuilt graph's entries of each old entry: NCHW (``first``) and NHWC (``last``)."""

    def __init__(self, graph: Graph) -> None:
        self.types = types_of(graph)
        self.first: dict[Entry, Entry] = {}
        self.last: dict[Entry, Entry] = {}
        self.feeds_conv = _feeding_convolutions(graph)

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

    def convert(self, node: Node) -> Optional[Node]:
        """The NHWC node standing for ``node`` (its outputs recorded), or None."""
        a, ins, rule = node.attrs, node.inputs, _rule(node)
        if rule == CONVOLUTION:
            if len(a["kernel"]) != 2 or a["layout"] not in (None, "NCHW") \
                    or not self.four_d(ins[0]):
                return None
            if self.types.dtype(ins[0]).itemsize >= 4 or \
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


def _rule(node: Node) -> str | None:
    """``node``'s channels-last rule (``OpDef.layout``; elementwise and broadcast ops are
    positional)."""
    op = get_op(node.op)
    return POSITIONAL if op.pattern in (ELEMWISE, BROADCAST) else op.layout


def _layout_free(node: Node) -> bool:
    """Whether an NHWC value may pass through ``node`` (a channel-axis op: by moving its axis)."""
    return _rule(node) in (POSITIONAL, CHANNEL_AXIS)


def _feeding_convolutions(graph: Graph) -> set[Node]:
    """The nodes whose output reaches a Convolution through layout-free nodes only."""
    users = graph.consumers()
    feeds: set[Node] = set()
    for node in reversed(graph.nodes()):
        if any(_rule(u) == CONVOLUTION or u in feeds and _layout_free(u) for u in users[node]):
            feeds.add(node)
    return feeds


def channel_last(graph: Graph) -> Graph:
    """``graph`` with its 2-D convolutions (and what follows them) in NHWC; see the module."""
    if not any(_rule(n) == CONVOLUTION for n in graph.nodes() if not n.is_variable):
        return graph
    lay = _Layouts(graph)
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
