"""Module names users import, kept when the module lives in a layer package.

MXNet users write ``import mxnet.ndarray as nd`` and ``from mxnet.io import NDArrayIter``;
symgraph keeps those paths (``symgraph.ndarray``, ``symgraph.training.io.base``) while the code lives in
its layer (``symgraph.runtime.ndarray``, ``symgraph.training.io.base``). :class:`AliasFinder`
answers an aliased name, or any submodule under it, with the real module object, so the module
runs once and ``symgraph.training.io.base.NDArrayIter is symgraph.training.io.base.NDArrayIter``.

Example::

    >>> import symgraph.ndarray, symgraph.runtime.ndarray
    >>> symgraph.runtime.ndarray is symgraph.runtime.ndarray
    True
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Optional, Sequence


class _Same(importlib.abc.Loader):
    """Loads an alias as the module it names (imported under its real name)."""

    def __init__(self, real: str) -> None:
        self.real = real
        self.spec: Optional[ModuleSpec] = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.real)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the real module ran under its own name); the import machinery set
        the alias's spec on the module, so its own goes back."""
        module.__spec__ = self.spec


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``<alias>`` and ``<alias>.<sub>`` for every ``alias -> real`` of ``table``."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    def real_name(self, fullname: str) -> Optional[str]:
        head, dot, tail = fullname, "", ""
        while head:
            if head in self.table:
                return self.table[head] + dot + tail
            head, _, last = head.rpartition(".")
            tail = last + dot + tail if tail else last
            dot = "."
        return None

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        real = self.real_name(fullname)
        if real is None or importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Same(real))


def install(table: dict[str, str]) -> AliasFinder:
    """Put a finder for ``table`` first on ``sys.meta_path`` (once per table)."""
    for f in sys.meta_path:
        if isinstance(f, AliasFinder) and f.table == table:
            return f
    finder = AliasFinder(table)
    sys.meta_path.insert(0, finder)
    return finder
