"""An op's input names before its attributes are validated: the names depend on some
attributes (``no_bias`` drops ``bias``), and the full parse that checks them needs the node's
name, which is decided after the inputs are known. Invalid values fall back to placeholders so
that the real error is raised later, by the parse, with the node's name.

Example::

    >>> from symgraph import registry
    >>> from symgraph.core.probe import probe_input_names
    >>> import symgraph
    >>> probe_input_names(registry.get_op("FullyConnected"), {"no_bias": True})
    ('data', 'weight')
"""
from __future__ import annotations

from functools import lru_cache

from . import registry
from .attrs import REQUIRED, parse_attrs
from .base import AttrError


def probe_input_names(opdef: registry.OpDef, attrs: dict) -> tuple[str, ...]:
    """Input names for ``attrs`` before full validation (which needs the node name and runs
    in apply_op); invalid values fall back to placeholders so the real error comes later."""
    if not callable(opdef.inputs) and _placeholders_parse(opdef):
        # Names that do not depend on the attrs, and the last candidate below parses: every
        # path returns them (bind time: autodiff builds every backward node through here).
        return tuple(opdef.inputs)
    probe = {k: v for k, v in attrs.items() if k in opdef.params}
    for candidate in (probe, {**_fill_required(opdef), **probe}, _fill_required(opdef)):
        try:
            return opdef.input_names(parse_attrs(opdef.params, candidate, ""))
        except AttrError:
            continue
    return ()


def _placeholders_parse(opdef: registry.OpDef) -> bool:
    """Whether ``opdef``'s attribute schema accepts :func:`_fill_required`'s placeholders
    (remembered per registered op)."""
    if registry.has_op(opdef.name) and registry.get_op(opdef.name) is opdef:
        return _registered_placeholders_parse(opdef.name, registry.generation())
    return _parses(opdef, _fill_required(opdef))


@lru_cache(maxsize=4096)  # keyed by the registry's generation: a re-registered op is asked anew
def _registered_placeholders_parse(name: str, gen: int) -> bool:
    opdef = registry.get_op(name)
    return _parses(opdef, _fill_required(opdef))


def _parses(opdef: registry.OpDef, attrs: dict) -> bool:
    try:
        parse_attrs(opdef.params, attrs, "")
        return True
    except AttrError:
        return False


def _fill_required(opdef: registry.OpDef) -> dict:
    """Placeholder values for required attributes, to learn input names before validation."""
    samples = {"int": 1, "float": 1.0, "bool": False, "shape": (1,), "str": "", "dtype": "float32"}
    return {k: samples.get(p.kind, None) if not p.choices else p.choices[0]
            for k, p in opdef.params.items() if p.default is REQUIRED}
