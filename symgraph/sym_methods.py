"""Symbol's methods that need the layers built on ``symbol.py``: autodiff and binding.

``symbol.py`` is imported by autodiff (gradient rules compose ``sg.sym`` ops) and by the
executor, so it imports neither; this module, imported by ``symgraph/__init__``, puts
``Symbol.gradient``, ``Symbol.bind`` and ``Symbol.simple_bind`` on the class, as
``nd_methods.py`` does for NDArray, and adds the fluent functions and methods of ``fluent.py``
(which builds them with ``sg.sym``).
"""
from __future__ import annotations

from typing import Any, Sequence

from . import fluent
from . import symbol as _symbol
from .base import BindError
from .executor import Executor
from .exports import export
from .passes.gradient import symbol_gradient
from .symbol import Symbol


def gradient(self: Symbol, wrt: Sequence[str]) -> Symbol:
    """A symbol whose outputs are d(sum of outputs)/d(each name in ``wrt``).

    Head gradients are the variables ``<output name>_head_grad`` (ones if not bound).
    """
    return symbol_gradient(self, list(wrt))


def bind(self: Symbol, ctx: Any, args: Any, args_grad: Any = None, grad_req: Any = "write",
         aux_states: Any = None, group2ctx: Any = None, shared_exec: Any = None) -> Any:
    """Bind arrays and return an :class:`~symgraph.executor.Executor`."""
    return Executor.bind(self, ctx, args, args_grad, grad_req, aux_states)


def simple_bind(self: Symbol, ctx: Any, grad_req: Any = "write", type_dict: Any = None,
                stype_dict: Any = None, group2ctx: Any = None, shared_arg_names: Any = None,
                shared_exec: Any = None, shared_buffer: Any = None, **shapes: Any) -> Any:
    """Infer every shape from ``shapes`` and bind freshly allocated arrays.

    As MXNet's: keywords that name no input of the symbol are ignored, and so are the
    memory-sharing hints (``shared_*``); storage types other than dense and several
    device groups are refused."""
    if any(v not in (None, "default") for v in (stype_dict or {}).values()):
        raise BindError(f"simple_bind: only dense storage, got stype_dict={stype_dict}")
    if group2ctx and len({str(c) for c in group2ctx.values()} | {str(ctx)}) > 1:
        raise BindError(f"simple_bind: one device only, got group2ctx={group2ctx}")
    inputs = set(self.list_inputs())
    shapes = {k: v for k, v in shapes.items() if k in inputs}
    return Executor.simple_bind(self, ctx, grad_req, type_dict, shapes)


def _install_fluent(namespace: dict) -> None:
    """``sg.sym``'s fluent functions (pow, maximum, zeros...) and Symbol's fluent methods."""
    functions = fluent.make_functions()
    for fn_name, fn in functions.items():
        namespace.setdefault(fn_name, fn)
    for op, fill in (("_zeros", 0.0), ("_ones", 1.0), ("_full", None)):
        namespace.setdefault(op[1:], fluent.creation(op, fill))
    export(namespace, list(functions) + ["zeros", "ones", "full"])
    fluent.install(Symbol, namespace)


_install_fluent(vars(_symbol))
Symbol.gradient = gradient  # type: ignore[attr-defined]
Symbol.bind = bind  # type: ignore[attr-defined]
Symbol.simple_bind = simple_bind  # type: ignore[attr-defined]
