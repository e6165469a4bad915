"""Exception types and small shared helpers.

Every error symgraph raises on bad input derives from :class:`SymgraphError`, carries the
node name and op where it is known, and is raised before anything is allocated or written.
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Union

import numpy as np

__all__ = ["SymgraphError", "AttrError", "ShapeError", "DTypeError", "BindError", "GraphError",
           "ExecutionError", "DataError", "IndexDataError", "MissingParamError",
           "NotImplementedForSymbol", "UnusedLoopValueError",
           "mx_real_t", "integer_types", "numeric_types", "string_types", "py_str"]


class SymgraphError(Exception):
    """Base class of every error symgraph raises on bad input."""


class AttrError(SymgraphError, TypeError):
    """An operator attribute is unknown, missing, of the wrong type or out of range."""


class ShapeError(SymgraphError, ValueError):
    """Shapes conflict, or cannot be decided."""


class DTypeError(SymgraphError, TypeError):
    """Dtypes conflict, or cannot be decided."""


class BindError(SymgraphError, ValueError):
    """Arrays given to bind/forward/backward do not match the graph."""


class MissingParamError(BindError, RuntimeError):
    """Parameters the network needs were not given (a RuntimeError, as MXNet raises)."""


class GraphError(SymgraphError, ValueError):
    """A graph is malformed: duplicate names, unknown ops, bad JSON, cycles."""


class UnusedLoopValueError(GraphError, AssertionError):
    """A control-flow body does not read one of its data arrays or states (an
    AssertionError, as MXNet raises)."""


class ExecutionError(SymgraphError, RuntimeError):
    """A run-time failure: backward before forward, a custom kernel returning an error."""


class NotImplementedForSymbol(SymgraphError, TypeError):
    """An NDArray-only operation (``bool()``, ``len`` of values...) was applied to a Symbol."""


mx_real_t = np.float32
"""MXNet's default real type (``mxnet.base.mx_real_t``)."""

# MXNet's type groups of `mxnet.base`, which its scripts test arguments against
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
string_types = (str,)


def py_str(x: bytes) -> str:
    """``bytes`` from a C library as ``str`` (MXNet's ``mxnet.base.py_str``)."""
    return x.decode("utf-8")


def _as_list(obj: object) -> Union[list, tuple]:
    """``obj`` itself if it is a list or a tuple, else ``[obj]`` (MXNet's helper)."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


def where(name: Optional[str], op: Optional[str]) -> str:
    """Format the location prefix used by every error message: ``name (op): ``."""
    if name is None:
        return ""
    return f"{name} ({op}): " if op else f"{name}: "


def where_unnamed(name: Optional[str], op: str) -> str:
    """:func:`where` for a node being made, which may have no name yet: then the op and the
    line of user code that makes it (``FullyConnected (unnamed, at train.py:12): ``)."""
    if name:
        return where(name, op)
    return f"{op} (unnamed, at {_call_site()}): "


def _call_site() -> str:
    """``file:line`` of the innermost frame outside the symgraph package."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # symgraph/
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


class DataError(SymgraphError, ValueError):
    """Input data is missing, corrupt, or does not match what the model was bound for."""


class IndexDataError(DataError, IndexError):
    """An index in the data lies outside the axis it indexes (an IndexError too, as numpy's
    and MXNet's)."""
