"""Python operators that cannot run on the CPU, refused when a graph is bound there.

A Python op whose ``forward`` or ``backward`` launches CUDA kernels through ``sg.rtc``
(MXNet 0.x's ``mx.rtc``, as in the ``NDArrayOp`` examples of that era) fails on CPU arrays. The
numpy backend asks each step's ``OpDef.extra["host_check"]`` at bind, so such a graph is refused
there, naming the class the user wrote and the two ways out, instead of failing at the first
batch inside ``fit`` with an adapter's name.

Whether a method is GPU-only is read from its code: it names ``rtc`` (or ``Rtc``,
``CudaModule``, ``CudaKernel``) and never looks at where its arrays live (``context``, ``ctx``,
``device_type``, ``gpu_context``) nor copies them to the host (``asnumpy``). A method that does
either has a host path and is let through; one that launches kernels through a helper is not
seen here and still fails at run time, with the same advice. A class may state the answer
itself with a ``gpu_only = True | False`` attribute.
"""
from __future__ import annotations

import types
from typing import Any, Optional

from ...core.base import BindError

# Names whose use means CUDA kernels launched on the op's arrays.
GPU_NAMES = frozenset({"rtc", "Rtc", "CudaModule", "CudaKernel"})
# Names whose use means the method looks at, or leaves, the device of its arrays.
HOST_PATH_NAMES = frozenset({"context", "ctx", "device_type", "gpu_context", "asnumpy"})

ADVICE = ("bind it on a GPU (context=mx.gpu()), or give {cls} a numpy path for CPU arrays "
          "(`if mx.rtc.gpu_context(x) is None: y[:] = f(x.asnumpy())`), as the reorg layer "
          "of symgraph/models/reorg_lenet.py does: `symgraph train reorg_lenet --ctx cpu` "
          "trains that network on the CPU")


def _names(code: types.CodeType) -> set[str]:
    """Global and attribute names used by ``code`` and the functions nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def gpu_only_methods(cls: type) -> list[str]:
    """The methods among ``forward`` and ``backward`` of ``cls`` that launch ``sg.rtc``
    kernels with no host path (all of them, or none, when ``cls.gpu_only`` says so).

    >>> class Copy:
    ...     def forward(self, in_data, out_data):
    ...         mx.rtc('copy', [('x', in_data[0])], [('y', out_data[0])], "y[0] = x[0];")
    >>> gpu_only_methods(Copy)
    ['forward']
    """
    declared: Optional[bool] = getattr(cls, "gpu_only", None)
    if declared is not None:
        return ["forward", "backward"] if declared else []
    found = []
    for method in ("forward", "backward"):
        code = getattr(getattr(cls, method, None), "__code__", None)
        if code is None:
            continue
        names = _names(code)
        if names & GPU_NAMES and not names & HOST_PATH_NAMES:
            found.append(method)
    return found


def check_user_class(cls: Optional[type], node: Any) -> None:
    """BindError when ``cls`` (the class behind a ``Custom`` node) cannot run on the CPU."""
    if cls is None:
        return
    methods = gpu_only_methods(cls)
    if methods:
        raise BindError(
            f"{node.name} (Custom {cls.__name__}): {cls.__name__}.{methods[0]} runs CUDA "
            f"kernels through mx.rtc, which need GPU arrays, and the graph is bound on the "
            f"CPU; {ADVICE.format(cls=cls.__name__)}")
