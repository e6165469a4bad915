"""``sg.nd.CachedOp``: a Symbol called as a function on NDArrays (MXNet's ``mx.nd.CachedOp``).

The arrays are the symbol's inputs in ``list_inputs()`` order. A call records the symbol's op
nodes through the imperative engine, as ``sg.nd`` calls do: the recorded graph is the same at
every call, so its compiled program comes from the imperative program cache, and under
``autograd.record()`` gradients flow to the arrays.

Example::

    >>> import symgraph as sg
    >>> op = sg.nd.CachedOp(sg.sym.var("a") * 2 + sg.sym.var("b"))
    >>> op(sg.nd.ones((2,)), sg.nd.ones((2,))).asnumpy().tolist()
    [3.0, 3.0]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..core.base import BindError
from ..core.graph import topo_order
from ..core.registry import get_op
from ..runtime.ndarray import NDArray
from . import imperative


class CachedOp:
    """Symbol ``sym`` as a callable on NDArrays; ``flags`` (MXNet's static-memory options)
    are accepted and change nothing here (memory is planned per compiled program anyway)."""

    def __init__(self, sym: Any, flags: Sequence[Any] = ()) -> None:
        graph = sym.graph()
        self.input_names = list(sym.list_inputs())
        self.flags = tuple(flags)
        index: dict[Any, int] = {}
        self.steps: list[tuple] = []  # (node position, call, input references, name)
        self.inputs: list[tuple[int, int]] = []  # (node position, argument index)
        for node in topo_order(graph.outputs):
            if node.is_variable:
                self.inputs.append((len(index), self.input_names.index(node.name)))
            else:
                refs = tuple((index[e.node], e.index) for e in node.inputs)
                info = imperative.call_info(get_op(node.op), dict(node.attrs), node.name)
                self.steps.append((len(index), info, refs, node.name))
            index[node] = len(index)
        self.n_nodes = len(index)
        self.outputs = [(index[e.node], e.index) for e in graph.outputs]

    def __call__(self, *args: NDArray, out: Optional[Any] = None, **kwargs: Any) -> Any:
        """The symbol's outputs on ``args`` (one array, or a list when it has several),
        written into ``out`` when given."""
        if kwargs:
            raise BindError(f"CachedOp takes its inputs {self.input_names} by position; "
                            f"got keywords {sorted(kwargs)}")
        if len(args) != len(self.input_names):
            raise BindError(f"CachedOp: {len(args)} arrays for the {len(self.input_names)} "
                            f"inputs {self.input_names}")
        for name, a in zip(self.input_names, args):
            if not isinstance(a, NDArray):
                raise BindError(f"CachedOp: input {name!r} must be an NDArray, got "
                                f"{type(a).__name__}")
        values: list[Any] = [None] * self.n_nodes
        for pos, k in self.inputs:
            values[pos] = (args[k],)
        for pos, info, refs, name in self.steps:
            values[pos] = imperative.record(info, [values[i][k] for i, k in refs], name)
        outs = [values[i][k] for i, k in self.outputs]
        return imperative.result(outs, out)
