"""Parsed attributes of ``sg.sym`` calls, remembered: autodiff builds most backward nodes
through the front end, from a few (op, attrs) combinations (bind time).

Parsing is a pure function of the op's schema and the given values, so a plain-valued call is
parsed once per op and registry generation; errors are never remembered (a bad call raises
each time, with its node's name).
"""
from __future__ import annotations

from typing import Optional

from . import registry
from .attrs import Attrs, parse_attrs
from .base import AttrError
from .base import where as _where
from .opdoc import probe_input_names as _probe_input_names

# (op, registry generation, given attrs) -> (parsed attrs, input names, visible outputs,
# all outputs):
# autodiff makes most of its nodes from a few such combinations; parsing is a pure function of
# the op's schema and the given values.
_PARSED: dict[tuple, tuple[Attrs, tuple[str, ...], int, int]] = {}
_PLAIN = (str, int, float, bool, type(None))  # values remembered (containers are not)


def parsed(opdef: registry.OpDef, attrs: dict,
           node_name: str) -> tuple[Attrs, tuple[str, ...], int, int]:
    """``attrs`` parsed against ``opdef``'s schema, with the op's input names and numbers of
    visible and of all outputs under them (remembered when every value is a plain
    str/int/float/bool/None)."""
    # The types are part of the key: 1, 1.0 and True are equal but may parse differently.
    items: Optional[list] = []
    for k, v in attrs.items():
        t = type(v)
        if t not in _PLAIN:
            items = None
            break
        items.append((k, t, v))  # type: ignore[union-attr]
    key: Optional[tuple] = None
    if items is not None:
        key = (opdef.name, registry.generation(), tuple(items))
        found = _PARSED.get(key)
        if found is not None:
            return found
    values = parse_attrs(opdef.params, attrs, _where(node_name, opdef.name))
    try:  # an op's input/output lists may check its attributes (SliceChannel's num_outputs)
        found = (values, opdef.input_names(values), opdef.num_visible_outputs(values),
                 opdef.num_outputs(values))
    except AttrError as exc:
        raise AttrError(f"{_where(node_name, opdef.name)}{exc}") from None
    if key is not None:
        if len(_PARSED) > 4096:  # distinct scalars could grow it without bound
            _PARSED.clear()
        _PARSED[key] = found
    return found


def input_names(opdef: registry.OpDef, attrs: dict, name: Optional[str]) -> tuple[str, ...]:
    """The op's input names under ``attrs``: from the full parse when the attrs are valid
    (remembered, and apply_op asks the same), else a probe that tolerates invalid values
    (the real error is raised by apply_op)."""
    params = opdef.params
    for k in attrs:
        if k not in params:
            return _probe_input_names(opdef, attrs)
    try:
        return parsed(opdef, attrs, name or "?")[1]
    except AttrError:
        return _probe_input_names(opdef, attrs)
