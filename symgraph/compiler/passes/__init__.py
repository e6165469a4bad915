"""Graph passes, one per file, each a plain function ``Graph -> Graph``.

The pipelines below are the whole story of what runs, in order. ``SYMGRAPH_DEBUG=1`` prints the
IR after each pass; ``VERIFY`` (set by the test suite) runs the verifier after each.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ...core import config
from ...core.graph import Graph, Node
from .absorb_casts import absorb_casts
from .batch_casts import batch_casts
from .constant_fold import constant_fold
from .cse import cse
from .dce import dce
from .fold_casts import fold_casts
from .fuse_bn_epilogue import fuse_bn_epilogue
from .fuse_elementwise import fuse_elementwise
from .simplify import simplify
from .verify import verify

Pass = Callable[[Graph], Graph]

# After autodiff, for training and inference graphs alike: simplify first so CSE sees canonical
# nodes; casts fold into transposes once dead readers are gone (dce), then the folded weight
# casts batch into one step each way; fusion last, on the smallest graph, then each BatchNorm
# takes the group reading it as its epilogue; last, the float32 kernels do the float casts
# next to them as they load or store.
OPTIMIZE_PIPELINE: tuple[Pass, ...] = (simplify, constant_fold, cse, dce, fold_casts,
                                       batch_casts, fuse_elementwise, fuse_bn_epilogue,
                                       absorb_casts)

VERIFY = False
ENABLED = True
"""False turns every pass and the memory plan off (tests compare outputs both ways)."""


def debug_level() -> int:
    return config.get("SYMGRAPH_DEBUG")


def format_graph(graph: Graph) -> str:
    """Readable IR listing: one node a line."""
    lines = []
    table = graph.types

    def typed(node: Node) -> str:
        if table is None:
            return ""
        return " : " + ", ".join(f"{table.dtype(e)}{list(table.shape(e) or ())}"
                                 for e in node.entries())
    for node in graph.nodes():
        if node.is_variable:
            shape = "" if table is not None else node.extra.get("__shape__", "")
            lines.append(f"  %{node.name} = var {shape}{typed(node)}")
        else:
            ins = ", ".join(f"%{e!r}" for e in node.inputs)
            attrs = ", ".join(f"{k}={v}" for k, v in node.attrs.items())
            lines.append(f"  %{node.name} = {node.op}({ins})"
                         f"{' {' + attrs + '}' if attrs else ''}{typed(node)}")
    lines.append("  return " + ", ".join(f"%{e!r}" for e in graph.outputs))
    return "\n".join(lines)


def run_pipeline(graph: Graph, pipeline: Sequence[Pass]) -> Graph:
    """Apply ``pipeline`` in order (nothing when ``ENABLED`` is False)."""
    for p in pipeline if ENABLED else ():
        graph = p(graph)
        if VERIFY:
            verify(graph)
        if debug_level() >= 1:
            print(f"--- after {p.__name__}\n{format_graph(graph)}")
    return graph

