"""``__all__`` of the modules whose functions are installed from the op registry (``sg.sym``,
``sg.nd``): each installer adds the names it defines, so ``__all__`` stays in step with the
registry without a hand-kept list."""
from __future__ import annotations

from typing import Iterable


def export(namespace: dict, names: Iterable[str]) -> None:
    """Append the public ``names`` (not starting with ``_``) to ``namespace['__all__']``."""
    current: list[str] = namespace.setdefault("__all__", [])
    seen = set(current)
    for name in names:
        if not name.startswith("_") and name not in seen:
            current.append(name)
            seen.add(name)
