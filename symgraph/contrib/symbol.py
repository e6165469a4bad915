"""``mx.contrib.symbol`` (``mx.contrib.sym``): MXNet's module of the contrib ops on symbols,
the functions of ``sg.sym.contrib`` (``_contrib_X`` ops as ``X``).

Example::

    anchors = sg.contrib.symbol.MultiBoxPrior(feat, sizes=(0.5,))
"""
from __future__ import annotations

from typing import Any

from .. import symbol as _sym


def __getattr__(name: str) -> Any:
    # sg.sym.contrib is filled when the front end installs its op functions, after this
    # module is imported: look names up on use
    try:
        return vars(_sym.contrib)[name]
    except KeyError:
        raise AttributeError(f"symgraph.contrib.symbol has no {name!r}") from None


def __dir__() -> list[str]:
    return sorted(vars(_sym.contrib))
