"""MXNet's sequence ops over padded batches: ``SequenceMask``, ``SequenceLast``,
``SequenceReverse``, and ``_backward_SequenceLast`` (the scatter that is SequenceLast's
gradient).

``data`` has the sequence axis ``axis`` (0: (T, N, ...), 1: (N, T, ...)) and the batch axis the
other of the first two. With ``use_sequence_length=True`` a second input ``sequence_length``
(N,) gives each sequence's length (any dtype; a float is truncated as MXNet's cast to an index
does); without it every sequence has length T and the op has one input, as in MXNet.

Lengths are clipped into the range the op can read, the same on the CPU and the GPU (MXNet
reads out of bounds there): [0, T] for the mask and the reversal, [1, T] for SequenceLast.

Every op is one gather (one thread per output element on the GPU: the ``sequence`` family of
``cuda/lowering_sequence.py``, which reads the op's ``kind`` from its lowering data). The
gradients are the same family: the mask's is the mask with value 0, the reversal's the reversal,
SequenceLast's the scatter ``_backward_SequenceLast``, whose own gradient is SequenceLast; none
flows to ``sequence_length``.

Example::

    y = sg.sym.SequenceMask(x, lengths, use_sequence_length=True, value=-1e9, axis=1)
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, OpDef, RunCtx, register
from ._util import check_attr, fmt, norm_axis
from .indexing import typed_like

_LEN = {"use_sequence_length": Param("bool", False, doc="read lengths from sequence_length "
                                                          "(else every sequence is whole)")}
_AXIS = {"axis": Param("int", 0, doc="the sequence axis: 0 (T, N, ...) or 1 (N, T, ...)")}
MASK_PARAMS = {**_LEN, "value": Param("float", 0.0, doc="written past each length"), **_AXIS}
SEQ_PARAMS = {**_LEN, **_AXIS}


def _inputs(a: Attrs) -> tuple[str, ...]:
    return ("data", "sequence_length") if a["use_sequence_length"] else ("data",)


def _backward_inputs(a: Attrs) -> tuple[str, ...]:
    return ("ograd",) + _inputs(a)[1:] + ("data",)


def _check_axis(a: Attrs, allowed: tuple[int, ...], data: Optional[tuple] = None) -> None:
    """An axis outside ``data``'s dimensions is a ShapeError (as every op's); one inside them
    but not a sequence axis MXNet supports is an AttrError."""
    if data is not None:
        if len(data) < 2:
            raise ShapeError(f"data must have a sequence and a batch axis, got {fmt(data)}")
        norm_axis(a["axis"], len(data))
    check_attr(a["axis"] in allowed, "axis", a["axis"],
               f"must be one of {allowed} (the sequence axis)")


def _dims(a: Attrs, data: tuple) -> tuple[int, int]:
    """(T, N) of ``data``: the sequence and batch sizes."""
    if len(data) < 2:
        raise ShapeError(f"data must have a sequence and a batch axis, got {fmt(data)}")
    return (data[0], data[1]) if a["axis"] == 0 else (data[1], data[0])


def _with_lengths(a: Attrs, ins: list, data: tuple) -> list:
    """``ins`` with data's shape and sequence_length's (N,), checking a given one."""
    ins = [data] + list(ins[1:])
    if a["use_sequence_length"]:
        n = _dims(a, data)[1]
        if ins[1] is not None and tuple(ins[1]) != (n,):
            raise ShapeError(f"sequence_length has shape {fmt(ins[1])}, inferred ({n},) from "
                             f"data {fmt(data)} (axis={a['axis']})")
        ins[1] = (n,)
    return ins


def _same_shape_rule(allowed: tuple[int, ...]):
    """Shape rule of the mask and the reversal: output = data, both directions."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        data = ins[0] if ins[0] is not None else outs[0]
        _check_axis(a, allowed, None if data is None else tuple(data))
        if data is None:
            return ins, outs
        data = tuple(data)
        _dims(a, data)
        if outs[0] is not None and tuple(outs[0]) != data:
            raise ShapeError(f"output has shape {fmt(outs[0])}, data {fmt(data)}")
        return _with_lengths(a, ins, data), [data]
    return rule


def _last_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    _check_axis(a, (0, 1), None if ins[0] is None else tuple(ins[0]))
    if ins[0] is None:
        return ins, outs
    data = tuple(ins[0])
    _dims(a, data)
    return _with_lengths(a, ins, data), [data[:a["axis"]] + data[a["axis"] + 1:]]


def _last_backward_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[-1] if ins[-1] is not None else outs[0]
    if data is None:
        return ins, outs
    data = tuple(data)
    grad = data[:a["axis"]] + data[a["axis"] + 1:]
    ins = [grad] + _with_lengths(a, [data] + list(ins[1:-1]), data)[1:] + [data]
    return ins, [data]


def lengths(a: Attrs, xs: list, t: int, low: int = 0) -> np.ndarray:
    """Each sequence's length as int64, clipped into [low, T] (see the module docstring)."""
    n = _dims(a, xs[0].shape)[1]
    if not a["use_sequence_length"]:
        return np.full(n, t, dtype=np.int64)
    return np.clip(np.asarray(xs[1]).astype(np.int64), low, t)


def _tn(a: Attrs, x: np.ndarray) -> np.ndarray:
    """``x`` viewed as (T, N, ...)."""
    return x if a["axis"] == 0 else np.swapaxes(x, 0, 1)


def _mask(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = _tn(a, xs[0])
    keep = np.arange(x.shape[0])[:, None] < lengths(a, xs, x.shape[0])[None, :]
    keep = keep.reshape(keep.shape + (1,) * (x.ndim - 2))
    return [_tn(a, np.where(keep, x, np.asarray(a["value"], x.dtype)))]


def _reverse(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    t = np.arange(x.shape[0])[:, None]
    n = lengths(a, xs, x.shape[0])[None, :]
    src = np.where(t < n, n - 1 - t, t)
    return [np.take_along_axis(x, src.reshape(src.shape + (1,) * (x.ndim - 2)), axis=0)]


def _last(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = _tn(a, xs[0])
    last = lengths(a, xs, x.shape[0], low=1) - 1
    return [x[last, np.arange(x.shape[1])]]


def _last_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, data = xs[0], xs[-1]
    dx = np.zeros(data.shape, dtype=dy.dtype)
    view = _tn(a, dx)
    last = lengths(a, [data] + xs[1:-1], view.shape[0], low=1) - 1
    view[last, np.arange(view.shape[1])] = dy
    return [dx]


def _length_of(c) -> list:
    return c.inputs[1:2] if c.attrs["use_sequence_length"] else []


def _seq_attrs(c) -> dict:
    return {"use_sequence_length": c.attrs["use_sequence_length"], "axis": c.attrs["axis"]}


register(OpDef(
    "SequenceMask", MASK_PARAMS, _inputs, _same_shape_rule((0, 1)), _mask,
    lambda c: [c.sym.SequenceMask(c.ograds[0], *_length_of(c), value=0.0, **_seq_attrs(c)),
               None],
    INJECTIVE, infer_type=typed_like(0), lowering=("sequence", {"kind": "mask"}),
    doc="data with the steps at or past each sequence's length set to value."))
register(OpDef(
    "SequenceReverse", SEQ_PARAMS, _inputs, _same_shape_rule((0,)), _reverse,
    lambda c: [c.sym.SequenceReverse(c.ograds[0], *_length_of(c), **_seq_attrs(c)), None],
    INJECTIVE, infer_type=typed_like(0), lowering=("sequence", {"kind": "reverse"}),
    doc="data with each sequence's first length steps in reverse order (the padding after "
        "them stays in place); axis 0 only, as MXNet."))
register(OpDef(
    "SequenceLast", SEQ_PARAMS, _inputs, _last_shape, _last,
    lambda c: [c.sym._backward_SequenceLast(c.ograds[0], *_length_of(c), c.inputs[0],
                                            **_seq_attrs(c)), None],
    INJECTIVE, infer_type=typed_like(0), lowering=("sequence", {"kind": "last"}),
    doc="the step at each sequence's length - 1 (the sequence axis removed)."))
register(OpDef(
    "_backward_SequenceLast", SEQ_PARAMS, _backward_inputs, _last_backward_shape,
    _last_backward,
    lambda c: [c.sym.SequenceLast(c.ograds[0], *_length_of(c), **_seq_attrs(c))]
    + [None] * (len(c.inputs) - 1),
    INJECTIVE, infer_type=typed_like(0), lowering=("sequence", {"kind": "last_backward"}),
    doc="Gradient of SequenceLast: ograd at each sequence's last step, 0 elsewhere, in "
        "data's shape (data's values are not read)."))
