"""``autograd.Function``: a differentiable function written as Python ``forward``/``backward``
on NDArrays (MXNet's ``mx.autograd.Function``).

``f(*inputs)`` runs ``forward`` right away with recording paused. Under ``record()`` the call
is then recorded as one ``Custom`` node (op_type ``_autograd_function``) whose outputs already
hold ``forward``'s values; a backward program that recomputes the node copies those values,
and its gradient calls ``f.backward(*output_gradients)``. The node's attributes say only what
the compiler needs (the Function's class, the number of inputs and outputs, the outputs'
shapes and dtypes), so calls in a loop share one compiled program; which call a run serves is
read from one more input, a one-element *call token* array (a leaf like a new batch).

Example::

    >>> import symgraph as sg
    >>> class Square(sg.autograd.Function):
    ...     def forward(self, x):
    ...         self.save_for_backward(x)
    ...         return x * x
    ...     def backward(self, dy):
    ...         return 2 * self.saved_tensors[0] * dy
    >>> x = sg.nd.array([3.0]); x.attach_grad()
    >>> with sg.autograd.record():
    ...     y = Square()(x)
    >>> y.backward(); x.grad.asscalar()
    6.0
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Sequence

import numpy as np

from .. import operator as _operator
from ...core.base import ExecutionError

_CALLS: "weakref.WeakValueDictionary[int, Function]" = weakref.WeakValueDictionary()
# The Custom node of a call keeps its Function alive (for backward) as long as it lives.
_KEEP: "weakref.WeakKeyDictionary[Any, Function]" = weakref.WeakKeyDictionary()
_ids = itertools.count(1)
_CLASSES: dict[type, int] = {}  # Function subclass -> its number in the node's attributes


class Function:
    """Subclass with ``forward(self, *inputs)`` and ``backward(self, *output_grads)`` returning
    NDArrays; ``save_for_backward`` keeps arrays for ``backward``. One call per object."""

    def __init__(self) -> None:
        self._used = False
        self.saved_tensors: tuple = ()
        self._outputs: list = []

    def save_for_backward(self, *args: Any) -> None:
        self.saved_tensors = args

    def forward(self, *inputs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *output_grads: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def __call__(self, *inputs: Any) -> Any:
        from ...runtime import ndarray as nd
        from .engine import THREAD
        if self._used:
            raise ExecutionError(f"{type(self).__name__}: each Function object can only be "
                                 f"called once; make a new one per call")
        self._used = True
        state = THREAD.state
        recording, state.recording = state.recording, False
        try:
            outputs = self.forward(*inputs)
        finally:
            state.recording = recording
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self._outputs = [nd.NDArray(o._data, o.context) for o in outs]
        if not recording:
            return outputs
        made = self._record(inputs)
        return made if isinstance(outputs, (list, tuple)) else made[0]

    def _record(self, inputs: Sequence[Any]) -> list:
        """The call as a recorded ``Custom`` node whose outputs hold ``forward``'s values."""
        from ...runtime import ndarray as nd
        from .compute import materialise
        from .engine import PENDING
        from .trace import settle
        key = next(_ids)
        _CALLS[key] = self
        token = nd.array(np.array([key], np.float64), inputs[0].context, np.float64)
        cls = _CLASSES.setdefault(type(self), len(_CLASSES))
        made = nd.Custom(*inputs, token, op_type="_autograd_function", cls=str(cls),
                         num_in=str(len(inputs)),
                         out_shapes=repr([tuple(o.shape) for o in self._outputs]),
                         out_dtypes=",".join(o.dtype.name for o in self._outputs))
        made = made if isinstance(made, list) else [made]
        node = made[0]._entry.node
        _KEEP[node] = self
        settle()  # (PENDING tells materialise the node's outputs, then lets it go)
        materialise([(a._entry, a) for a in made], [o._buf for o in self._outputs])
        PENDING.pop(node, None)
        return made


def _call_of(token: Any) -> Function:
    """The Function whose call ``token`` (the node's last input) names."""
    key = int(token.asnumpy().reshape(-1)[0])
    fn = _CALLS.get(key)
    if fn is None:
        raise ExecutionError(f"autograd.Function call {key} is no longer alive")
    return fn


class _Runner(_operator.CustomOp):
    def forward(self, is_train: bool, req: Sequence[str], in_data: Sequence[Any],
                out_data: Sequence[Any], aux: Sequence[Any]) -> None:
        for dst, r, value in zip(out_data, req, _call_of(in_data[-1])._outputs):
            self.assign(dst, r, value)

    def backward(self, req: Sequence[str], out_grad: Sequence[Any], in_data: Sequence[Any],
                 out_data: Sequence[Any], in_grad: Sequence[Any], aux: Sequence[Any]) -> None:
        fn = _call_of(in_data[-1])
        grads = fn.backward(*out_grad)
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(grads) != len(in_grad) - 1:
            raise ExecutionError(f"{type(fn).__name__}.backward returned {len(grads)} "
                                 f"gradients for {len(in_grad) - 1} inputs")
        for dst, r, g in zip(in_grad, req, grads):
            self.assign(dst, r, g)
        self.assign(in_grad[-1], req[-1], np.zeros(in_grad[-1].shape))  # (the token's)


@_operator.register("_autograd_function")
class _FunctionProp(_operator.CustomOpProp):
    """The ``Custom`` description of a Function's calls: ``num_in`` inputs and the call token,
    outputs of ``out_shapes`` and ``out_dtypes`` (``cls`` tells Function classes apart)."""

    def __init__(self, cls: str, num_in: str, out_shapes: str, out_dtypes: str) -> None:
        super().__init__(need_top_grad=True)
        self.n_in = int(num_in)
        self.shapes = [tuple(int(d) for d in s) for s in _shapes(out_shapes)]
        self.dtypes = [np.dtype(t) for t in out_dtypes.split(",")]

    def list_arguments(self) -> list[str]:
        return [f"in{i}" for i in range(self.n_in)] + ["call"]

    def list_outputs(self) -> list[str]:
        return [f"out{j}" for j in range(len(self.shapes))]

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, list(self.shapes), []

    def infer_type(self, in_type: list) -> tuple:
        return in_type, list(self.dtypes), []

    def declare_backward_dependency(self, out_grad: list, in_data: list,
                                    out_data: list) -> list:
        return list(out_grad)

    def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> _Runner:
        return _Runner()


def _shapes(text: str) -> list:
    """``repr`` of a list of shape tuples, read back without ``eval``."""
    import ast
    return list(ast.literal_eval(text))
