"""Sphinx extension: the operator reference, generated from symgraph's op registry.

At ``builder-inited`` it writes ``docs/ops/`` (not kept in git): one page per op with its
signature, inputs, attributes (type, default, description), shape rule, GPU lowering and dtypes,
aliases and the example of ``help(sg.sym.X)`` when it has one, plus an index table. Everything
comes from the :class:`~symgraph.core.registry.OpDef` and from what ``symgraph.opdoc`` gives the
front-end functions, so the site cannot disagree with ``help()``.

Pages are rewritten only when their text changes, so an incremental build stays incremental.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, Optional

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList
from sphinx.util.nodes import nested_parse_with_titles

OUT_DIR = "ops"
_ESCAPE = re.compile(r"([\\*`|_<>\[\]])")
_SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}\n", re.MULTILINE)


def esc(text: str) -> str:
    """``text`` as literal reStructuredText prose (no markup is read from it)."""
    return _ESCAPE.sub(r"\\\1", text)


def literal(text: str) -> str:
    """An inline literal; backquotes cannot occur inside one, so they are replaced."""
    return "``" + text.replace("``", "' '").replace("`", "'") + "``" if text else ""


def first_sentence(text: str) -> str:
    """The op's summary: its doc up to the first full stop followed by a space."""
    text = " ".join(text.split())
    m = re.search(r"\.(\s|$)", text)
    return text[:m.start() + 1] if m else text


def doc_sections(doc: str) -> dict[str, str]:
    """The numpy-style sections of a docstring by heading ('' holds the text before them)."""
    parts = _SECTION.split(inspect.cleandoc(doc or ""))
    sections = {"": parts[0]}
    for k in range(1, len(parts) - 1, 2):
        sections[parts[k].strip().lower()] = parts[k + 1]
    return sections


def example_block(doc: str) -> list[str]:
    """The docstring's Example(s) section as a code block ([] when it has none)."""
    secs = doc_sections(doc)
    text = secs.get("examples") or secs.get("example") or ""
    body = inspect.cleandoc(text).strip("\n")
    if not body:
        return []
    lang = "pycon" if ">>>" in body else "python"
    return ["Example", "-------", "", f".. code-block:: {lang}", ""] + \
        ["   " + ln if ln.strip() else "" for ln in body.splitlines()] + [""]


def signature_text(name: str, sig: inspect.Signature) -> str:
    """``name(data=None, *, kernel, stride=(), ...)``: the signature without annotations."""
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return name + str(sig.replace(parameters=plain, return_annotation=inspect.Signature.empty))


def gpu_lines(opdef: Any) -> list[str]:
    """How the CUDA backend runs the op: its lowering family and float dtypes."""
    from symgraph.runtime.cuda import lowering  # noqa: F401  (fills the family table)
    from symgraph.runtime.cuda.actions import lowering_dtypes, lowering_of
    fam, params = lowering_of(opdef)
    if fam == "host":
        why = params.get("why", "")
        return [f"Lowering family {literal(fam)}: no device kernel, the numpy reference runs on "
                f"host copies of the arrays{' (' + esc(why) + ')' if why else ''}."]
    dts = lowering_dtypes(fam, params)
    dtext = "any dtype" if dts is None else ", ".join(literal(d) for d in sorted(dts))
    return [f"Lowering family {literal(fam)}; runs on the GPU in {dtext}."]


def attribute_table(opdef: Any) -> list[str]:
    """A list-table of the attributes: name, type (or choices), default, description."""
    from symgraph.frontend import opdoc
    from symgraph.core.attrs import REQUIRED
    rows = []
    for name, param in opdef.params.items():
        if not name.isidentifier():
            continue
        kind = (" | ".join(repr(c) for c in param.choices) if param.choices
                else opdoc.type_text(opdoc.param_type(param)))
        dflt = "required" if param.default is REQUIRED else literal(repr(param.default))
        if name == opdef.variadic:
            dflt = "the number of inputs"
        rows.append((literal(name), literal(kind), dflt,
                     esc(opdoc.param_doc(opdef, name, param))))
    if not rows:
        return ["The op has no attributes.", ""]
    out = [".. list-table::", "   :header-rows: 1", "   :widths: 18 24 16 42", "",
           "   * - Attribute", "     - Type", "     - Default", "     - Description"]
    for row in rows:
        out += [f"   * - {row[0]}"] + [f"     - {c}" if c else "     -" for c in row[1:]]
    return out + [""]


def input_lines(opdef: Any) -> list[str]:
    """The inputs (auxiliary states marked) with their descriptions."""
    from symgraph.frontend import opdoc
    if opdef.variadic:
        return [f"Any number of arrays (attribute {literal(opdef.variadic)} counts them).", ""]
    from symgraph.core.base import SymgraphError
    try:
        names = opdoc.input_names(opdef)
    except SymgraphError:  # inputs named by an attribute (Custom's op_type)
        return ["The inputs depend on the attributes (see the description above).", ""]
    try:
        aux = set(opdef.aux_names(_default_attrs(opdef)))
    except (KeyError, SymgraphError):  # counted by a required attribute: none by default
        aux = set()
    if not names:
        return ["The op takes no array input.", ""]
    out = []
    for n in names:
        what = opdoc.INPUT_DOCS.get(n, "")
        tag = " (auxiliary state)" if n in aux else ""
        out.append(f"* {literal(n)}{tag}{': ' + esc(what) if what else ''}")
    return out + [""]


def _default_attrs(opdef: Any) -> Any:
    from symgraph.core.attrs import REQUIRED, Attrs
    return Attrs({k: p.default for k, p in opdef.params.items() if p.default is not REQUIRED})


def shape_lines(opdef: Any) -> list[str]:
    """The shape rule's docstring, when it has one, in words."""
    doc = inspect.getdoc(opdef.infer_shape) or ""
    if not doc:
        return []
    return ["Shape rule", "----------", "", esc(" ".join(doc.split())), ""]


def front_function(name: str) -> Optional[Any]:
    """The ``sg.sym`` function of the op, when the front end has one."""
    import symgraph as sg
    fn = getattr(sg.sym, name, None)
    return fn if callable(fn) else None


def op_page(name: str, opdef: Any, aliases: list[str]) -> str:
    """The reStructuredText of one op's page."""
    from symgraph.frontend import opdoc
    fn = front_function(name)
    doc = (fn.__doc__ if fn is not None else None) or opdoc.docstring(opdef)
    try:
        sig = inspect.signature(fn) if fn is not None else opdoc.signature(opdef)
    except (TypeError, ValueError):
        sig = opdoc.signature(opdef)
    summary = doc_sections(doc)[""].strip() or f"The {name} operator."
    title = esc(name)
    # orphan: op pages stay out of the sidebar's tree (331 entries on every page would make
    # each page ~100 kB and the build minutes long); the index table links them all.
    lines = [":orphan:", "", f".. _op-{name}:", "", title, "=" * len(title), "",
             f".. py:function:: symgraph.sym.{signature_text(name, sig)}", "   :no-index:", "",
             "   " + esc(" ".join(summary.split())), "",
             "Also ``symgraph.nd." + name + "`` (same inputs and attributes, NDArray in and out)."
             if name.isidentifier() else "", ""]
    if aliases:
        lines += ["Aliases: " + ", ".join(literal(a) for a in aliases) + ".", ""]
    lines += ["Inputs", "------", ""] + input_lines(opdef)
    lines += ["Attributes", "----------", ""] + attribute_table(opdef)
    lines += shape_lines(opdef)
    lines += ["GPU", "---", ""] + gpu_lines(opdef) + [""]
    lines += ["Gradient", "--------", "",
              "Not differentiable." if _not_differentiable(opdef)
              else "Differentiable; the backward graph is built from registered ops.", ""]
    lines += example_block(doc)
    return "\n".join(lines) + "\n"


def _not_differentiable(opdef: Any) -> bool:
    from symgraph.core.registry import NOT_DIFFERENTIABLE
    return opdef.gradient is NOT_DIFFERENTIABLE


def page_file(name: str) -> str:
    """File stem of an op's page (internal ops keep their leading underscore)."""
    return "op_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def index_page(public: list[str], internal: list[str], ops: dict) -> str:
    """The reference's landing page: a table of every public op, then the internal ones."""
    lines = ["Operator reference", "==================", "",
             "Every operator of ``symgraph.sym`` and ``symgraph.nd``, generated from the op "
             "registry: the same facts ``help(symgraph.sym.X)`` prints, plus each op's shape "
             "rule, gradient and GPU lowering.", "",
             ".. list-table::", "   :header-rows: 1", "   :widths: 30 70", "",
             "   * - Operator", "     - Summary"]
    for n in public:
        lines += [f"   * - :ref:`{esc(n)} <op-{n}>`",
                  f"     - {esc(first_sentence(ops[n].doc)) or '-'}"]
    lines += ["", "Internal ops", "------------", "",
              "Graph passes create these (fused kernels, gradients); users do not call them.",
              ""]
    lines += [f"* :ref:`{esc(n)} <op-{n}>`" for n in internal]
    return "\n".join(lines) + "\n"


def write_pages(src_dir: Path) -> int:
    """Write every op page and the index under ``src_dir/ops``; returns the number of ops."""
    import symgraph  # noqa: F401  (registers the ops)
    from symgraph.core.registry import all_aliases, all_ops
    ops = all_ops()
    aliases: dict[str, list[str]] = {}
    for alias, target in sorted(all_aliases().items()):
        aliases.setdefault(target, []).append(alias)
    public = sorted((n for n in ops if not n.startswith("_")), key=str.lower)
    internal = sorted((n for n in ops if n.startswith("_")), key=str.lower)
    out = src_dir / OUT_DIR
    out.mkdir(exist_ok=True)
    pages = {page_file(n) + ".rst": op_page(n, ops[n], aliases.get(n, [])) for n in ops}
    pages["index.rst"] = index_page(public, internal, ops)
    for fname, text in pages.items():
        path = out / fname
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    for stale in out.glob("*.rst"):
        if stale.name not in pages:
            stale.unlink()
    return len(ops)


def front_end_names(module_name: str) -> tuple[list[str], list[str]]:
    """(classes, functions) of a front-end module's ``__all__`` that are not op functions:
    the API page documents these, the operator reference the ops."""
    import importlib
    from symgraph.core.registry import all_aliases, all_ops
    mod = importlib.import_module(module_name)
    ops = set(all_ops()) | set(all_aliases())
    classes, funcs = [], []
    for name in getattr(mod, "__all__", ()):
        obj = getattr(mod, name, None)
        # op functions are made in symgraph.build, also under names the registry does not hold
        made_for_op = getattr(obj, "__module__", "") == "symgraph.core.build"
        if name in ops or name.startswith("_") or made_for_op:
            continue
        if inspect.isclass(obj) and getattr(obj, "__module__", "").startswith("symgraph"):
            classes.append(name)
        elif inspect.isfunction(obj):
            funcs.append(name)
    return classes, funcs


class FrontEndDirective(Directive):
    """``.. symgraph-front-end:: symgraph.symbol``: autodoc for every class and function of the
    module's ``__all__`` that is not an op (ops have their own pages)."""

    required_arguments = 1

    def run(self) -> list:
        module = self.arguments[0]
        classes, funcs = front_end_names(module)
        lines: list[str] = []
        for c in classes:
            lines += [f".. autoclass:: {module}.{c}", "   :members:", ""]
        for f in funcs:
            lines += [f".. autofunction:: {module}.{f}", ""]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=module), node)
        return node.children


def _on_builder_inited(app: Any) -> None:
    write_pages(Path(app.srcdir))


def setup(app: Any) -> dict:
    """Sphinx entry point."""
    app.connect("builder-inited", _on_builder_inited)
    app.add_directive("symgraph-front-end", FrontEndDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
