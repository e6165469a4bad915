"""The imperative engine: ``sg.nd`` calls recorded lazily as graph nodes, compiled and run by
the same pipeline as ``sg.sym`` when a value is needed, and ``sg.autograd`` on the recording.

One :class:`Engine` (:data:`ENGINE`) owns the side tables and caches (one
:meth:`Engine.invalidate`); autograd's switches and tape are per thread. By role:

- ``engine``: the Engine, the per-thread state, how a node was recorded;
- ``calls``: an op call recorded as a node (``record``, ``call``, autograd leaves);
- ``trace``: the nodes a set of roots needs (``walk``) and the ``Tape`` record() follows;
- ``compute``: cache key, compile, run, materialise; ``backward``;
- ``program``: a compiled subgraph, bound to each call's leaves and gradients;
- ``cache``: compiled programs under a byte budget, least recently used dropped first;
- ``steady``: the previous backward's plan, reused when the tape repeats it;
- ``grad_graph``: ``autograd.grad(create_graph=True)``; ``function``: ``autograd.Function``.

Semantics: docs/imperative.md. Example::

    >>> import symgraph as sg
    >>> n = sg.imperative.compile_count()
    >>> (sg.nd.ones((2,)) * 3).asnumpy().tolist()
    [3.0, 3.0]
"""
from __future__ import annotations

from .calls import (FAST_CALLS, Call, attach_grad, call, call_info,  # noqa: F401
                    compile_count, detach, input_entry, record, result)
from .engine import ENGINE, STATS, Engine, ThreadState, thread_state  # noqa: F401

__all__ = ["ENGINE", "Engine", "ThreadState", "thread_state", "STATS", "FAST_CALLS", "Call", "call",
           "call_info", "record", "result", "attach_grad", "detach", "compile_count",
           "input_entry"]
