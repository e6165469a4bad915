"""Symbol JSON: MXNet's node-list format plus a format version, loaded without eval or pickle.

Format (version 1)::

    {"nodes": [{"op": "null" | op name, "name": str, "attrs": {str: str},
                "inputs": [[node index, output index, 0], ...]}, ...],
     "arg_nodes": [indices of variables], "heads": [[node index, output index, 0], ...],
     "attrs": {"mxnet_version": ["int", 10901], "symgraph_json_version": ["int", 1]}}

Node ``attrs`` hold op attributes and user attributes (``__shape__``, ``__lr_mult__``...) as
strings, as MXNet writes them; on load op attributes are parsed by the op's schema. A variable's
``__dtype__`` is MXNet's integer type code in the file (``"0"`` float32, ``"2"`` float16...) and
a numpy name in memory. MXNet's own JSON (``attr``/``param`` keys of older versions) loads too.
"""
from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ..core.attrs import ANY_KEY, Attrs, format_value, parse_attrs
from ..core.base import AttrError, GraphError, SymgraphError, where
from ..core.fileio import read_limited, write_text
from ..runtime.ndfile import FLAG_DTYPES
from ..core.graph import Entry, Graph, Node, topo_order
from ..core.registry import get_op
from ..core.subgraph import Subgraph
from ..core.util import is_np_shape

FORMAT_VERSION = 1
# The MXNet release whose JSON this matches (1.9.1 as MXNet encodes it: 10000 * major +
# 100 * minor + patch). Without it MXNet assumes v0.8.0 and runs its legacy upgrade.
MXNET_VERSION = 10901


def to_json(sym: Any) -> str:
    """Serialise ``sym`` (deterministic: same graph, same text)."""
    doc = graph_doc(sym.outputs_)
    doc["attrs"] = {"mxnet_version": ["int", MXNET_VERSION],
                    "symgraph_json_version": ["int", FORMAT_VERSION]}
    if is_np_shape():  # MXNet marks files written under NumPy shape semantics
        doc["attrs"]["is_np_shape"] = ["int", 1]
    return json.dumps(doc, indent=2)


def _subgraph_params(op: str) -> list[str]:
    """The op's attributes holding subgraphs, in declaration order (MXNet's ``subgraphs``)."""
    return [k for k, p in get_op(op).params.items() if p.kind == "subgraph"]


def graph_doc(outputs: Any, inputs: Any = ()) -> dict:
    """The node list of ``outputs`` as MXNet's JSON object (no top-level ``attrs``). A
    subgraph is written with its ``inputs`` as ``arg_nodes`` in their order (variables no
    output reads are appended), and a control-flow node's subgraphs in its ``subgraphs``."""
    nodes = topo_order(outputs)
    seen = set(nodes)
    nodes += [n for n in inputs if n not in seen]
    index = {n: i for i, n in enumerate(nodes)}
    out_nodes = []
    codes = {v.name: str(k) for k, v in FLAG_DTYPES.items()}
    for n in nodes:
        for k, v in n.attrs.items():
            if callable(v):
                raise GraphError(f"{where(n.name, n.op)}attribute {k} is a Python callable "
                                 f"({v!r}), which JSON cannot hold; give its value instead")
        held = [] if n.is_variable else _subgraph_params(n.op)
        attrs = {k: format_value(v) for k, v in n.attrs.items() if k not in held}
        attrs.update({k: str(v) for k, v in n.extra.items()})
        if "__dtype__" in attrs and n.is_variable:  # MXNet's integer type codes
            attrs["__dtype__"] = codes.get(attrs["__dtype__"], attrs["__dtype__"])
        row: dict = {"op": n.op, "name": n.name, "attrs": attrs,
                     "inputs": [[index[e.node], e.index, 0] for e in n.inputs]}
        if held:
            row["subgraphs"] = [graph_doc(n.attrs[k].outputs, n.attrs[k].inputs)
                                for k in held]
        out_nodes.append(row)
    args = [index[n] for n in inputs] if inputs else \
        [i for i, n in enumerate(nodes) if n.is_variable]
    return {"nodes": out_nodes, "arg_nodes": args,
            "heads": [[index[e.node], e.index, 0] for e in outputs]}


MAX_DEPTH = 32
"""JSON nesting allowed (symbol JSON needs 5; deeper text is hostile, and would recurse)."""
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _bad(msg: str) -> GraphError:
    return GraphError(f"malformed symbol JSON: {msg}")


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before ``json`` recurses into it."""
    depth = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _bad(f"nesting deeper than {MAX_DEPTH} levels")
        elif c in "]}":
            depth -= 1


def _refuse_constant(name: str) -> Any:
    raise _bad(f"{name} is not JSON (attribute values are strings: write \"inf\", \"nan\")")


def _index(value: Any, limit: int, what: str) -> int:
    """A JSON integer in ``[0, limit)``; fractions, negatives, booleans and strings refused."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad(f"{what} must be an integer, got {value!r}")
    if not 0 <= value < limit:
        raise _bad(f"{what} is {value}, outside [0, {limit})")
    return value


def _entry(ref: Any, built: list[Node], what: str) -> Entry:
    """``[node, output]`` or ``[node, output, version]`` referring to a node built already."""
    if not isinstance(ref, list) or len(ref) not in (2, 3):
        raise _bad(f"{what} must be [node, output, version], got {ref!r}")
    src = ref[0]
    if isinstance(src, int) and not isinstance(src, bool) and src >= len(built):
        raise _bad(f"{what} refers to node {src}, which is not defined before it")
    src = _index(src, len(built), f"{what} node index")
    out = _index(ref[1], built[src].num_outputs, f"{what} output index of {built[src].name}")
    if len(ref) == 3:
        _index(ref[2], 1 << 31, f"{what} version")
    return Entry(built[src], out)


def _string_dict(raw: dict, key: str, name: str) -> dict[str, str]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(f"node {name}: '{key}' must be an object, got {type(value).__name__}")
    for k, v in value.items():
        if not isinstance(v, str):
            raise _bad(f"node {name}: attribute {k} must be a string, got {v!r}")
    return value


def _variable_attrs(name: str, attrs: dict[str, str]) -> dict[str, str]:
    """Check the user attributes symgraph interprets, so a bad one fails here, naming the
    variable, not later in inference; MXNet's integer ``__dtype__`` codes become names."""
    from ..core.attrs import PARSERS
    from ..core.init_registry import from_spec
    out = dict(attrs)
    try:
        if "__dtype__" in attrs:
            code = attrs["__dtype__"].strip()
            dtype = FLAG_DTYPES[int(code)] if code.isascii() and code.isdigit() else np.dtype(code)
            if dtype not in FLAG_DTYPES.values():
                raise ValueError(f"unsupported dtype {dtype}")
            out["__dtype__"] = dtype.name
        if "__shape__" in attrs and min(PARSERS["shape"](attrs["__shape__"]), default=0) < 0:
            raise ValueError("negative dimension")
        for key in ("__lr_mult__", "__wd_mult__"):
            if key in attrs:
                PARSERS["float"](attrs[key])
        if "__init__" in attrs:
            _check_depth(attrs["__init__"])
            from_spec(attrs["__init__"])
    except (ValueError, TypeError, KeyError, AttrError, SyntaxError, RecursionError) as exc:
        bad = [k for k in ("__dtype__", "__shape__", "__lr_mult__", "__wd_mult__", "__init__")
               if k in attrs]
        raise GraphError(f"variable {name}: bad user attribute among {bad} "
                         f"({ {k: attrs[k][:60] for k in bad} }): {exc}") from None
    return out


def _split_attrs(opdef: Any, name: str, attrs: dict[str, str]) -> tuple[dict, dict]:
    """Op parameters and user ``__dunder__`` attributes; any other key is refused, as MXNet
    and the Python API do (``strides`` for ``stride`` must not be silently dropped)."""
    params, extra = {}, {}
    for k, v in attrs.items():
        dunder = k.startswith("__") and k.endswith("__") and len(k) > 4
        if k in opdef.params or (ANY_KEY in opdef.params and not dunder):
            params[k] = v
        elif dunder:
            extra[k] = v
        else:
            known = sorted(p for p in opdef.params if p != ANY_KEY)
            raise GraphError(f"{where(name, opdef.name)}unknown attribute {k!r} in JSON; "
                             f"{opdef.name} takes {known} and user attributes named "
                             f"__like_this__")
    return params, extra


def _node_from_json(i: int, raw: Any, built: list[Node]) -> Node:
    if not isinstance(raw, dict):
        raise _bad(f"node {i} must be an object, got {type(raw).__name__}")
    op, name = raw.get("op"), raw.get("name")
    if not isinstance(op, str) or not isinstance(name, str) or not name:
        raise _bad(f"node {i} needs string 'op' and non-empty 'name', got {op!r}, {name!r}")
    attrs = dict(_string_dict(raw, "attrs", name) or _string_dict(raw, "attr", name))
    attrs.update(_string_dict(raw, "param", name))
    refs = raw.get("inputs", [])
    if not isinstance(refs, list):
        raise _bad(f"node {name}: 'inputs' must be a list")
    inputs = [_entry(r, built, f"node {name} input {k}") for k, r in enumerate(refs)]
    if op == "null":
        if inputs:
            raise _bad(f"variable {name} has inputs")
        return Node("null", name, Attrs(), (), Attrs(_variable_attrs(name, attrs)))
    opdef = get_op(op)
    if any(p.kind == "any" for p in opdef.params.values()):
        raise GraphError(f"{where(name, opdef.name)}internal op; graphs holding it cannot be "
                         f"loaded from JSON")
    params, extra = _split_attrs(opdef, name, attrs)
    params.update(_subgraphs(raw, opdef.name, name))
    parsed = parse_attrs(opdef.params, params, where(name, opdef.name))
    want = len(opdef.input_names(parsed))
    if len(inputs) != want:
        raise GraphError(f"{where(name, opdef.name)}{len(inputs)} inputs in JSON, the op takes "
                         f"{want} {list(opdef.input_names(parsed))}")
    return Node(opdef.name, name, parsed, tuple(inputs), Attrs(extra))


def _subgraphs(raw: dict, op: str, name: str) -> dict[str, Subgraph]:
    """The node's ``subgraphs`` under the op's subgraph attribute names (MXNet's order);
    a subgraph's inputs are its ``arg_nodes``, in that order."""
    held, docs = _subgraph_params(op), raw.get("subgraphs", [])
    if not isinstance(docs, list) or len(docs) != len(held):
        raise _bad(f"node {name} ({op}) needs {len(held)} subgraphs {held}, got "
                   f"{len(docs) if isinstance(docs, list) else docs!r}")
    out = {}
    for key, doc in zip(held, docs):
        built, heads = _build(doc)
        out[key] = Subgraph([built[i] for i in doc.get("arg_nodes", [])], heads)
    return out


def _check_doc(doc: Any) -> list:
    if not isinstance(doc, dict):
        raise _bad(f"the document must be an object, got {type(doc).__name__}")
    attrs = doc.get("attrs", {})
    version = attrs.get("symgraph_json_version") if isinstance(attrs, dict) else None
    if version is not None:
        if not (isinstance(version, list) and len(version) == 2 and
                isinstance(version[1], (int, str)) and str(version[1]).isdigit()):
            raise _bad(f"symgraph_json_version must be [\"int\", N], got {version!r}")
        if int(version[1]) > FORMAT_VERSION:
            raise GraphError(f"JSON format version {version[1]} is newer than this symgraph "
                             f"reads ({FORMAT_VERSION})")
    nodes, heads = doc.get("nodes"), doc.get("heads")
    if not isinstance(nodes, list) or not nodes:
        raise _bad("'nodes' must be a non-empty list")
    if not isinstance(heads, list) or not heads:
        raise _bad("'heads' must be a non-empty list")
    return nodes


def _build(doc: Any) -> tuple[list[Node], list[Entry]]:
    built: list[Node] = []
    variables: dict[str, int] = {}
    for i, raw in enumerate(_check_doc(doc)):
        node = _node_from_json(i, raw, built)
        if node.is_variable and variables.setdefault(node.name, i) != i:
            raise _bad(f"nodes {variables[node.name]} and {i} are both variables named "
                       f"{node.name!r}")
        built.append(node)
    args = doc.get("arg_nodes", [])
    if not isinstance(args, list):
        raise _bad("'arg_nodes' must be a list")
    for k, a in enumerate(args):
        if not built[_index(a, len(built), f"arg_nodes[{k}]")].is_variable:
            raise _bad(f"arg_nodes[{k}] = {a} is node {built[a].name}, not a variable")
    return built, [_entry(h, built, f"head {k}") for k, h in enumerate(doc["heads"])]


def graph_from_json(text: str) -> Graph:
    """Parse :func:`to_json` output (or MXNet's symbol JSON) into a Graph (``sg.sym.load_json``
    wraps it in a Symbol: this module sits below ``symbol.py``).

    Every problem raises GraphError (op attribute errors are wrapped), before any graph exists:
    bad JSON, nesting deeper than MAX_DEPTH, wrong JSON types, indices that are fractional,
    negative or out of range, unknown ops, internal ops, unknown attributes (user attributes
    must be ``__dunder__``), wrong input counts, two variables of one name."""
    if not isinstance(text, str):
        raise _bad(f"expected text, got {type(text).__name__}")
    _check_depth(text)
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
        heads = _build(doc)[1]
    except AttrError as exc:
        raise GraphError(f"malformed symbol JSON: {exc}") from None
    except SymgraphError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
        raise GraphError(f"malformed symbol JSON: {type(exc).__name__}: {exc}") from None
    return Graph(tuple(heads))


def load_graph(fname: str) -> Graph:
    """Read a symbol JSON file (size-checked first) into a Graph; errors name the file."""
    data = read_limited(fname, MAX_FILE, "symbol file")
    try:
        return graph_from_json(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise GraphError(f"{fname}: symbol JSON is not UTF-8 ({exc})") from None
    except GraphError as exc:
        raise GraphError(f"{fname}: {exc}") from None


MAX_FILE = 1 << 30
"""Largest symbol JSON read (a graph of millions of nodes stays far below)."""


def save(sym: Any, fname: str) -> None:
    """Write ``sym.tojson()`` to ``fname`` atomically (no half-written file on failure)."""
    write_text(fname, to_json(sym))
