"""``Executor.reshape``: a new executor for other input shapes that shares memory with the old
one, as MXNet's does: arrays whose shape is unchanged are the same arrays, arrays that shrink are
views on the front of the old buffers, and arrays that grow are fresh (only with
``allow_up_sizing``)."""
from __future__ import annotations

from math import prod
from typing import Any, Optional

from ..core.base import BindError
from .ndarray import NDArray, zeros


def view(arr: NDArray, shape: tuple[int, ...]) -> NDArray:
    """An NDArray of ``shape`` on the first elements of ``arr``'s buffer (no copy)."""
    n = prod(shape)
    return NDArray(arr._data.reshape(-1)[:n].reshape(shape), arr.context)


def _reuse(name: str, old: Optional[NDArray], shape: tuple[int, ...], dtype: Any, ctx: Any,
           allow_up_sizing: bool) -> Optional[NDArray]:
    """The array for ``name`` under its new ``shape``: ``old`` itself, a view on it, or new."""
    if old is None:
        return None
    if old.shape == shape:
        return old
    if prod(shape) <= old.size:
        return view(old, shape)
    if not allow_up_sizing:
        raise BindError(f"reshape: {name} grows from {old.shape} to {shape}; pass "
                        f"allow_up_sizing=True to allocate a new array")
    return zeros(shape, ctx, dtype)


def reshape(exe: Any, sym: Any, ctx: Any, grad_req: dict[str, str], partial_shaping: bool,
            allow_up_sizing: bool, shapes: dict[str, tuple]) -> Any:
    """A new executor of ``exe``'s symbol ``sym`` (bound on ``ctx`` with ``grad_req``) with the
    input shapes in ``shapes`` (MXNet's ``Executor.reshape``). Without ``partial_shaping``,
    only the named inputs may change shape; everything else must keep its shape."""
    arg_names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()
    unknown = sorted(set(shapes) - set(arg_names))
    if unknown:
        raise BindError(f"reshape: {unknown} are not arguments; arguments: {arg_names}")
    given = {n: a.shape for n, a in exe.arg_dict.items() if n not in shapes and
             not partial_shaping}
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**given, **shapes)
    if not partial_shaping:
        changed = [n for n, s in zip(arg_names, arg_shapes)
                   if n not in shapes and s != exe.arg_dict[n].shape]
        changed += [n for n, s in zip(aux_names, aux_shapes) if s != exe.aux_dict[n].shape]
        if changed:
            raise BindError(f"reshape: the shapes of {changed} would change; pass "
                            f"partial_shaping=True to allow it")
    args = [_reuse(n, exe.arg_dict[n], s, exe.arg_dict[n].dtype, ctx, allow_up_sizing)
            for n, s in zip(arg_names, arg_shapes)]
    grads = [_reuse(n, g, s, g.dtype if g is not None else None, ctx, allow_up_sizing)
             for n, g, s in zip(arg_names, exe.grad_arrays, arg_shapes)]
    aux = [_reuse(n, exe.aux_dict[n], s, exe.aux_dict[n].dtype, ctx, allow_up_sizing)
           for n, s in zip(aux_names, aux_shapes)]
    new = type(exe)(sym, ctx, args, grads, list(grad_req.values()), aux)  # an Executor
    for i, (old, shape) in enumerate(zip(exe.outputs, out_shapes)):
        if old.shape == tuple(shape) or prod(shape) <= old.size:
            new.outputs[i] = view(old, tuple(shape))  # MXNet shares output memory too
    new.output_dict = dict(zip(sym.list_outputs(), new.outputs))
    return new
