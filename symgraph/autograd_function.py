"""``autograd.Function``: a differentiable function written as Python ``forward``/``backward``
on NDArrays (MXNet's ``mx.autograd.Function``).

``f(*inputs)`` runs ``forward`` right away with recording paused. Under ``record()`` the call
is then recorded as one ``Custom`` node (op_type ``_autograd_function``) reading the inputs,
whose outputs already hold ``forward``'s values: a backward program that recomputes the node
copies those values, and its gradient calls ``f.backward(*output_gradients)``. The node's
attributes name the call, so every call is a new structure: graphs holding a Function are
compiled per call (use registered ops or ``sg.operator`` for code in a hot loop).
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Sequence

from .frontend import operator as _operator
from .core.base import ExecutionError

_CALLS: "weakref.WeakValueDictionary[int, Function]" = weakref.WeakValueDictionary()
# The Custom node of a call keeps its Function alive (for backward) as long as it lives.
_KEEP: "weakref.WeakKeyDictionary[Any, Function]" = weakref.WeakKeyDictionary()
_ids = itertools.count()


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
        from .runtime import ndarray as nd
        from .imperative import STATE
        from .imperative_compile import _materialise
        from .imperative import PENDING
        from .imperative_trace import settle
        if self._used:
            raise ExecutionError(f"{type(self).__name__}: each Function object can only be "
                                 f"called once; make a new one per call")
        self._used = True
        recording, STATE.recording = STATE.recording, False
        try:
            outputs = self.forward(*inputs)
        finally:
            STATE.recording = recording
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self._outputs = [nd.NDArray(o._data, o.context) for o in outs]
        if not recording:
            return outputs
        key = next(_ids)
        _CALLS[key] = self
        made = nd.Custom(*inputs, op_type="_autograd_function", call=str(key),
                         num_in=str(len(inputs)), num_out=str(len(outs)))
        made = made if isinstance(made, list) else [made]
        node = made[0]._entry.node
        _KEEP[node] = self
        settle()  # (PENDING tells _materialise the node's outputs, then lets it go)
        _materialise([(a._entry, a) for a in made], [o._buf for o in self._outputs])
        PENDING.pop(node, None)
        return made if isinstance(outputs, (list, tuple)) else made[0]


class _Runner(_operator.CustomOp):
    def __init__(self, fn: Function) -> None:
        self.fn = fn

    def forward(self, is_train: bool, req: Sequence[str], in_data: Sequence[Any],
                out_data: Sequence[Any], aux: Sequence[Any]) -> None:
        for dst, r, value in zip(out_data, req, self.fn._outputs):
            self.assign(dst, r, value)

    def backward(self, req: Sequence[str], out_grad: Sequence[Any], in_data: Sequence[Any],
                 out_data: Sequence[Any], in_grad: Sequence[Any], aux: Sequence[Any]) -> None:
        grads = self.fn.backward(*out_grad)
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(grads) != len(in_grad):
            raise ExecutionError(f"{type(self.fn).__name__}.backward returned {len(grads)} "
                                 f"gradients for {len(in_grad)} inputs")
        for dst, r, g in zip(in_grad, req, grads):
            self.assign(dst, r, g)


@_operator.register("_autograd_function")
class _FunctionProp(_operator.CustomOpProp):
    """The ``Custom`` description of one Function call (found by its ``call`` number)."""

    def __init__(self, call: str, num_in: str, num_out: str) -> None:
        super().__init__(need_top_grad=True)
        self.fn = _CALLS.get(int(call))
        if self.fn is None:
            raise ExecutionError(f"autograd.Function call {call} is no longer alive")
        self.n_in, self.n_out = int(num_in), int(num_out)

    def list_arguments(self) -> list[str]:
        return [f"in{i}" for i in range(self.n_in)]

    def list_outputs(self) -> list[str]:
        return [f"out{j}" for j in range(self.n_out)]

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, [o.shape for o in self.fn._outputs], []

    def infer_type(self, in_type: list) -> tuple:
        return in_type, [o.dtype for o in self.fn._outputs], []

    def declare_backward_dependency(self, out_grad: list, in_data: list,
                                    out_data: list) -> list:
        return list(out_grad)

    def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> _Runner:
        return _Runner(self.fn)
