"""``__all__`` of the user-facing modules, and .pyi stubs whose every name is defined (what a
type checker needs: ``NoneType`` or a module's own alias such as ``Shape`` must not leak)."""
from __future__ import annotations

import ast
import builtins
import importlib
import inspect

import pytest

import symgraph as sg
from symgraph.core import registry
from symgraph.interop import stubs

MODULES = ("symbol", "ndarray", "io", "initializer", "optimizer", "lr_scheduler", "module",
           "training.base_module", "model", "metric", "callback", "viz", "datasets.mnist", "monitor",
           "profiler", "kvstore", "random", "test_utils", "context", "name", "operator", "base",
           "rtc", "executor", "amp", "gluon", "onnx", "datasets", "autograd", "contrib")


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_the_public_api(name):
    mod = importlib.import_module(f"symgraph.{name}")
    names = mod.__all__
    assert len(names) == len(set(names)) and all(isinstance(n, str) for n in names)
    assert not [n for n in names if n.startswith("_") or not hasattr(mod, n)]
    star: dict = {}
    exec(f"from symgraph.{name} import *", star)  # noqa: S102  (the statement under test)
    assert set(star) - {"__builtins__"} == set(names)
    assert "np" not in star and "Any" not in star  # imports do not leak through star imports
    # every public class the module defines is exported
    classes = [k for k, v in vars(mod).items() if inspect.isclass(v) and not k.startswith("_")
               and v.__module__ == mod.__name__ and not issubclass(v, BaseException) or
               (name == "base" and inspect.isclass(v) and issubclass(v, sg.SymgraphError))]
    assert not [c for c in classes if c not in names and c not in PRIVATE_CLASSES], classes


# helper classes that are implementation details (Executor's stages, Module's group view...)
PRIVATE_CLASSES = {"Stage", "ExecutorGroupView", "ExecutorMonitor", "UpdateRule", "Rtc",
                   "InitDesc"}


@pytest.mark.parametrize("front_end", [sg.sym, sg.nd])
def test_every_op_function_is_exported(front_end):
    public = [n for n in list(registry.all_ops()) + list(registry.all_aliases())
              if not n.startswith("_")]
    assert set(public) <= set(front_end.__all__)
    assert {"maximum", "zeros"} <= set(front_end.__all__)


def test_top_level_all():
    assert {"sym", "nd", "amp", "contrib", "profiler", "onnx"} <= set(sg.__all__)
    assert all(hasattr(sg, n) for n in sg.__all__)


def _names_used(tree: ast.AST) -> set[str]:
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier():  # a forward reference 'Symbol'
            used.add(node.value)
    return used


def _names_defined(tree: ast.Module) -> set[str]:
    out = set(dir(builtins))
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


@pytest.mark.parametrize("module", stubs.STUB_MODULES)
def test_stub_names_are_defined(module):
    mod = importlib.import_module(module)
    tree = ast.parse(stubs.module_stub(mod))
    annotations = ast.Module(body=[n for n in ast.walk(tree) if isinstance(n, ast.arg)
                                   and n.annotation is not None], type_ignores=[])
    returns = [n.returns for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.returns]
    used = _names_used(annotations) | set().union(*(_names_used(r) for r in returns))
    # strings inside Literal[...] are values, not references: keep what looks like a type name
    used = {u for u in used if u[:1].isupper() or u in ("np", "registry")}
    undefined = used - _names_defined(tree)
    assert not undefined, undefined


def test_stub_declares_all():
    text = stubs.module_stub(sg.sym)
    tree = ast.parse(text)
    (node,) = [n for n in tree.body if isinstance(n, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    assert ast.literal_eval(node.value) == sg.sym.__all__
