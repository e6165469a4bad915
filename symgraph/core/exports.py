"""``__all__`` of the modules whose functions are installed from the op registry (``sg.sym``,
``sg.nd``): each installer adds the names it defines, so ``__all__`` stays in step with the
registry without a hand-kept list."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Iterable


def export(namespace: dict, names: Iterable[str]) -> None:
    """Append the public ``names`` (not starting with ``_``) to ``namespace['__all__']``."""
    current: list[str] = namespace.setdefault("__all__", [])
    seen = set(current)
    for name in names:
        if not name.startswith("_") and name not in seen:
            current.append(name)
            seen.add(name)


def sub_namespace(namespace: dict, names: Iterable[str], prefix: str) -> SimpleNamespace:
    """MXNet's op sub-namespaces: the functions of ``names`` starting with ``prefix`` under
    the rest of their name (``_contrib_ctc_loss`` is ``contrib.ctc_loss``)."""
    return SimpleNamespace(**{n[len(prefix):]: namespace[n] for n in names
                              if n.startswith(prefix) and n in namespace})
