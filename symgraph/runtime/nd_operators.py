"""NDArray's operators, indexing and fluent methods, as a mixin the class inherits (as
:class:`~symgraph.core.fluent.Fluent` is for Symbol): every one records an op through the imperative
engine, which ``ndarray.py`` does not import (the engine builds on NDArray); the engine plugs
itself in with :func:`set_engine` when imported (``import symgraph`` imports it).

Example::

    >>> import symgraph as sg
    >>> x = sg.nd.array([1.0, -2.0])
    >>> ((x + 1) * x).asnumpy().tolist(), abs(x)[1].asscalar()
    ([2.0, 2.0], 2.0)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..core.base import AttrError, ShapeError
from ..core.fluent import Fluent, is_number
from .nd_views import flat_positions, host_view

_ENGINE: Any = None


def set_engine(engine: Any) -> None:
    """Install the object that ``force``s, ``call``s and records ops on arrays."""
    global _ENGINE
    _ENGINE = engine


def engine() -> Any:
    """The imperative engine's entry points (None until ``symgraph.imperative`` is imported)."""
    return _ENGINE


# method: (array-array op, array-scalar op, reflected scalar op)
BINARY: dict[str, tuple[str, str, str]] = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "truediv": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "gt": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "ge": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "lt": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "le": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
    "eq": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "ne": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
}
REFLECTED = ("add", "sub", "mul", "truediv", "pow")
IN_PLACE = ("add", "sub", "mul", "truediv")


def binary(name: str, names: tuple[str, str, str], reflected: bool) -> Callable:
    """The operator method ``__<name>__`` (``__r<name>__`` when ``reflected``)."""
    array_op, scalar_op, rscalar_op = names

    def method(self: Any, other: Any) -> Any:
        if isinstance(other, ArrayMethods):
            a, b = (other, self) if reflected else (self, other)
            return _ENGINE.call(array_op, [a, b], {})
        if is_number(other):
            return _ENGINE.call(rscalar_op if reflected else scalar_op, [self],
                                {"scalar": float(other)})
        if isinstance(other, np.ndarray):
            return method(self, self._host_array(other))
        return NotImplemented
    method.__name__ = method.__qualname__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _in_place(name: str) -> Callable:
    forward = binary(name, BINARY[name], False)

    def method(self: Any, other: Any) -> Any:
        result = forward(self, other)
        if result is NotImplemented:
            return result
        if self._buf is None:  # still pending: this array now stands for the new value
            self._entry, self._recorded = result._entry, result._recorded
            _ENGINE.adopt(self)  # (the one pending array of its node now)
            return self
        self[:] = result
        return self
    method.__name__ = method.__qualname__ = f"__i{name}__"
    return method


def host_key(key: Any) -> Any:
    """An index with NDArrays (MXNet's advanced indexing) as numpy integer arrays."""
    if isinstance(key, ArrayMethods):
        return key.asnumpy().astype(np.int64)
    if isinstance(key, tuple):
        return tuple(host_key(k) for k in key)
    return key


def _basic_index(a: Any, parts: tuple) -> tuple[list, list, list, list]:
    """``slice``'s begin, end and step of an index of ints and slices, and which axes stay."""
    begin, end, step, keep = [], [], [], []
    for axis, k in enumerate(parts):
        if isinstance(k, slice):
            begin.append(k.start)
            end.append(k.stop)
            step.append(1 if k.step is None else k.step)
            keep.append(True)
            continue
        n = a.shape[axis]
        i = int(k) + n if k < 0 else int(k)
        if not 0 <= i < n:
            raise ShapeError(f"index {int(k)} is out of bounds for axis {axis} of size {n}")
        begin.append(i)
        end.append(i + 1)
        step.append(1)
        keep.append(False)
    return begin, end, step, keep


class ArrayMethods(Fluent):
    """What NDArray's operators and methods record; the class defines ``_host_array(values)``
    (an array of its context and dtype) and ``_fluent_function(name)`` (``sg.nd.<name>``)."""

    __slots__ = ()

    for _name, _ops in BINARY.items():
        vars()[f"__{_name}__"] = binary(_name, _ops, False)
        if _name in REFLECTED:
            vars()[f"__r{_name}__"] = binary(_name, _ops, True)
        if _name in IN_PLACE:
            vars()[f"__i{_name}__"] = _in_place(_name)
    del _name, _ops
    __div__ = __truediv__  # noqa: F821 (made by the loop above)

    def _host_array(self, values: Any) -> Any:
        raise NotImplementedError

    def __neg__(self) -> Any:
        return _ENGINE.call("negative", [self], {})

    def __abs__(self) -> Any:
        return _ENGINE.call("abs", [self], {})

    def transpose(self, *axes: Any, **kwargs: Any) -> Any:
        """Permute the axes (reversed when none are given)."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ENGINE.call("transpose", [self], {"axes": tuple(axes or kwargs.get("axes", ()))})

    @property
    def T(self) -> Any:  # noqa: N802 (MXNet's name)
        return self.transpose()

    @property
    def stype(self) -> str:
        """Storage type: always 'default' (dense)."""
        return "default"

    def tostype(self, stype: str) -> Any:
        """MXNet's storage conversion: only the dense ('default') storage exists here."""
        if stype != "default":
            raise AttrError(f"tostype({stype!r}): sparse storage is not supported; only "
                            f"'default'")
        return self

    def softrelu(self, *args: Any, **kwargs: Any) -> Any:
        return self._fluent_function("softrelu")(self, *args, **kwargs)

    def cast(self, *args: Any, **kwargs: Any) -> Any:
        return self._fluent_function("Cast")(self, *args, **kwargs)

    def __getitem__(self, key: Any) -> Any:
        """numpy indexing. A view sharing the memory where MXNet gives one (a contiguous
        part, by basic indexing: ``nd_views``); else recorded ops: ``slice``/``Reshape`` for
        ints and slices, ``take`` of the flat positions for the rest while recording (so
        gradients flow), or a copy made on the host."""
        if isinstance(key, slice) and key == slice(None):
            return self
        parts = key if isinstance(key, tuple) else (key,)
        recording = _ENGINE.is_recording()
        plain = all(isinstance(k, (int, np.integer, slice)) for k in parts)
        if plain and len(parts) > self.ndim:
            raise ShapeError(f"index {key!r} has {len(parts)} entries for an array of shape "
                             f"{self.shape}")
        if plain:
            begin, end, step, keep = _basic_index(self, parts)
        view = host_view(self, parts, recording)
        if view is not None:  # MXNet: a contiguous part is a view sharing the memory
            return type(self)(view, self._ctx)
        if not plain:
            if recording:
                positions = self._fluent_function("array")(  # (int64: exact positions)
                    flat_positions(self.shape, host_key(key)), self._ctx, np.int64)
                return self._fluent_function("take")(self.reshape(-1), positions)
            return self._host_array(self.asnumpy()[host_key(key)])
        y = _ENGINE.call("slice", [self], {"begin": tuple(begin), "end": tuple(end),
                                           "step": tuple(step)})
        if all(keep):
            return y
        shape = tuple(d for d, k in zip(y.shape, keep + [True] * (y.ndim - len(keep))) if k)
        return _ENGINE.call("Reshape", [y], {"shape": shape or (1,)})  # MXNet: no 0-d arrays

    def backward(self, out_grad: Optional[Any] = None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        """Gradients of this recorded array into the ``.grad`` of the variables it depends
        on."""
        _ENGINE.backward([self], None if out_grad is None else [out_grad], retain_graph,
                         train_mode)
