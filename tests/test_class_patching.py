"""No module adds to a class it did not define.

A class's methods are written in its body, a base class or a mixin; a front end that needs
behaviour from a higher layer looks it up at call time through a registry. An assignment
``Cls.attr = ...`` (or ``+=``, ``del``), ``setattr(Cls, ...)``/``delattr(Cls, ...)`` or
``mod.Cls.attr = ...`` in any other module would make what a class has depend on which modules
were imported, and only the generated ``.pyi`` stubs would show it.

The scan reads the source with ``ast``. A name counts as a class when it is imported from a
symgraph module that defines (or re-exports) a class of that name, or from outside symgraph
with a CamelCase name; a loop variable over such names counts too. Instances (``ENGINE.x``),
modules (``mod.value``) and classes of the same file are left alone.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Optional

from .test_import_graph import ROOT, module_files

# the statements the scan reads
KINDS = (ast.ImportFrom, ast.Import, ast.For, ast.Assign, ast.AugAssign, ast.AnnAssign,
         ast.Delete, ast.Call)
CAMEL = re.compile(r"_?[A-Z][a-z0-9]+[A-Za-z0-9]*$")  # a class by convention (not ALL_CAPS)


class Tree:
    """The package's modules parsed once: their classes and the names they import."""

    def __init__(self, root: Path) -> None:
        self.files = module_files(root)
        self.trees = {m: ast.parse(p.read_text(), str(p)) for m, p in self.files.items()}
        self.classes = {m: {n.name for n in t.body if isinstance(n, ast.ClassDef)}
                        for m, t in self.trees.items()}
        # one walk per file (parsing and walking is most of the test's time)
        self.nodes = {m: [n for n in ast.walk(t) if isinstance(n, KINDS)]
                      for m, t in self.trees.items()}
        # module -> local name -> (module it is imported from, its name there)
        self.imports: dict[str, dict[str, tuple[str, str]]] = {m: {} for m in self.trees}
        for m, nodes in self.nodes.items():
            for node in nodes:
                if isinstance(node, ast.ImportFrom):
                    src = self.source(m, node)
                    for alias in node.names:
                        self.imports[m][alias.asname or alias.name] = (src, alias.name)

    def source(self, module: str, node: ast.ImportFrom) -> str:
        """The dotted module a ``from ... import`` statement of ``module`` reads."""
        if not node.level:
            return node.module or ""
        base = module.split(".")
        if self.files[module].name != "__init__.py":
            base = base[:-1]
        base = base[:len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def is_class(self, module: str, name: str, seen: frozenset = frozenset()) -> bool:
        """Whether ``name`` imported from ``module`` is a class (following re-exports)."""
        if module not in self.files:
            return f"{module}.{name}" not in self.files and bool(CAMEL.match(name))
        if name in self.classes[module]:
            return True
        origin = self.imports[module].get(name)
        if origin is None or (module, name) in seen:
            return False
        return self.is_class(*origin, seen | {(module, name)})


class Names:
    """What the names of one module stand for: foreign classes and imported modules."""

    def __init__(self, tree: Tree, module: str) -> None:
        self.tree, self.classes, self.modules = tree, set(), {}
        body = tree.nodes[module]
        for local, (src, name) in tree.imports[module].items():
            if f"{src}.{name}" in tree.files:
                self.modules[local] = f"{src}.{name}"
            elif tree.is_class(src, name):
                self.classes.add(local)
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.modules[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
        self.classes -= tree.classes[module]
        for node in body:  # for c in (A, B): c.x = ...
            if (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
                    and isinstance(node.iter, (ast.Tuple, ast.List))
                    and any(self.foreign(e) for e in node.iter.elts)):
                self.classes.add(node.target.id)

    def foreign(self, expr: ast.expr) -> Optional[str]:
        """The foreign class ``expr`` is, or reaches into (``Cls.a.b``), else None."""
        chain = []
        while isinstance(expr, ast.Attribute):
            chain.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        if expr.id in self.classes:
            return expr.id
        mod = self.modules.get(expr.id)
        if mod is not None and chain and self.tree.is_class(mod, chain[-1]):
            return f"{expr.id}.{chain[-1]}"
        return None


def _targets(node: ast.AST) -> list[ast.expr]:
    """The attribute targets one statement or call writes (or deletes)."""
    if isinstance(node, ast.Assign):
        return [t for t in node.targets for t in ast.walk(t) if isinstance(t, ast.Attribute)]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target] if isinstance(node.target, ast.Attribute) else []
    if isinstance(node, ast.Delete):
        return [t for t in node.targets if isinstance(t, ast.Attribute)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr") and node.args):
        return [node.args[0]]
    return []


def class_patches(root: Path = ROOT) -> list[str]:
    """``file:line: Cls`` for every write to a class defined in another module."""
    tree, found = Tree(root), []
    for module, body in tree.nodes.items():
        names = Names(tree, module)
        for node in body:
            for target in _targets(node):
                base = target.value if isinstance(target, ast.Attribute) else target
                cls = names.foreign(base)
                if cls is not None:
                    rel = tree.files[module].relative_to(root)
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(target)} ({cls})")
    return sorted(found)


def test_no_module_adds_to_a_class_it_did_not_define() -> None:
    found = class_patches()
    assert not found, ("attributes set on classes defined elsewhere (give the class the "
                       "method, a mixin, or a registry it reads at call time):\n  "
                       + "\n  ".join(found))


def test_scan_sees_each_kind_of_patch(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("class A:\n    pass\n\nA.__doc__ = 'own class'\nVALUE = 1\n")
    (pkg / "b.py").write_text(
        "from . import a\nfrom .a import A as Alias\nfrom collections import OrderedDict\n"
        "from . import A as Again\nfrom .a import VALUE\nENGINE = object()\n"
        "Alias.f = len\n"                      # 7: imported class
        "setattr(Again, 'g', len)\n"           # 8: re-exported by the package
        "a.A.h = len\n"                        # 9: through its module
        "for c in (Alias,):\n    c.i = 1\n"    # 11: loop over classes
        "OrderedDict.j = 1\n"                  # 12: a class from outside
        "Alias.state.value += 1\n"             # 13: state inside the class
        "del Alias.f\n"                        # 14
        "a.value = 2\nENGINE.x = 3\nAlias().y = 4\nsetattr(a, 'z', 5)\n")  # modules, instances
    lines = [f.split(":")[1] for f in class_patches(pkg)]
    assert lines == ["11", "12", "13", "14", "7", "8", "9"], class_patches(pkg)
