"""Rendering the ``graphviz.Digraph`` that ``sg.viz.plot_network`` returns without Graphviz's
``dot`` program: a symgraph error naming the system package to install, not graphviz's raw
``ExecutableNotFound`` (the pip package ``graphviz`` is only the Python side of it).

``symgraph viz`` checks for ``dot`` itself and writes the DOT source instead, with the same
install hint (``DOT_INSTALL_HINT``).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..core.base import ExecutionError

DOT_INSTALL_HINT = ("install the system package graphviz: apt install graphviz, dnf install "
                    "graphviz, brew install graphviz or conda install graphviz")


def _render(call: Callable[..., Any], what: str, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``; a missing ``dot`` becomes an ExecutionError saying what to
    install, and that ``.source`` still holds the DOT text."""
    from graphviz import ExecutableNotFound
    try:
        return call(*args, **kwargs)
    except ExecutableNotFound as exc:
        raise ExecutionError(f"plot_network(...).{what}: Graphviz's 'dot' program is not on "
                             f"PATH; {DOT_INSTALL_HINT} (the DOT text is in .source)"
                             ) from exc


@functools.lru_cache(maxsize=None)  # one class per process; graphviz is imported on first use
def digraph_class() -> type:
    """A ``graphviz.Digraph`` subclass whose ``pipe``/``render`` (and so ``view`` and
    Jupyter's display) refuse a missing ``dot`` by the package to install.

    >>> dot = digraph_class()(name="net")
    >>> dot.pipe(format="svg")  # without Graphviz's dot    # doctest: +SKIP
    ExecutionError: plot_network(...).pipe: Graphviz's 'dot' program is not on PATH; ...
    """
    from graphviz import Digraph

    class SymgraphDigraph(Digraph):
        def pipe(self, *args: Any, **kwargs: Any) -> Any:
            return _render(super().pipe, "pipe", *args, **kwargs)

        def render(self, *args: Any, **kwargs: Any) -> Any:
            return _render(super().render, "render", *args, **kwargs)

    SymgraphDigraph.__doc__ = digraph_class.__doc__
    return SymgraphDigraph
