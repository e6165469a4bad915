"""``sg.operator``: operators written in Python (MXNet's ``mx.operator``).

Two styles, both ending up as one node of the registered op ``Custom`` (``symgraph/ops/custom.py``)
whose attributes are ``op_type`` plus the user's keyword arguments as strings:

* ``CustomOp`` / ``CustomOpProp`` with ``@sg.operator.register("name")``, used as
  ``sg.sym.Custom(data, op_type="name", **kwargs)``; the prop is built with the kwargs (strings,
  as MXNet passes them).
* ``NDArrayOp`` (MXNet 0.x): one object is both the description and the operator; calling it on
  symbols (``NDArrayReorg(stride=2)(data=x, name='reorg')``) registers it under a private
  ``op_type`` for this process and returns the ``Custom`` symbol.

The op receives ``sg.nd.NDArray`` objects wrapping the buffers the executor gives it: numpy arrays
on the CPU, device arrays on the GPU (``x.context`` says which). One ``CustomOp`` is created per
executor (and input shapes), as in MXNet, and freed with it.

Compiled (aot) kernels run only when code allowed them: :func:`register_custom_ops_library`
with an :class:`AotFunction` declaration per function (or an ``sg.sym.Custom(func=...)`` call);
a graph file alone never loads native code (docs/architecture.md, "Trust model: native code").
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from . import symbol
from ..core.base import AttrError, BindError, ExecutionError, ShapeError
from ..compiler.ops.custom import PROPS as _PROPS
from ..compiler.ops.custom import prop_factory  # noqa: F401  (sg.operator.prop_factory, as before)
from ..compiler.ops.native import AotFunction  # noqa: F401  (sg.operator.AotFunction)
from .operator_info import (OperatorArguments, get_all_registered_operators,  # noqa: F401
                            get_operator_arguments)

__all__ = ["CustomOp", "CustomOpProp", "NDArrayOp", "NumpyOp", "register", "registered_types",
           "get_all_registered_operators", "get_operator_arguments", "OperatorArguments",
           "register_custom_ops_library", "unregister_custom_ops_library"]


def register(reg_name: str) -> Callable[[type], type]:
    """Class decorator registering a :class:`CustomOpProp` subclass as ``op_type=reg_name``.

    Registering a name again replaces the earlier class (as MXNet does)."""
    if not isinstance(reg_name, str) or not reg_name:
        raise AttrError(f"sg.operator.register: name must be a non-empty string, got {reg_name!r}")

    def do_register(prop_cls: type) -> type:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise AttrError(f"sg.operator.register({reg_name!r}): {prop_cls!r} is not a "
                            f"CustomOpProp subclass")
        _PROPS[reg_name] = prop_cls
        return prop_cls
    return do_register


def registered_types() -> list[str]:
    """Names registered with :func:`register` (and NDArrayOp instances in use)."""
    return sorted(_PROPS)


# -- native (aot) functions: the allow list ------------------------------------------------------

def same_shape(*in_shapes: tuple) -> tuple:
    """A ``writes`` rule for elementwise kernels (the project's ``CustomAdd``): every input
    has the output's shape, since such a kernel reads each input over the output's size."""
    first = tuple(in_shapes[0])
    for i, s in enumerate(in_shapes[1:], 1):
        if tuple(s) != first:
            raise ShapeError(f"input x{i} has shape {tuple(s)}, x0 has {first}; the function "
                             f"reads every input over the output's shape")
    return first


def register_custom_ops_library(path: str, functions: Union[Mapping[str, Any], Sequence[str]],
                                device: Optional[str] = None) -> str:
    """Allow aot ``Custom`` nodes to call ``functions`` of the shared library ``path``
    (ONNX Runtime's ``register_custom_ops_library``; symgraph's trust model, see
    docs/architecture.md).

    Loading a graph file never loads native code: a JSON or checkpoint node naming
    ``lib.so:F`` is refused unless ``F`` of that library was allowed by code, here or by an
    ``sg.sym.Custom(func=...)`` call. ``path`` is resolved now (``os.path.realpath``); graph
    files must name it by that absolute path. ``functions`` is a list of names or a mapping
    name -> :class:`AotFunction` (or a ``writes`` rule); ``device`` applies to every function
    that does not declare one. The library is loaded now and every function looked up; on
    any error nothing is registered. Returns the canonical path."""
    from ..compiler.ops.native import register_library
    return register_library(path, functions, device)


def unregister_custom_ops_library(path: str) -> None:
    """Withdraw every function of ``path`` from the allow list."""
    from ..compiler.ops.native import unregister_library
    unregister_library(path)


class CustomOp:
    """Base class of the computation of a Python operator (MXNet's ``mx.operator.CustomOp``)."""

    def forward(self, is_train: bool, req: Sequence[str], in_data: Sequence[Any],
                out_data: Sequence[Any], aux: Sequence[Any]) -> None:
        """Write the outputs; use :meth:`assign` to honour ``req``."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, req: Sequence[str], out_grad: Sequence[Any], in_data: Sequence[Any],
                 out_data: Sequence[Any], in_grad: Sequence[Any], aux: Sequence[Any]) -> None:
        """Write the input gradients; entries not declared as dependencies are None."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def assign(self, dst: Any, req: str, src: Any) -> None:
        """Write ``src`` into NDArray ``dst`` according to ``req`` (write/inplace/add/null).

        As in MXNet, ``src`` is a scalar or an array of exactly ``dst``'s shape."""
        if req == "null":
            return
        shape = getattr(src, "shape", ())
        if not isinstance(src, (int, float, np.number)) and tuple(shape) != tuple(dst.shape):
            raise BindError(f"assign: value of shape {tuple(shape)} ({type(src).__name__}) "
                            f"for an array of shape {tuple(dst.shape)}")
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise ExecutionError(f"CustomOp.assign: unknown req {req!r}")


class _OpSignature:
    """Defaults both operator descriptions share: one input ``data``, one output, and
    ``need_top_grad`` (False marks loss layers: their backward does not read ``out_grad``)."""

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def need_top_grad(self) -> bool:
        return self.need_top_grad_

    def list_arguments(self) -> list[str]:
        return ["data"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def declare_backward_dependency(self, out_grad: list, in_data: list,
                                    out_data: list) -> list:
        """Which of the given ids backward reads (input data is always passed in symgraph)."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)


class CustomOpProp(_OpSignature):
    """Description of a Python operator (MXNet's ``mx.operator.CustomOpProp``).

    ``need_top_grad=False`` marks loss layers: their backward does not read ``out_grad``."""

    def list_auxiliary_states(self) -> list[str]:
        return []

    def infer_shape(self, in_shape: list) -> tuple:
        """``(arg shapes, output shapes, aux shapes)``; default: every output like input 0."""
        return in_shape, [in_shape[0]] * len(self.list_outputs()), []

    def infer_type(self, in_type: list) -> tuple:
        """``(arg dtypes, output dtypes, aux dtypes)``; default: all like input 0."""
        t = in_type[0]
        return (in_type, [t] * len(self.list_outputs()),
                [t] * len(self.list_auxiliary_states()))

    def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> CustomOp:
        raise NotImplementedError(f"{type(self).__name__}.create_operator")


class NDArrayOp(_OpSignature):
    """MXNet 0.x's ``mx.operator.NDArrayOp``: description and computation in one object.

    Subclasses define ``list_arguments``, ``list_outputs``, ``infer_shape(in_shape) ->
    (in_shapes, out_shapes)``, ``forward(in_data, out_data)`` and ``backward(out_grad, in_data,
    out_data, in_grad)``; calling the object on symbols makes the graph node."""

    numpy_arrays = False  # forward/backward get NDArrays (NumpyOp: numpy arrays)

    def __init__(self, need_top_grad: bool = True) -> None:
        super().__init__(need_top_grad)
        self._op_type: Optional[str] = None

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, [in_shape[0]] * len(self.list_outputs())

    def forward(self, in_data: Sequence[Any], out_data: Sequence[Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, out_grad: Sequence[Any], in_data: Sequence[Any],
                 out_data: Sequence[Any], in_grad: Sequence[Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def __call__(self, *args: Any, name: Optional[str] = None, **kwargs: Any) -> Any:
        """``Custom`` symbol applying this op to ``args``/``kwargs`` (symbols by argument name)."""
        if self._op_type is None:
            self._op_type = f"_ndarrayop{len(_PROPS)}_{type(self).__name__}"
            _PROPS[self._op_type] = lambda: _NDArrayOpProp(self)
        return symbol.Custom(*args, op_type=self._op_type, name=name, **kwargs)


class NumpyOp(NDArrayOp):
    """MXNet's ``mx.operator.NumpyOp`` (deprecated there for CustomOp): an NDArrayOp whose
    ``forward(in_data, out_data)`` and ``backward(out_grad, in_data, out_data, in_grad)`` get
    numpy arrays, the outputs and gradients to fill in place. By default the identity.

    >>> import symgraph as sg
    >>> y = sg.operator.NumpyOp().get_symbol(sg.sym.var("x"), name="np_op")
    >>> y.bind(sg.cpu(), {"x": sg.nd.ones(2) * 3}).forward()[0].asnumpy().tolist()
    [3.0, 3.0]
    """

    numpy_arrays = True

    def forward(self, in_data: Sequence[Any], out_data: Sequence[Any]) -> None:
        out_data[0][:] = in_data[0]

    def backward(self, out_grad: Sequence[Any], in_data: Sequence[Any],
                 out_data: Sequence[Any], in_grad: Sequence[Any]) -> None:
        in_grad[0][:] = out_grad[0]

    def get_symbol(self, *args: Any, **kwargs: Any) -> Any:
        """The ``Custom`` symbol applying this op (MXNet's spelling of calling it)."""
        return self(*args, **kwargs)


class _NDArrayOpProp(CustomOpProp):
    """Adapts an NDArrayOp to the CustomOpProp interface the ``Custom`` op dispatches to."""

    def __init__(self, op: NDArrayOp) -> None:
        super().__init__(op.need_top_grad())
        self.op = op
        self.user_class = type(op)  # messages and the CPU bind check name the user's class

    def list_arguments(self) -> list[str]:
        return list(self.op.list_arguments())

    def list_outputs(self) -> list[str]:
        return list(self.op.list_outputs())

    def infer_shape(self, in_shape: list) -> tuple:
        res = self.op.infer_shape(in_shape)
        return res[0], res[1], []

    def declare_backward_dependency(self, out_grad: list, in_data: list,
                                    out_data: list) -> list:
        return self.op.declare_backward_dependency(out_grad, in_data, out_data)

    def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> CustomOp:
        return _NDArrayOpRunner(self.op)


class _NDArrayOpRunner(CustomOp):
    def __init__(self, op: NDArrayOp) -> None:
        self.op = op
        self.user_class = type(op)

    def forward(self, is_train: bool, req: Sequence[str], in_data: Sequence[Any],
                out_data: Sequence[Any], aux: Sequence[Any]) -> None:
        self._run(self.op.forward, (in_data,), out_data)

    def backward(self, req: Sequence[str], out_grad: Sequence[Any], in_data: Sequence[Any],
                 out_data: Sequence[Any], in_grad: Sequence[Any], aux: Sequence[Any]) -> None:
        self._run(self.op.backward, (out_grad, in_data, out_data), in_grad)

    def _run(self, method: Callable, read: tuple, written: Sequence[Any]) -> None:
        """``method(*read, written)``; a NumpyOp gets numpy copies, its results copied back."""
        if not self.op.numpy_arrays:
            method(*read, written)
            return
        arrays = [np.array(w.asnumpy()) for w in written]
        method(*([x.asnumpy() for x in group] for group in read), arrays)
        for w, v in zip(written, arrays):
            w[:] = v
