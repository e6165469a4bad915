"""``sg.viz``: ``plot_network`` (a ``graphviz.Digraph``) and ``print_summary`` (a table).

``plot_network`` takes a Symbol, or a bound Executor to show the optimised forward graph, where
each fused node (``_fused``) becomes a cluster listing its member ops. Labels and colours come
from the registry (the op's non-default attributes, its fusion pattern kind), so a new op needs
no code here. ``graphviz`` is imported only when plotting.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

from ..core import provenance
from ..core.attrs import format_value
from ..core.graph import Entry, Node, topo_order
from ..core.registry import get_op
from .viz_render import digraph_class
from .viz_summary import entry_shapes, print_summary, summary_rows

__all__ = ["plot_network", "print_summary"]

# Fill colours by fusion pattern kind (the registry's classification of ops).
COLORS = {"gemm": "#fb8072", "opaque": "#fdb462", "reduce": "#80b1d3", "injective": "#b3de69",
          "elementwise": "#ffffb3", "broadcast": "#bebada", "variable": "#8dd3c7",
          "fused": "#fccde5"}
PARAM_SUFFIXES = ("_weight", "_bias", "_gamma", "_beta", "_moving_mean", "_moving_var",
                  "_running_mean", "_running_var")


def _graph_and_shapes(obj: Any, shape: Optional[dict],
                      dtype: Optional[dict]) -> tuple[list[Node], dict, dict]:
    """Nodes to draw, ``{Entry: shape}`` and ``{Entry: dtype}`` (empty when not asked for).
    A symbol's shapes come from ``shape``: ShapeError (as ``infer_shape``'s) when it names no
    input or leaves a shape undecided (MXNet: "Input shape is incomplete"), rather than a
    picture with unknown sizes."""
    sched = getattr(obj, "schedule", None)
    if sched is not None:  # a bound executor: its optimised forward phase
        fwd = [st.node for st in sched.steps[:sched.n_forward_steps]]
        nodes = topo_order([e for n in fwd for e in n.entries()])
        shapes = {e: sched.shapes[s] for e, s in sched.slot_of.items()}
        return nodes, shapes, {}
    nodes = topo_order(obj.outputs_)
    _warn_repeated_names(nodes)
    types: dict = {}
    if dtype is not None:
        from ..core.types.infer_type import symbol_types
        types = symbol_types(obj, (), dtype)[0]
    return nodes, entry_shapes(obj, shape) if shape else {}, types


def _warn_repeated_names(nodes: Sequence[Node]) -> None:
    """MXNet's RuntimeWarning for names that several nodes carry: edges are drawn between
    node ids here, so the picture stays right, but such a graph cannot be bound."""
    seen: set[str] = set()
    repeated = sorted({n.name for n in nodes if n.name in seen or seen.add(n.name)})
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this "
                      "may result in cyclic graph. Repeated names: " + ",".join(repeated),
                      RuntimeWarning, stacklevel=3)


def _is_hidden_param(node: Node, hide_weights: bool) -> bool:
    return hide_weights and node.is_variable and node.name.endswith(PARAM_SUFFIXES)


def _label(node: Node) -> str:
    """Op name, node name, then the attributes that differ from the op's defaults."""
    if node.is_variable:
        return node.name
    opdef = get_op(node.op)
    lines = [node.op if node.op == node.name else f"{node.op}\n{node.name}"]
    for key, value in node.attrs.items():
        param = opdef.params.get(key)
        if param is not None and param.default == value or key in ("exprs", "shapes", "head"):
            continue
        lines.append(f"{key}={format_value(value)}")
    return "\n".join(lines)


def _color(node: Node) -> str:
    if node.is_variable:
        return COLORS["variable"]
    return COLORS.get(get_op(node.op).pattern, COLORS["opaque"])


RASTER_FORMATS = ("png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff")


def _edge_label(shapes: dict, types: dict, e: Entry) -> str:
    """The shape without the batch axis, as MXNet draws it (a parameter has no batch axis, so
    its edge shows the whole shape: ``fc1_weight``: 128x784, not 784), then ``(float32)``
    when dtypes were asked for."""
    s = shapes.get(e)
    text = ""
    if s:
        whole = len(s) == 1 or (e.node.is_variable and e.node.name.endswith(PARAM_SUFFIXES))
        text = "x".join(str(d) for d in (s if whole else s[1:]))
    t = types.get(e)
    return text + (f"({t.name})" if t is not None else "")


def plot_network(symbol: Any, title: str = "plot", save_format: str = "pdf",
                 shape: Optional[dict] = None, dtype: Any = None,
                 node_attrs: Optional[dict] = None, hide_weights: bool = True,
                 dpi: int = 150) -> Any:
    """A ``graphviz.Digraph`` of ``symbol`` (or an Executor's optimised forward graph).

    With ``shape`` (``{'data': (1, 1, 28, 28)}``) edges carry the tensor shape without the
    batch axis, as MXNet draws them (parameters show their whole shape); with ``dtype``
    (``{'data': np.float32}``) its type follows it. Names several nodes share are warned
    about (RuntimeWarning), as MXNet does. ``hide_weights``
    leaves parameter variables out. Raster formats (PNG...) are drawn at ``dpi`` (not in
    MXNet's signature; Graphviz's default of 96 is blurry for slides). A fused group is a
    cluster titled by the user-level nodes and ops it holds (``relu1 (Activation) + ...``).
    """
    try:
        Digraph = digraph_class()  # refuses rendering without Graphviz's dot by name
    except ImportError as exc:
        raise ImportError("plot_network needs the graphviz package: pip install "
                          "'symgraph[viz]'") from exc
    nodes, shapes, types = _graph_and_shapes(symbol, shape, dtype)
    style = {"shape": "box", "fixedsize": "false", "style": "filled", "fontsize": "10"}
    style.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    dot.attr(rankdir="BT", label=title)
    if save_format in RASTER_FORMATS:
        dot.attr(dpi=str(dpi))
    dot.attr("edge", fontsize="9")
    ids = {n: f"n{i}" for i, n in enumerate(nodes)}
    ops = provenance.op_table(nodes)
    # node -> (ids edges enter by input index, ids edges leave by output index): one id, or
    # the members of a fused group that read and compute them
    ends: dict[Node, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for node in nodes:
        if _is_hidden_param(node, hide_weights):
            continue
        if node.op == "_fused":
            ends[node] = _fused_cluster(dot, node, ids[node], style, ops)
            continue
        attrs = dict(style, fillcolor=_color(node))
        if node.is_variable:
            attrs["shape"] = "oval"
        dot.node(ids[node], _label(node), **attrs)
        ends[node] = ((ids[node],), (ids[node],))
    for node in nodes:
        if node not in ends:
            continue
        ins = ends[node][0]
        for i, e in enumerate(node.inputs):
            if e.node in ends:
                label = _edge_label(shapes, types, e)
                outs = ends[e.node][1]
                dot.edge(outs[min(e.index, len(outs) - 1)], ins[min(i, len(ins) - 1)],
                         **({"label": label} if label else {}))
    return dot


TITLE_WIDTH = 60  # characters per line of a cluster title (a long group made a wide picture)


def _wrap(parts: Sequence[str], width: int) -> str:
    """Join ``parts`` with `` + ``, breaking lines between parts, never inside one."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " + " + part
        else:
            lines.append(part if not lines else "+ " + part)
    return "\n".join(lines)


def _fused_cluster(dot: Any, node: Node, nid: str, style: dict,
                   ops: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Draw a fused node as a cluster of its member ops, titled by the user-level nodes it
    holds; return per input the id of the member reading it (``in_members``) and per output
    the id of the member computing it (``out_members``); hand-made nodes that do not say
    enter at the first member and leave from the last."""
    members = provenance.members(node) or (("_fused", node.name),)
    head = node.attrs["head"]
    title = _wrap(provenance.title(node, ops).split(" + "), TITLE_WIDTH)
    with dot.subgraph(name=f"cluster_{nid}") as sub:
        sub.attr(label="", style="rounded,filled", fillcolor=COLORS["fused"])
        ids = [f"{nid}_{i}" for i in range(len(members))]
        for i, (mid, (op, name)) in enumerate(zip(ids, members)):
            color = COLORS["gemm"] if head is not None and i == 0 else COLORS["elementwise"]
            label = op if name == "?" else f"{op}\n{name}"
            sub.node(mid, label, **dict(style, fillcolor=color))
        for a, b in zip(ids, ids[1:]):
            sub.edge(a, b, style="dashed", arrowhead="none")
        # The title is a text node beside the first member, not the cluster's label: edges
        # enter and leave through a cluster's top and bottom, where a label sits under them.
        with sub.subgraph() as row:
            row.attr(rank="same")
            row.node(f"{nid}_title", f"{title}\n(fused: {len(members)} ops)", shape="plaintext",
                     fontsize="10")
            row.node(ids[0])
    return _pick(ids, node.attrs.get("in_members"), 0), \
        _pick(ids, node.attrs.get("out_members"), -1)


def _pick(ids: list[str], indices: Any, default: int) -> tuple[str, ...]:
    """The member ids at ``indices``, or the one at ``default`` when the node does not say."""
    return tuple(ids[i] for i in indices or () if 0 <= i < len(ids)) or (ids[default],)
