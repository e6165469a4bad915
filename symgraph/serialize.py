"""Symbol JSON: MXNet's node-list format plus a format version, loaded without eval or pickle.

Format (version 1)::

    {"nodes": [{"op": "null" | op name, "name": str, "attrs": {str: str},
                "inputs": [[node index, output index, 0], ...]}, ...],
     "arg_nodes": [indices of variables], "heads": [[node index, output index, 0], ...],
     "attrs": {"symgraph_json_version": ["int", 1]}}

Node ``attrs`` hold op attributes and user attributes (``__shape__``, ``__lr_mult__``...) as
strings, as MXNet writes them; on load op attributes are parsed by the op's schema. MXNet's own
JSON (``attr``/``param`` keys of older versions) loads too.
"""
from __future__ import annotations

import json
from typing import Any

from .attrs import ANY_KEY, Attrs, format_value, parse_attrs
from .fileio import write_text
from .base import AttrError, GraphError, SymgraphError, where
from .graph import Entry, Node, topo_order
from .registry import get_op

FORMAT_VERSION = 1


def to_json(sym: Any) -> str:
    """Serialise ``sym`` (deterministic: same graph, same text)."""
    nodes = topo_order(sym.outputs_)
    index = {n: i for i, n in enumerate(nodes)}
    out_nodes = []
    for n in nodes:
        for k, v in n.attrs.items():
            if callable(v):
                raise GraphError(f"{where(n.name, n.op)}attribute {k} is a Python callable "
                                 f"({v!r}), which JSON cannot hold; give its value instead")
        attrs = {k: format_value(v) for k, v in n.attrs.items()}
        attrs.update({k: str(v) for k, v in n.extra.items()})
        out_nodes.append({"op": n.op, "name": n.name, "attrs": attrs,
                          "inputs": [[index[e.node], e.index, 0] for e in n.inputs]})
    doc = {"nodes": out_nodes,
           "arg_nodes": [i for i, n in enumerate(nodes) if n.is_variable],
           "heads": [[index[e.node], e.index, 0] for e in sym.outputs_],
           "attrs": {"symgraph_json_version": ["int", FORMAT_VERSION]}}
    return json.dumps(doc, indent=2)


def _check_version(doc: dict) -> None:
    version = doc.get("attrs", {}).get("symgraph_json_version")
    if version is not None and int(version[1]) > FORMAT_VERSION:
        raise GraphError(f"JSON format version {version[1]} is newer than this symgraph "
                         f"reads ({FORMAT_VERSION})")


def _node_from_json(i: int, raw: dict, built: list[Node]) -> Node:
    op, name = raw["op"], raw["name"]
    attrs = dict(raw.get("attrs") or raw.get("attr") or {})
    attrs.update(raw.get("param") or {})
    inputs = []
    for ref in raw.get("inputs", []):
        src, out = int(ref[0]), int(ref[1])
        if not 0 <= src < i:
            raise GraphError(f"{name}: input refers to node {src}, which is not defined before it")
        inputs.append(Entry(built[src], out))
    if op == "null":
        return Node("null", name, Attrs(), (), Attrs({k: str(v) for k, v in attrs.items()}))
    opdef = get_op(op)
    # Ops with free-form attributes (Custom) own every key except user ``__dunder__`` ones.
    is_param = {k: k in opdef.params or (ANY_KEY in opdef.params and not k.startswith("__"))
                for k in attrs}
    params = {k: v for k, v in attrs.items() if is_param[k]}
    extra = {k: str(v) for k, v in attrs.items() if not is_param[k]}
    parsed = parse_attrs(opdef.params, params, where(name, opdef.name))
    want = len(opdef.input_names(parsed))
    if len(inputs) != want:
        raise GraphError(f"{where(name, opdef.name)}{len(inputs)} inputs in JSON, the op takes "
                         f"{want} {list(opdef.input_names(parsed))}")
    return Node(opdef.name, name, parsed, tuple(inputs), Attrs(extra))


def from_json(text: str) -> Any:
    """Parse :func:`to_json` output (or MXNet's symbol JSON) into a Symbol."""
    from .symbol import Symbol
    try:
        doc = json.loads(text)
        _check_version(doc)
        built: list[Node] = []
        for i, raw in enumerate(doc["nodes"]):
            built.append(_node_from_json(i, raw, built))
        heads = [Entry(built[int(h[0])], int(h[1])) for h in doc["heads"]]
    except AttrError as exc:
        raise GraphError(f"malformed symbol JSON: {exc}") from None
    except SymgraphError:
        raise
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise GraphError(f"malformed symbol JSON: {type(exc).__name__}: {exc}") from None
    for e in heads:
        if e.index >= e.node.num_outputs:
            raise GraphError(f"malformed symbol JSON: head {e.node.name}[{e.index}] out of range")
    return Symbol(heads)


def save(sym: Any, fname: str) -> None:
    """Write ``sym.tojson()`` to ``fname`` atomically (no half-written file on failure)."""
    write_text(fname, to_json(sym))
