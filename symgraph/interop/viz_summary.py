"""``sg.viz.print_summary``: MXNet 1.9.1's layer table (layer, output shape, parameter count,
previous layers), with or without input shapes.

The rows follow MXNet's: the graph's first variable (its data input), then every op node in
depth-first order, named ``name(op)``; output shapes drop the batch axis; a layer reading
several earlier layers lists the others on rows of their own. Parameter counts are the sizes
of the learnable variables a layer reads (not its auxiliary states, not the data), so they are
right for every op, where MXNet's own table guesses from the op type (a FullyConnected layer
reading a 4-d input counts only its channels there). Without shapes, a parameter whose shape
its op's attributes decide (an Embedding's table, a bias) is still counted, as MXNet does.
"""
from __future__ import annotations

from math import prod
from typing import Any, Optional, Sequence

from ..core.graph import Entry, Node, aux_variables, topo_order
from ..core.registry import get_op
from ..core.types.infer_shape import infer_partial_shapes, symbol_shapes

__all__ = ["print_summary", "summary_rows"]

Row = tuple[str, str, int, list[str]]


def entry_shapes(symbol: Any, shape: Optional[dict]) -> dict[Entry, tuple]:
    """Every entry's shape from ``shape`` (ShapeError when it leaves one undecided, as MXNet's
    "Input shape is incomplete"); without ``shape``, those the attributes alone decide.
    Duplicate variable names are allowed here (``plot_network`` warns about them)."""
    if shape:
        given = {k: tuple(v) for k, v in shape.items()}
        return symbol_shapes(symbol, (), given, False, check_names=False)[0]
    return infer_partial_shapes(symbol.graph(), {})[0]


def _is_data(node: Node, shape: Optional[dict], first: Optional[Node]) -> bool:
    """A variable that feeds data rather than a parameter: a given shape, the graph's first
    variable, or a label."""
    return node is first or node.name in (shape or {}) or node.name.endswith("label")


def _out_shape(node: Node, shapes: dict) -> str:
    """``AxB`` without the batch axis; a node with several visible outputs lists each
    distinct shape and their number (``1 (10 outputs)``), where MXNet leaves the cell empty."""
    n = 1 if node.is_variable else get_op(node.op).num_visible_outputs(node.attrs)
    found = [shapes.get(e) for e in node.entries()[:n]]
    texts = list(dict.fromkeys("x".join(map(str, s[1:])) for s in found if s is not None))
    return ", ".join(texts) + (f" ({n} outputs)" if n > 1 and texts else "")


def summary_rows(symbol: Any, shape: Optional[dict] = None) -> list[Row]:
    """``(layer(type), output shape, parameter count, previous layers)`` per row.

    >>> net = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=4, name="fc")
    >>> [r[:3] for r in summary_rows(net, {"data": (1, 3)})]
    [('data(null)', '3', 0), ('fc(FullyConnected)', '4', 16)]
    """
    shapes = entry_shapes(symbol, shape)
    nodes = topo_order(symbol.outputs_)
    aux = aux_variables(nodes)
    first = nodes[0] if nodes and nodes[0].is_variable else None
    rows: list[Row] = []
    if first is not None:
        rows.append((f"{first.name}(null)", _out_shape(first, shapes), 0, []))
    for node in nodes:
        if node.is_variable:
            continue
        params = sum(prod(shapes[e]) for e in node.inputs
                     if e.node.is_variable and e.node not in aux and e in shapes
                     and not _is_data(e.node, shape, first))
        prev = [e.node.name for e in node.inputs if not e.node.is_variable or e.node is first]
        rows.append((f"{node.name}({node.op})", _out_shape(node, shapes), int(params), prev))
    return rows


def print_summary(symbol: Any, shape: Optional[dict] = None, line_length: int = 120,
                  positions: Sequence[float] = (0.44, 0.64, 0.74, 1.0)) -> str:
    """Print (and return) MXNet's layer table: layer, output shape, parameters, inputs.

    ``shape`` (``{'data': (1, 784)}``) adds output shapes and the parameters that depend on
    them; ``positions`` are the columns' right ends, as fractions of ``line_length`` or as
    characters when above 1.

    >>> net = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=4, name="fc")
    >>> text = print_summary(net, {"data": (1, 3)})  # doctest: +ELLIPSIS
    ___...
    >>> text.splitlines()[-2]
    'Total params: 16'
    """
    cols = [int(line_length * p) if positions[-1] <= 1 else int(p) for p in positions]

    def fmt(fields: Sequence[Any]) -> str:
        line = ""
        for f, end in zip(fields, cols):
            line = (line + str(f))[:end].ljust(end)
        return line.rstrip()
    rows = summary_rows(symbol, shape)
    lines = ["_" * line_length, fmt(["Layer (type)", "Output Shape", "Param #",
                                     "Previous Layer"]), "=" * line_length]
    for i, (layer, out, params, prev) in enumerate(rows):
        lines.append(fmt([layer, out, params, prev[0] if prev else ""]))
        lines.extend(fmt(["", "", "", p]) for p in prev[1:])
        lines.append(("=" if i == len(rows) - 1 else "_") * line_length)
    lines.append(f"Total params: {sum(r[2] for r in rows)}")
    lines.append("_" * line_length)
    text = "\n".join(lines)
    print(text)
    return text
