"""The modules of ``symgraph/`` import each other without cycles.

The import graph is built from the source with ``ast``: every ``import`` statement counts,
wherever it stands (module level, inside a function, under ``if``), because an import moved
into a function to dodge a cycle still makes the two modules depend on each other. Importing a
submodule (``from . import ndarray``) is an edge to that submodule; importing a name from a
package (``from .passes import run_pipeline``) is an edge to the package's ``__init__``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "symgraph"


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    mods = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _targets(node: ast.AST, module: str, is_pkg: bool, mods: dict[str, Path]) -> set[str]:
    """The package modules one import statement depends on."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in mods}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    found = set()
    for alias in node.names:
        if f"{target}.{alias.name}" in mods:
            found.add(f"{target}.{alias.name}")
        elif target in mods:
            found.add(target)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package modules it imports (at any level of the file)."""
    mods = module_files(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            graph[module] |= _targets(node, module, is_pkg, mods) - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative: no
    recursion limit), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _describe(graph: dict[str, set[str]], comp: list[str]) -> str:
    members = set(comp)
    edges = [f"  {m} -> {t}" for m in comp for t in sorted(graph[m] & members)]
    return f"cycle of {len(comp)} modules:\n" + "\n".join(edges)


def test_finder_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import g\n")
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert len(graph) > 50
    found = cycles(graph)
    if found:
        pytest.fail("\n".join(_describe(graph, c) for c in found))


def private_imports(root: Path = ROOT) -> dict[str, int]:
    """File (relative to ``root``) -> how many ``_private`` names it imports from another
    module (``from .m import _x``; private modules of a package, ``from . import _m``, are the
    package's own business)."""
    found: dict[str, int] = {}
    mods = module_files(root)
    for path in mods.values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            n = sum(1 for a in node.names if a.name.startswith("_")
                    and not a.name.startswith("__") and node.module)
            if n:
                rel = str(path.relative_to(root))
                found[rel] = found.get(rel, 0) + n
    return found


def test_no_private_names_imported_across_modules() -> None:
    found = private_imports()
    assert not found, f"private names imported from other modules (make them public): {found}"


def test_private_import_scan_counts_names(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import _m\n")
    (pkg / "a.py").write_text("from ._m import _x, y\nfrom .b import _z\n")
    assert private_imports(pkg) == {"a.py": 2}


# The layers of symgraph/, bottom first: a module imports from its own layer and those below
# (docs/architecture.md draws the same map). The root holds the package's __init__ (which
# imports every layer to make ``sg.*``) and __main__.
LAYERS = ("core", "compiler", "runtime", "frontend", "training", "gluon", "interop")
MAX_ROOT_MODULES = 12


def layer_of(module: str) -> str:
    parts = module.split(".")
    # the package's own modules sit with the top layer, whose examples and CLI use ``sg.*``
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else LAYERS[-1]


def test_layers_import_downwards_only() -> None:
    graph = import_graph()
    up = {(m, t) for m, ts in graph.items() for t in ts
          if LAYERS.index(layer_of(t)) > LAYERS.index(layer_of(m))}
    assert not up, "imports from a layer to one above it (move the shared piece down, or "\
        "let the upper layer register itself):\n" + "\n".join(
            f"  {m} ({layer_of(m)}) -> {t} ({layer_of(t)})" for m, t in sorted(up))


def test_every_folder_is_a_layer_and_the_root_is_small() -> None:
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS), f"folders that are not layers: {folders - set(LAYERS)}"
    modules = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(modules) <= MAX_ROOT_MODULES, f"{len(modules)} modules in the root: {modules}"
