"""Which user-level ops and nodes a compiled step runs: names for profiles and pictures.

After fusion and autodiff a schedule step may be a ``_fused`` group (``fused_dot_greater_...``)
or a gradient node (``relu1_backward_dot0``). Users think in the nodes they built (``fc1``,
``relu1``) and their ops (``FullyConnected``, ``Activation``). An op that stands for several
graph nodes says so through ``OpDef.extra["members"]`` (``attrs -> ((op, node name), ...)``);
a gradient node's name starts with its forward node's name followed by ``_backward``
(``passes/gradient.py`` names them so). Nothing here names an op.
"""
from __future__ import annotations

from typing import Iterable

from .graph import Node
from .registry import get_op

BACKWARD = "_backward"


def members(node: Node) -> tuple[tuple[str, str], ...]:
    """``(op, node name)`` of every graph node that ``node`` runs (itself when not a group)."""
    fn = get_op(node.op).extra.get("members") if not node.is_variable else None
    return tuple(fn(node.attrs)) if fn is not None else ((node.op, node.name),)


def user_name(node_name: str) -> str:
    """The forward node a gradient node belongs to (``relu1_backward_dot0`` -> ``relu1``)."""
    return node_name.split(BACKWARD, 1)[0] if BACKWARD in node_name else node_name


def op_table(nodes: Iterable[Node]) -> dict[str, str]:
    """``{user node name: its op}`` from the forward (non-gradient) nodes among ``nodes``."""
    table: dict[str, str] = {}
    for node in nodes:
        for op, name in members(node):
            if BACKWARD not in name and name != "?":
                table.setdefault(name, op)
    return table


def user_level(node: Node, ops: dict[str, str]) -> list[tuple[str, str, bool]]:
    """``(user node, its op, is_backward)`` for each distinct user node ``node`` runs, in order;
    the op falls back to the member's own op when the forward node is unknown."""
    out: list[tuple[str, str, bool]] = []
    for op, name in members(node):
        base = user_name(name)
        item = (base, ops.get(base, op), BACKWARD in name)
        if item not in out:
            out.append(item)
    return out


def title(node: Node, ops: dict[str, str]) -> str:
    """``relu1 (Activation) + fc2 (FullyConnected)``; gradient parts read ``d relu1 (...)``."""
    parts = [f"{'d ' if bwd else ''}{name} ({op})" for name, op, bwd in user_level(node, ops)]
    return " + ".join(parts)
