"""Helpers shared by the recurrent cells and layers: a sequence given as one tensor or as a list
of steps, stacking and splitting along the time axis, and the variable-length masking and
reversal MXNet 1.9.1's cells do with ``SequenceMask`` / ``SequenceReverse`` / ``SequenceLast``.

``F`` is ``sg.nd`` or ``sg.sym``, as in ``hybrid_forward``.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

from ...runtime import ndarray as _nd
from ...frontend import symbol as _sym
from ...core.base import AttrError
from ...frontend.symbol import Symbol


def front_end(x: Any) -> Any:
    """``sg.sym`` for a Symbol (or a list starting with one), else ``sg.nd``."""
    first = x[0] if isinstance(x, (list, tuple)) else x
    return _sym if isinstance(first, Symbol) else _nd


def is_tensor(x: Any) -> bool:
    return not isinstance(x, (list, tuple))


def stack(F: Any, xs: Sequence[Any], axis: int) -> Any:
    """MXNet's ``stack``: the steps joined along a new axis ``axis``."""
    return F.Concat(*[F.expand_dims(x, axis=axis) for x in xs], dim=axis, num_args=len(xs))


def split(F: Any, x: Any, length: int, axis: int) -> list:
    """A sequence tensor as a list of its ``length`` steps along ``axis``."""
    if length == 1:
        return [F.squeeze(x, axis=axis)]
    return list(F.split(x, axis=axis, num_outputs=length, squeeze_axis=True))


def format_sequence(length: Optional[int], inputs: Any, layout: str, merge: Optional[bool]
                    ) -> tuple[Any, int, Any, int]:
    """(inputs as a list of steps (``merge`` False), one tensor (True) or as given (None),
    the time axis of ``layout``, F, the batch size (0 for symbols))."""
    if layout not in ("NTC", "TNC"):
        raise AttrError(f"layout={layout!r}: must be 'NTC' or 'TNC'")
    axis, batch_axis = layout.find("T"), layout.find("N")
    F = front_end(inputs)
    batch = 0
    if is_tensor(inputs):
        if F is _nd:
            batch = inputs.shape[batch_axis]
            length = inputs.shape[axis] if length is None else length
            if inputs.shape[axis] != length:
                raise AttrError(f"unroll: length={length} but the inputs have "
                                f"{inputs.shape[axis]} steps along axis {axis} ({layout})")
        if merge is False:
            inputs = split(F, inputs, length, axis)
    else:
        if length is not None and len(inputs) != length:
            raise AttrError(f"unroll: length={length} but {len(inputs)} input steps given")
        if F is _nd:
            batch = inputs[0].shape[batch_axis - (batch_axis > axis)]
        if merge is True:
            inputs = stack(F, inputs, axis)
    return inputs, axis, F, batch


def mask_variable_length(F: Any, data: Any, length: int, valid_length: Any, axis: int,
                         merge: bool) -> Any:
    """Steps at or past each sequence's valid length set to 0 (tensor or list as ``merge``)."""
    if not is_tensor(data):
        data = stack(F, data, axis)
    out = F.SequenceMask(data, valid_length, use_sequence_length=True, axis=axis)
    return out if merge else split(F, out, length, axis)


def reverse_sequences(F: Any, steps: Sequence[Any], length: int, valid_length: Any) -> list:
    """Each sequence's first valid-length steps reversed (all steps without lengths)."""
    if valid_length is None:
        return list(reversed(steps))
    rev = F.SequenceReverse(stack(F, steps, 0), valid_length, use_sequence_length=True)
    return split(F, rev, length, 0)


def last_states(F: Any, per_step: Sequence[Sequence[Any]], valid_length: Any) -> list:
    """Each state at its sequence's last valid step, from the states after every step."""
    return [F.SequenceLast(stack(F, list(s), 0), valid_length, use_sequence_length=True)
            for s in zip(*per_step)]


def call_state_func(func: Callable, name: str, info: dict) -> Any:
    """``func(name=..., shape=..., **kwargs)`` as MXNet's ``begin_state`` calls it, passing
    only the keywords ``func`` takes (``sg.nd.zeros`` takes no name). The state's
    ``__layout__`` is left out: symgraph's creation functions take no layout."""
    info = {k: v for k, v in info.items() if k != "__layout__"}
    if func in (_sym.zeros, _sym.ones) and 0 in info.get("shape", ()):
        # MXNet's symbolic begin state (0, H) leaves the batch to the graph; symgraph's
        # creation ops spell that -1 (a 0 there is an empty axis in a bind)
        info["shape"] = tuple(-1 if d == 0 else d for d in info["shape"])
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return func(name=name, **info)
    kwargs = {"name": name, **info}
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return func(**kwargs)


def zero_states(cell: Any, F: Any, batch: int, inputs: Any, layout: str) -> list:
    """``cell``'s default begin states, zeros. On NDArrays: ``batch`` rows, of the inputs'
    context and dtype. On Symbols: one row broadcast to the inputs' batch (``layout``'s N of
    a tensor, axis 0 of a list of steps), so the state's batch comes from the data within
    the graph (MXNet writes ``zeros((0, H))`` and leaves the 0 to inference, which a traced
    block, run node by node, cannot do)."""
    first = inputs if is_tensor(inputs) else inputs[0]
    if F is not _sym:
        return cell.begin_state(batch, func=F.zeros, ctx=first.context, dtype=first.dtype)
    axis = layout.find("N") if is_tensor(inputs) else 0

    def broadcast_zeros(name: str, shape: tuple, **kwargs: Any) -> Any:
        row = F.zeros(shape=(1,) + tuple(shape[1:]), dtype=kwargs.get("dtype"))
        return F.broadcast_like(row, first, lhs_axes=(0,), rhs_axes=(axis,), name=name)
    return cell.begin_state(0, func=broadcast_zeros)

