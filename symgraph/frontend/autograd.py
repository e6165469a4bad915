"""``sg.autograd``: MXNet's recording scopes and reverse-mode differentiation of ``sg.nd`` code.

Under :func:`record`, op calls on NDArrays are recorded (they are recorded lazily anyway; the
scope marks them differentiable and sets the training mode). The switches are per thread, as
in MXNet: each thread records (and trains) on its own. :func:`backward` compiles forward,
loss and backward of the recorded graph as one program through the Executor and writes the
gradients into the ``.grad`` of the arrays given :meth:`~symgraph.runtime.ndarray.NDArray.attach_grad`.
"""
from __future__ import annotations

import contextlib
from typing import Any, Optional, Sequence, Union

from ..core.base import ExecutionError
from .imperative.calls import attach_grad
from .imperative.compute import backward as run_backward
from .imperative.engine import THREAD
from .imperative.function import Function
from .imperative.trace import settle
from ..runtime.ndarray import NDArray

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "Function",
           "get_symbol"]

Arrays = Union[NDArray, Sequence[NDArray]]


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class _Scope:
    """Sets the recording and training switches for a ``with`` block, then restores them (a
    plain class: ``record()`` is entered once per training step)."""

    __slots__ = ("recording", "training", "saved")

    def __init__(self, recording: Optional[bool], training: Optional[bool]) -> None:
        self.recording, self.training = recording, training

    def __enter__(self) -> None:
        state = THREAD.state  # (this thread's switches)
        self.saved = state.recording, state.training
        if self.recording is not None:
            if self.recording and not state.recording:
                settle()  # recording starts: a new tape (imperative.trace.Tape); the old
                state.tape = None  # one's pending nodes go to PENDING
            state.recording = self.recording
        if self.training is not None:
            state.training = self.training

    def __exit__(self, *exc: Any) -> None:
        state = THREAD.state
        state.recording, state.training = self.saved


def record(train_mode: bool = True) -> contextlib.AbstractContextManager:
    """Record op calls for :func:`backward`; train-dependent ops run in training mode unless
    ``train_mode=False``."""
    return _Scope(True, train_mode)


def pause(train_mode: bool = False) -> contextlib.AbstractContextManager:
    """Stop recording inside a :func:`record` scope (ops run in inference mode by default)."""
    return _Scope(False, train_mode)


def train_mode() -> contextlib.AbstractContextManager:
    """Run train-dependent ops in training mode, without changing recording."""
    return _Scope(None, True)


def predict_mode() -> contextlib.AbstractContextManager:
    """Run train-dependent ops in inference mode, without changing recording."""
    return _Scope(None, False)


def is_recording() -> bool:
    return THREAD.state.recording


def is_training() -> bool:
    return THREAD.state.training


def set_recording(is_recording: bool) -> bool:  # noqa: A002 (MXNet's name)
    """Set the recording switch; returns the previous value."""
    state = THREAD.state
    prev, state.recording = state.recording, bool(is_recording)
    if state.recording and not prev:
        settle()  # as record() does
        state.tape = None
    return prev


def set_training(train_mode: bool) -> bool:  # noqa: A002
    """Set the training switch; returns the previous value."""
    state = THREAD.state
    prev, state.training = state.training, bool(train_mode)
    return prev


def mark_variables(variables: Arrays, gradients: Arrays,
                   grad_reqs: Union[str, Sequence[str]] = "write") -> None:
    """Make ``variables`` differentiable, with ``gradients`` as their gradient buffers."""
    vs, gs = _as_list(variables), _as_list(gradients)
    reqs = [grad_reqs] * len(vs) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not len(vs) == len(gs) == len(reqs):
        raise ExecutionError(f"mark_variables: {len(vs)} variables, {len(gs)} gradients, "
                             f"{len(reqs)} grad_reqs")
    for v, g, r in zip(vs, gs, reqs):
        attach_grad(v, r, g)


def backward(heads: Arrays, head_grads: Optional[Arrays] = None, retain_graph: bool = False,
             train_mode: bool = True) -> None:
    """Gradients of ``heads`` (weighted by ``head_grads``, ones by default) into ``.grad``."""
    hs = _as_list(heads)
    hg = None if head_grads is None else _as_list(head_grads)
    if hg is not None and len(hg) != len(hs):
        raise ExecutionError(f"backward: {len(hg)} head_grads for {len(hs)} heads")
    run_backward(hs, hg, retain_graph, train_mode)


def grad(heads: Arrays, variables: Arrays, head_grads: Optional[Arrays] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False,
         train_mode: bool = True) -> list[NDArray]:
    """Gradients of ``heads`` with respect to ``variables``, returned as a list of new arrays
    (``.grad`` is left alone), one per variable also when ``variables`` is one array, as in
    MXNet. ``create_graph=True`` records them, so they can be differentiated again.

    Example: ``dx, = autograd.grad(y, x)`` (``x`` attached, ``y`` recorded from it)."""
    hs, vs = _as_list(heads), _as_list(variables)
    hg = None if head_grads is None else _as_list(head_grads)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        from .imperative.grad_graph import grad_graph
        return grad_graph(hs, vs, hg)
    return run_backward(hs, hg, retain_graph, train_mode, variables=vs)


def get_symbol(x: NDArray) -> Any:
    """The recorded computation of ``x`` as a Symbol (variables ``var0``, ``var1``...)."""
    from .imperative.compute import recorded_symbol
    return recorded_symbol(x)
