"""``SymbolBlock``: a Block made from a Symbol (for instance one exported by
``HybridBlock.export`` and read back with :meth:`SymbolBlock.imports`)."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ..core.base import GraphError
from .block import HybridBlock
from .hybrid_state import Trace
from .parameter_dict import ParameterDict


def _symbols(value: Any, what: str) -> list:
    from ..frontend.symbol import Symbol
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for s in items:
        if not isinstance(s, Symbol):
            raise GraphError(f"SymbolBlock: {what} must be Symbols, got {type(s).__name__}")
    return items


class SymbolBlock(HybridBlock):
    """Runs the graph of ``outputs`` with ``inputs`` (variables) as the call's arguments; every
    other argument of the graph becomes a Parameter (auxiliary states with grad_req='null').

    Examples
    --------
    >>> data = sg.sym.var('data')
    >>> net = sg.gluon.SymbolBlock(sg.sym.relu(data), data)
    >>> net(sg.nd.array([-1, 2]))
    [0. 2.]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, outputs: Any, inputs: Any,
                 params: Optional[ParameterDict] = None) -> None:
        super().__init__(prefix="", params=None)
        from ..frontend import symbol as sym
        self._prefix = ""
        self._params = ParameterDict("", params)
        inputs = _symbols(inputs, "inputs")
        outputs = _symbols(outputs, "outputs")
        out = outputs[0] if len(outputs) == 1 else sym.Group(outputs)
        names = [i.name for i in inputs]
        for i in inputs:
            if len(i.get_internals().list_outputs()) != 1 or i.name not in out.list_inputs():
                raise GraphError(f"SymbolBlock: input {i.name!r} is not a variable of the "
                                 f"graph, whose inputs are {out.list_inputs()}")
        aux = set(out.list_auxiliary_states())
        for name in out.list_inputs():
            if name in names:
                continue
            if name in aux:
                self.params.get(name, grad_req="null", allow_deferred_init=True)
            else:
                self.params.get(name, allow_deferred_init=True)
        self._cached_graph = Trace(inputs, out)
        self._active = True  # a SymbolBlock always runs its graph

    @staticmethod
    def imports(symbol_file: str, input_names: Union[str, Sequence[str]],
                param_file: Optional[str] = None, ctx: Any = None,
                allow_missing: bool = False, ignore_extra: bool = False) -> "SymbolBlock":
        """A SymbolBlock from ``prefix-symbol.json`` and, optionally, ``prefix-%04d.params``
        (the files :meth:`HybridBlock.export` and ``Module.save_checkpoint`` write)."""
        from ..frontend import symbol as sym
        out = sym.load(symbol_file)
        names = [input_names] if isinstance(input_names, str) else list(input_names)
        block = SymbolBlock(out, [sym.var(n) for n in names])
        if param_file is not None:
            # The saved dtypes win (MXNet): a float64 model stays float64.
            block.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                        cast_dtype=True, dtype_source="saved")
        return block

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """A SymbolBlock is always hybridized (it has no imperative body)."""

    def _clear_cache(self) -> None:
        self._cached = {}

    def _get_graph(self, *args: Any) -> tuple[list, Any]:
        inputs, out = self._cached_graph
        if len(args) != len(inputs):
            raise GraphError(f"SymbolBlock: called with {len(args)} inputs, the graph takes "
                             f"{[i.name for i in inputs]}")
        return inputs, out

    def forward(self, x: Any, *args: Any) -> Any:
        from .block import is_symbol
        if is_symbol(x):
            inputs, out = self._cached_graph
            return out(**{i.name: a for i, a in zip(inputs, (x,) + args)})
        from .cached_op import call_cached
        return call_cached(self, (x,) + args)
