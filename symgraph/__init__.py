"""symgraph: a define-then-run deep learning graph compiler with MXNet's ``mx.sym`` API.

``import symgraph as sg`` gives ``sg.sym`` (symbols), ``sg.nd`` (arrays), ``sg.cpu()``,
``sg.gpu(i)`` and ``sg.test_utils``.
"""
from __future__ import annotations

from . import base, name, operator, random
from . import ndarray as nd
from . import symbol as sym
from . import test_utils
from .base import (AttrError, BindError, DTypeError, ExecutionError, GraphError, ShapeError,
                   SymgraphError)
from .context import Context, cpu, current_context, gpu
from .executor import Executor
from . import rtc  # noqa: E402  (pycuda is imported lazily, on first GPU use)

symbol = sym
ndarray = nd

__version__ = "0.1.0"

__all__ = ["sym", "symbol", "nd", "ndarray", "cpu", "gpu", "Context", "current_context",
           "Executor", "name", "operator", "rtc", "random", "test_utils", "base",
           "SymgraphError", "AttrError",
           "ShapeError", "DTypeError", "BindError", "GraphError", "ExecutionError"]
