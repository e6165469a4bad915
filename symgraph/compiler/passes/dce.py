"""Dead-code elimination: ``Graph -> Graph``.

Requires: nothing. Guarantees: the result holds exactly the nodes reachable from the outputs.
A graph is its output entries, so rebuilding through :func:`rewrite` (which only visits reachable
nodes) already drops everything else; the pass exists so the pipeline says it out loud and so a
pass that leaves an orphan behind never costs a schedule step.
"""
from __future__ import annotations

from ...core.graph import Graph, rewrite


def dce(graph: Graph) -> Graph:
    """Drop nodes no output depends on."""
    return rewrite(graph, lambda node: None)
