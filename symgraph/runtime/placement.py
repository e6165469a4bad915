"""MXNet's ``group2ctx``: parts of one graph placed on other contexts by their ``ctx_group``.

A node made inside ``with sg.AttrScope(ctx_group='dev1')`` belongs to group ``dev1``; binding
with ``group2ctx={'dev1': sg.cpu(1)}`` puts that part on ``cpu(1)``. Between CPU contexts a part
boundary is a copy from one host buffer to another, so the host backend runs the whole graph
as one program and the arrays of each grouped variable (argument and gradient) live on their
group's context, as MXNet allocates them. A graph runs on one GPU, so a group placed on another
device than the executor's GPU (or a GPU part beside CPU parts) is refused by name.

Example::

    >>> import symgraph as sg
    >>> with sg.AttrScope(ctx_group='dev1'):
    ...     a = sg.sym.var('a') * 2
    >>> b = sg.sym.var('b')
    >>> exe = (a + b).simple_bind(sg.cpu(0), a=(2,), b=(2,), group2ctx={'dev1': sg.cpu(1)})
    >>> exe.arg_dict['a'].context, exe.grad_dict['b'].context
    (cpu(1), cpu(0))
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..core.base import AttrError, BindError
from ..core.context import Context

GROUP_KEY = "__ctx_group__"


def check_group2ctx(ctx: Context, group2ctx: Optional[Mapping[str, Any]]) -> frozenset:
    """The contexts arrays of this bind may be on: ``ctx`` and ``group2ctx``'s values. Raises
    ``BindError`` for a placement that cannot run (a part on another device than a GPU
    executor's), ``AttrError`` for a value that is not a context."""
    places = {ctx}
    for group, where in (group2ctx or {}).items():
        if not isinstance(where, Context):
            raise AttrError(f"group2ctx[{group!r}]: expected a Context such as sg.cpu(1), got "
                            f"{where!r}")
        if where != ctx and "gpu" in (where.device_type, ctx.device_type):
            raise BindError(f"group2ctx: group {group!r} is placed on {where}, the executor on "
                            f"{ctx}; symgraph runs one graph on one GPU, so groups may go to "
                            f"other contexts only when all of them are CPU contexts")
        places.add(where)
    return frozenset(places)


def check_array_contexts(ctx: Context, group2ctx: Optional[Mapping[str, Any]],
                         groups: Sequence[tuple[str, Sequence[str], Sequence]]) -> None:
    """Every array of ``groups`` ((kind, names, arrays)) is an NDArray on a context of this
    bind (``ctx``, or a context of ``group2ctx``)."""
    from .ndarray import NDArray
    places = check_group2ctx(ctx, group2ctx)
    for kind, names, arrays in groups:
        for n, a in zip(names, arrays):
            if a is None:
                continue
            if not isinstance(a, NDArray):
                raise BindError(f"{kind} {n}: expected an NDArray, got {type(a).__name__}")
            if a.context not in places:
                where = f"executor on {ctx}" if len(places) == 1 else \
                    f"this bind's contexts are {sorted(places, key=str)}"
                raise BindError(f"{kind} {n}: array is on {a.context}, {where}")


def variable_contexts(symbol: Any, ctx: Context,
                      group2ctx: Optional[Mapping[str, Any]]) -> dict[str, Context]:
    """The context of each input variable of ``symbol`` placed off ``ctx``: its group's in
    ``group2ctx`` (a group that ``group2ctx`` does not name stays on ``ctx``, as in MXNet;
    variables on ``ctx`` may be left out)."""
    check_group2ctx(ctx, group2ctx)
    out: dict[str, Context] = {}
    if not group2ctx:  # (the usual bind: no walk over the graph)
        return out
    for v in symbol.graph().variables():
        group = v.extra.get(GROUP_KEY) if v.extra else None
        out[v.name] = (group2ctx or {}).get(group, ctx) if group is not None else ctx
    return out


def device_groups(group2ctxs: Any, n_devices: int) -> list[Optional[dict]]:
    """MXNet's ``Module(group2ctxs=...)`` for ``n_devices`` data-parallel devices: one
    ``group2ctx`` dict per device. ``group2ctxs`` is None, a list of one dict per device, or a
    dict whose values are a context (every device) or a list of one or ``n_devices`` contexts.

    Example::

        >>> device_groups({'dev1': sg.cpu(2), 'dev2': [sg.cpu(3), sg.cpu(4)]}, 2)
        [{'dev1': cpu(2), 'dev2': cpu(3)}, {'dev1': cpu(2), 'dev2': cpu(4)}]
    """
    if group2ctxs is None:
        return [None] * n_devices
    if isinstance(group2ctxs, (list, tuple)):
        if len(group2ctxs) != n_devices:
            raise AttrError(f"group2ctxs: a list of {len(group2ctxs)} dicts for {n_devices} "
                            f"devices (one dict per device)")
        return [dict(g) if g is not None else None for g in group2ctxs]
    if not isinstance(group2ctxs, Mapping):
        raise AttrError(f"group2ctxs: expected a dict of group -> context(s) or a list of one "
                        f"such dict per device, got {type(group2ctxs).__name__}")
    out: list[Optional[dict]] = [{} for _ in range(n_devices)]
    for group, where in group2ctxs.items():
        ctxs = [where] if isinstance(where, Context) else list(where)
        if len(ctxs) not in (1, n_devices):
            raise AttrError(f"group2ctxs[{group!r}]: {len(ctxs)} contexts for {n_devices} "
                            f"devices (give one, or one per device)")
        for k in range(n_devices):
            out[k][group] = ctxs[k if len(ctxs) > 1 else 0]  # type: ignore[index]
    return out
