"""``sg.contrib.autograd``: MXNet's older autograd interface (``mx.contrib.autograd``), where
one switch turns recording and training on and off together, written on :mod:`symgraph.autograd`.

Example::

    grad_and_loss = sg.contrib.autograd.grad_and_loss(lambda x: sg.nd.exp(x) + x)
    grads, loss = grad_and_loss(sg.nd.ones((2,)))   # grads[0] is exp(1) + 1 twice
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from ...frontend import autograd as _ag
from ...core.base import AttrError
from ...runtime.ndarray import NDArray, zeros

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section",
           "mark_variables", "backward", "compute_gradient", "grad_and_loss", "grad"]

Arrays = Union[NDArray, Sequence[NDArray]]


def set_is_training(is_train: bool) -> bool:
    """Switch recording and training on or off together; returns the previous training state."""
    prev = _ag.set_training(bool(is_train))
    _ag.set_recording(bool(is_train))
    return prev


class TrainingStateScope:
    """A ``with`` block with recording and training set to ``enter_state``, restored after."""

    def __init__(self, enter_state: bool) -> None:
        self._enter_state = bool(enter_state)
        self._prev: Optional[bool] = None

    def __enter__(self) -> None:
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, *exc: Any) -> None:
        if self._prev != self._enter_state:
            set_is_training(bool(self._prev))


def train_section() -> TrainingStateScope:
    """Record and train inside the block (``with train_section(): y = net(x)``)."""
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """Neither record nor train inside the block (inference within a ``train_section``)."""
    return TrainingStateScope(False)


test_section.__test__ = False  # (pytest: not a test, despite the name MXNet gave it)


def mark_variables(variables: Arrays, gradients: Arrays,
                   grad_reqs: Union[str, Sequence[str]] = "write") -> None:
    """Make ``variables`` differentiable with ``gradients`` as their gradient buffers."""
    _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs: Arrays, out_grads: Optional[Arrays] = None,
             retain_graph: bool = False) -> None:
    """Gradients of ``outputs`` (weighted by ``out_grads``) into the marked variables."""
    _ag.backward(outputs, out_grads, retain_graph)


def compute_gradient(outputs: Arrays) -> None:
    """``backward(outputs)`` (MXNet's deprecated name)."""
    backward(outputs)


def _arguments(args: tuple, argnum: Union[None, int, Sequence[int]]) -> list:
    if argnum is None:
        return list(args)
    picked = [argnum] if isinstance(argnum, int) else list(argnum)
    for k in picked:
        if not -len(args) <= k < len(args):
            raise AttrError(f"grad_and_loss: argnum {k} is out of range for {len(args)} "
                            f"arguments")
    return [args[k] for k in picked]


def grad_and_loss(func: Callable, argnum: Union[None, int, Sequence[int]] = None) -> Callable:
    """``func`` wrapped to return ``(gradients, outputs)``: the gradients of its outputs with
    respect to its arguments (those numbered ``argnum``; all by default)."""
    def wrapped(*args: Any) -> tuple:
        variables = _arguments(args, argnum)
        for k, x in enumerate(variables):
            if not isinstance(x, NDArray):
                raise AttrError(f"grad_and_loss: argument {k} is a {type(x).__name__}; "
                                f"gradients are taken with respect to NDArrays only")
        grads = [zeros(x.shape, x.context, x.dtype) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func: Callable, argnum: Union[None, int, Sequence[int]] = None) -> Callable:
    """``func`` wrapped to return only the gradients of :func:`grad_and_loss`."""
    with_loss = grad_and_loss(func, argnum)

    def wrapped(*args: Any) -> list:
        return with_loss(*args)[0]
    return wrapped
