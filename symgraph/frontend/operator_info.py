"""MXNet's operator introspection (``mx.operator.get_all_registered_operators``,
``get_operator_arguments``), read from symgraph's registry.

Example::

    >>> sg.operator.get_operator_arguments('Activation').names
    ['data', 'act_type']
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ..core.attrs import REQUIRED, Param, parse_attrs
from ..core.base import AttrError
from ..core.registry import all_aliases, all_ops, get_op, has_op

# Param kind -> MXNet's type word in its argument descriptions
KIND_WORDS = {"int": "int", "float": "float", "bool": "boolean", "shape": "Shape(tuple)",
              "str": "string", "dtype": "dtype", "int?": "int or None",
              "float?": "float or None", "shape?": "Shape or None", "dtype?": "dtype or None",
              "floats": "tuple of <float>", "axis": "Shape or None"}


STAND_IN = {"str": "", "shape": (), "float": 0.0, "bool": False, "floats": ()}


class OperatorArguments(NamedTuple):
    """An operator's argument count, names (inputs first) and type descriptions."""

    narg: int
    names: list
    types: list


def get_all_registered_operators() -> list:
    """Every operator name, MXNet's alternative spellings included."""
    return sorted(set(all_ops()) | set(all_aliases()))


def _describe(p: Param) -> str:
    what = ("{" + ", ".join(repr(c) for c in sorted(p.choices)) + "}" if p.choices
            else KIND_WORDS.get(p.kind, p.kind))
    if p.default is REQUIRED:
        return f"{what}, required"
    return f"{what}, optional, default={str(p.default)!r}"


def _input_names(op: Any) -> list:
    """The op's inputs with its default attributes (none when an attribute is required)."""
    if not callable(op.inputs):
        return list(op.inputs)
    # a stand-in for each required attribute: input lists depend on optional ones (no_bias)
    given = {k: p.choices[0] if p.choices else STAND_IN.get(p.kind, 1)
             for k, p in op.params.items() if p.default is REQUIRED}
    try:
        return list(op.input_names(parse_attrs(op.params, given, f"{op.name}: ")))
    except (AttrError, TypeError, ValueError):
        return []


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """``op_name``'s arguments: inputs (``NDArray-or-Symbol``) then attributes."""
    if not has_op(op_name):
        raise AttrError(f"get_operator_arguments: no operator {op_name!r}")
    op = get_op(op_name)
    inputs = _input_names(op)
    names = inputs + list(op.params)
    types = ["NDArray-or-Symbol"] * len(inputs) + [_describe(p) for p in op.params.values()]
    return OperatorArguments(len(names), names, types)
