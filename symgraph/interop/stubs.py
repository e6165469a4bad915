"""``.pyi`` stubs for the front-end modules whose functions are generated from the registry.

``python -m symgraph.interop.stubs`` rewrites them (``--check``: exit 1 when one is out of date, as CI
does through ``tests/test_stubs.py``). A stub lists the module's public functions with the
signatures ``inspect`` reports (the op functions' come from :mod:`symgraph.opdoc`), its public
classes with their methods and properties, and the aliases (``flatten = Flatten``). Defaults
are written as ``...``, the stub convention. Run it again after adding or changing an op.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Optional, Sequence

# Modules whose op functions are generated from the registry (sg.sym, sg.nd).
STUB_MODULES = ("symgraph.frontend.symbol", "symgraph.runtime.ndarray")
TYPING = ("Any", "Callable", "Iterator", "Literal", "Mapping", "Optional", "Sequence", "Union")
BUILTIN = {"None", "int", "float", "bool", "str", "bytes", "tuple", "list", "dict", "set",
           "object", "type", "slice", "ForwardRef"}


def _annotation(ann: Any, module: ModuleType) -> str:
    if ann is inspect.Parameter.empty:
        return ""
    text = ann if isinstance(ann, str) else inspect.formatannotation(ann)
    text = text.replace(f"{module.__name__}.", "").replace("typing.", "")
    return re.sub(r"\bNoneType\b", "None", text)  # Optional[X] prints as Union[X, NoneType]


def _signature(fn: Callable, module: ModuleType, skip_first: bool = False) -> str:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(*args: Any, **kwargs: Any) -> Any"
    parts, star_done = [], False
    params = list(sig.parameters.values())[1 if skip_first else 0:]
    prefix = ["self"] if skip_first else []
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
        star_done = star_done or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        ann = _annotation(p.annotation, module)
        text = f"{star}{p.name}" + (f": {ann}" if ann else "")
        if p.default is not p.empty:
            text += " = ..." if ann else "=..."
        parts.append(text)
    ret = _annotation(sig.return_annotation, module)
    return f"({', '.join(prefix + parts)})" + (f" -> {ret}" if ret else "")


def _def(indent: str, name: str, sig: str) -> list[str]:
    """``def name(sig): ...``, one parameter per line when it would pass 100 columns."""
    line = f"{indent}def {name}{sig}: ..."
    if len(line) <= 100:
        return [line]
    params, _, ret = sig[1:].rpartition(")")
    parts = [p.strip() for p in _split_params(params)]
    return ([f"{indent}def {name}("] + [f"{indent}    {p}," for p in parts]
            + [f"{indent}){ret}: ..."])


def _split_params(text: str) -> list[str]:
    """Split at top-level commas (not those inside brackets)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[(" and 1 or (ch in "])" and -1 or 0)
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + ([cur] if cur.strip() else [])


def _own(module: ModuleType, obj: Any) -> bool:
    return getattr(obj, "__module__", None) == module.__name__


def _members(cls: type) -> list[tuple[str, Any, bool]]:
    """``(name, member, inherited)`` of the class and of its bases defined in symgraph (the
    operators and fluent methods Symbol inherits), the class's own first."""
    seen: dict[str, tuple[str, Any, bool]] = {}
    for klass in cls.__mro__:
        if klass is not cls and not klass.__module__.startswith("symgraph."):
            continue
        for name, member in klass.__dict__.items():
            seen.setdefault(name, (name, member, klass is not cls))
    return list(seen.values())


def _class_stub(cls: type, module: ModuleType) -> list[str]:
    bases = [b.__name__ for b in cls.__bases__ if b is not object]
    lines = [f"class {cls.__name__}{'(' + ', '.join(bases) + ')' if bases else ''}:"]
    if cls.__doc__:
        lines.append(f'    """{cls.__doc__.strip().splitlines()[0]}"""')
    for name, member, inherited in _members(cls):
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        if isinstance(member, property):
            ret = _signature(member.fget, module, True).split(" -> ")
            lines += ["    @property", f"    def {name}(self)"
                      f"{' -> ' + ret[1] if len(ret) > 1 else ''}: ..."]
        elif isinstance(member, (staticmethod, classmethod)):
            deco = "staticmethod" if isinstance(member, staticmethod) else "classmethod"
            sig = _signature(member.__func__, module, deco == "classmethod")
            sig = sig.replace("(self", "(cls", 1) if deco == "classmethod" else sig
            lines += [f"    @{deco}"] + _def("    ", name, sig)
        elif inspect.isfunction(member):
            sig = _signature(member, module, True)
            if inherited and sig.endswith("-> Any"):  # a base's operator returns this class
                sig = sig[:-len("Any")] + f"'{cls.__name__}'"
            if name in ("__eq__", "__ne__") and not sig.endswith(("-> bool", "-> Any")):
                # elementwise comparison returns an array, as in numpy: a deliberate override
                lines += [f"    def {name}{sig}: ...  # type: ignore[override]"]
                continue
            lines += _def("    ", name, sig)
    return lines if len(lines) > 1 else lines + ["    ..."]


def _imports(body: str, module: ModuleType) -> list[str]:
    """Import lines for the names the stub's annotations use that come from elsewhere, and the
    module's own type aliases (``Shape = Union[int, Sequence[int]]``)."""
    out, aliases = [], []
    for ident in sorted(set(re.findall(r"\b([A-Za-z_]\w*)\b", body))):
        obj = module.__dict__.get(ident)
        if obj is None or ident in TYPING or ident in BUILTIN or _own(module, obj):
            continue
        if getattr(obj, "__origin__", None) is not None and not inspect.isclass(obj):
            aliases.append(f"{ident} = {_annotation(obj, module)}")
            continue
        if inspect.ismodule(obj):
            if obj.__name__ != module.__name__ and f"{ident}." in body:
                out.append(f"import {obj.__name__} as {ident}")
        elif inspect.isclass(obj) and re.search(rf"[\[:>,(] ?{ident}\b", body):
            src = obj.__module__
            out.append(f"from {src} import {obj.__name__}"
                       + (f" as {ident}" if obj.__name__ != ident else ""))
    return out + ([""] + aliases if aliases else [])


def _all_lines(module: ModuleType) -> list[str]:
    """``__all__ = [...]`` as the module defines it, wrapped at 100 columns."""
    names = getattr(module, "__all__", None)
    if not names:
        return []
    lines, cur = [], "__all__ = ["
    for name in names:
        piece = f'"{name}", '
        if len(cur) + len(piece) > 100:
            lines.append(cur.rstrip())
            cur = "    "
        cur += piece
    return [""] + lines + [cur.rstrip().rstrip(",") + "]"]


def module_stub(module: ModuleType) -> str:
    """The ``.pyi`` text of ``module``."""
    body: list[str] = []
    aliases: list[str] = []
    seen: dict[int, str] = {}
    from ..core.registry import all_aliases, all_ops
    ops = set(all_ops()) | set(all_aliases())  # op functions may be written elsewhere (Custom)
    for name, obj in module.__dict__.items():
        if name.startswith("_") or not (_own(module, obj) or id(obj) in seen or name in ops):
            continue
        if id(obj) in seen:  # a second name for the same function (MXNet's aliases)
            aliases.append(f"{name} = {seen[id(obj)]}")
        elif inspect.isclass(obj):
            body += [""] + _class_stub(obj, module) + [""]
        elif callable(obj):
            body += _def("", name, _signature(obj, module))
        seen.setdefault(id(obj), name)
    text = "\n".join(body + [""] + aliases + _all_lines(module))
    head = [f'"""Generated by ``python -m symgraph.interop.stubs`` from {module.__name__} and the op\n'
            f'registry; do not edit."""',
            "from typing import " + ", ".join(TYPING), ""] + _imports(text, module)
    return "\n".join(head + ["", text.strip(), ""])


def stub_path(module: ModuleType) -> Path:
    return Path(module.__file__).with_suffix(".pyi")


def out_of_date(names: Sequence[str] = STUB_MODULES) -> list[str]:
    """Stub files that differ from what the current code generates."""
    stale = []
    for name in names:
        module = importlib.import_module(name)
        path = stub_path(module)
        if not path.exists() or path.read_text(encoding="utf-8") != module_stub(module):
            stale.append(str(path))
    return stale


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m symgraph.interop.stubs [--check]``."""
    p = argparse.ArgumentParser(prog="python -m symgraph.interop.stubs", description=__doc__)
    p.add_argument("--check", action="store_true", help="exit 1 if a stub is out of date")
    args = p.parse_args(argv)
    if args.check:
        stale = out_of_date()
        for path in stale:
            print(f"out of date: {path} (run python -m symgraph.interop.stubs)", file=sys.stderr)
        return 1 if stale else 0
    from ..core import fileio
    for name in STUB_MODULES:
        module = importlib.import_module(name)
        fileio.write_text(stub_path(module), module_stub(module))
        print(f"wrote {stub_path(module)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
