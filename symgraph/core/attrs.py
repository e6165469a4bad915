"""Typed operator attributes: schema, parsing, validation and frozen, hashable values.

Attributes arrive as Python values from ``sg.sym`` calls or as strings from JSON (MXNet writes
every attribute as a string); both go through the same parser so a JSON round trip yields equal
attrs. Parsed attrs are an immutable mapping so nodes, CSE keys and compile caches can hash them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional

import numpy as np

from .base import AttrError
from .dtypes import BFLOAT16, as_dtype

REQUIRED = object()
"""Default of a parameter that has to be given."""

ANY_KEY = "**"
"""Schema key of ops taking free-form attributes (``Custom``'s kwargs): keys the schema does not
name are parsed with the Param stored under this key instead of being rejected."""


class Attrs(Mapping[str, Any]):
    """Immutable, hashable attribute mapping (sorted key/value tuples)."""

    __slots__ = ("_items", "_dict", "_hash")

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        d = dict(items or {})
        self._items = tuple(sorted(d.items()))
        self._dict = d
        self._hash: Optional[int] = None

    @classmethod
    def from_sorted(cls, items: tuple[tuple[str, Any], ...]) -> "Attrs":
        """Attrs of ``(key, value)`` pairs already sorted by key, keys distinct (checked in
        tests, not here: passes that make one per node skip the copy and the sort)."""
        made = cls.__new__(cls)
        made._items, made._dict, made._hash = items, dict(items), None
        return made

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __iter__(self) -> Iterator[str]:
        return iter(k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        # Cached: CSE and the passes' memo tables hash every node's attrs, fused kernels' hold
        # whole formulas.
        if self._hash is None:
            self._hash = hash(self._items)
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attrs) and self._items == other._items

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}={v!r}" for k, v in self._items) + "}"

    def replace(self, **changes: Any) -> "Attrs":
        """A copy with some values changed."""
        return Attrs({**self._dict, **changes})


def _literal(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
    return value


def _parse_int(v: Any) -> int:
    v = _literal(v)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"expected an integer, got {v!r}")
    return int(v)


NONFINITE = {"inf": float("inf"), "+inf": float("inf"), "-inf": float("-inf"),
             "infinity": float("inf"), "+infinity": float("inf"), "-infinity": float("-inf"),
             "nan": float("nan"), "+nan": float("nan"), "-nan": float("nan")}
"""Text of non-finite floats: Python's ``str`` writes ``inf``/``nan``, C++ streams too."""


def _parse_float(v: Any) -> float:
    if isinstance(v, str) and v.strip().lower() in NONFINITE:
        return NONFINITE[v.strip().lower()]
    v = _literal(v)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
        raise TypeError(f"expected a number, got {v!r}")
    return float(v)


def _parse_bool(v: Any) -> bool:
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise TypeError(f"expected a boolean, got {v!r}")
    if isinstance(v, (bool, np.bool_)) or v in (0, 1):
        return bool(v)
    raise TypeError(f"expected a boolean, got {v!r}")


def parse_shape(v: Any) -> tuple[int, ...]:
    v = _literal(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (tuple, list)):
        return tuple(_parse_int(x) for x in v)
    raise TypeError(f"expected a tuple of integers, got {v!r}")


def _parse_floats(v: Any) -> tuple[float, ...]:
    """A tuple of floats (MXNet's ``tuple of <float>``: a multi-tensor update's ``lrs``)."""
    v = _literal(v)
    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
        return (_parse_float(v),)
    if isinstance(v, (tuple, list, np.ndarray)):
        return tuple(_parse_float(x) for x in v)
    raise TypeError(f"expected a tuple of floats, got {v!r}")


def _parse_str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a string, got {v!r}")
    return v


def _parse_dtype(v: Any) -> str:
    try:
        dt = as_dtype(v)
    except TypeError as exc:
        raise TypeError(f"expected a dtype, got {v!r}") from exc
    if dt.kind in "OSUVMm" and dt != BFLOAT16:  # Python objects, strings, records, dates
        raise TypeError(f"expected a numeric dtype, got {dt} ({v!r})")
    return dt.name


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    return v


def _parse_literal(v: Any) -> Any:
    """A Python literal from its text (lists become tuples so attrs stay hashable); other
    values (numbers, tuples, callables) are kept as given."""
    return _freeze(_literal(v))


def _optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def parse_opt(v: Any) -> Any:
        if v is None or (isinstance(v, str) and v.strip() in ("None", "")):
            return None
        return parse(v)
    return parse_opt


def _parse_shapes(v: Any) -> tuple[tuple[int, ...], ...]:
    """A tuple of shapes (one axes tuple per input of a multi-input op)."""
    v = _literal(v)
    if not isinstance(v, (tuple, list)):
        raise TypeError(f"expected a tuple of tuples of integers, got {v!r}")
    return tuple(parse_shape(x) for x in v)


def _parse_dtypes(v: Any) -> tuple[str, ...]:
    """A tuple of dtype names; the text ``format_value`` writes, ``(bfloat16, float32)``,
    names them unquoted."""
    if isinstance(v, str):
        text = v.strip()
        quoted = _literal(text)
        v = quoted if not isinstance(quoted, str) else \
            [t for t in text.strip("()[]").split(",") if t.strip()]
    if not isinstance(v, (tuple, list)):
        raise TypeError(f"expected a tuple of dtypes, got {v!r}")
    return tuple(_parse_dtype(t.strip() if isinstance(t, str) else t) for t in v)


def _parse_index_tuple(v: Any) -> tuple[Optional[int], ...]:
    """A tuple whose entries are ints or None (``slice``'s begin/end/step: ``(None, 2)``)."""
    v = _literal(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (v,)
    if not isinstance(v, (tuple, list)):
        raise TypeError(f"expected a tuple of integers or None, got {v!r}")
    return tuple(None if x is None or x == "None" else _parse_int(x) for x in v)


def _parse_axis(v: Any) -> Optional[tuple[int, ...]]:
    """MXNet axis attributes: None, an int or a tuple of ints (``()`` means all)."""
    return _optional(parse_shape)(v)


def _parse_subgraph(v: Any) -> Any:
    """A graph held by a control-flow node (``symgraph.core.subgraph.Subgraph``, which sits above
    this module: checked by its shape). JSON gives it in the node's ``subgraphs`` field,
    never as attribute text."""
    if isinstance(v, str) or not (hasattr(v, "inputs") and hasattr(v, "outputs")):
        raise TypeError(f"expected a subgraph (symbol JSON holds it in the node's "
                        f"'subgraphs' field), got {str(v)[:60]!r}")
    return v


PARSERS: dict[str, Callable[[Any], Any]] = {
    "int": _parse_int,
    "float": _parse_float,
    "bool": _parse_bool,
    "shape": parse_shape,
    "floats": _parse_floats,
    "str": _parse_str,
    "dtype": _parse_dtype,
    "int?": _optional(_parse_int),
    "float?": _optional(_parse_float),
    "shape?": _optional(parse_shape),
    "dtype?": _optional(_parse_dtype),
    "axis": _parse_axis,
    "str?": _optional(_parse_str),
    "index_tuple": _parse_index_tuple,
    "shapes": _parse_shapes,
    "dtypes": _parse_dtypes,
    "any": lambda v: v,
    "text": lambda v: v if isinstance(v, str) else str(v),
    "literal": _parse_literal,
    "subgraph": _parse_subgraph,
}


@dataclass(frozen=True)
class Param:
    """One attribute of an op: its kind (a key of ``PARSERS``), default and allowed values."""

    kind: str
    default: Any = REQUIRED
    choices: tuple = ()
    doc: str = ""

    def parse(self, value: Any) -> Any:
        """Parse and validate ``value``; raises TypeError/ValueError with the reason."""
        out = PARSERS[self.kind](value)
        if self.choices and out not in self.choices:
            raise ValueError(f"must be one of {list(self.choices)}, got {out!r}")
        return out


def parse_attrs(schema: Mapping[str, Param], given: Mapping[str, Any], where: str) -> Attrs:
    """Validate ``given`` against ``schema`` and fill defaults.

    ``where`` prefixes error messages (``"fc1 (FullyConnected): "``).
    """
    unknown = sorted(set(given) - set(schema))
    if unknown and ANY_KEY not in schema:
        raise AttrError(f"{where}unknown attribute(s) {unknown}; allowed: {sorted(schema)}")
    out: dict[str, Any] = {}
    for key in unknown:
        out[key] = schema[ANY_KEY].parse(given[key])
    for key, param in schema.items():
        if key == ANY_KEY:
            continue
        if key in given:
            try:
                out[key] = param.parse(given[key])
            except (TypeError, ValueError) as exc:
                raise AttrError(f"{where}attribute {key}={given[key]!r}: {exc}") from None
        elif param.default is REQUIRED:
            raise AttrError(f"{where}missing required attribute '{key}'")
        else:
            out[key] = param.default
    return Attrs(out)


def format_value(value: Any) -> str:
    """Serialise one parsed attribute value to MXNet's string form."""
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)
