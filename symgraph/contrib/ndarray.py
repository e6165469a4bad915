"""``mx.contrib.ndarray`` (``mx.contrib.nd``): MXNet's module of the contrib ops on arrays,
the functions of ``sg.nd.contrib`` (``_contrib_X`` ops as ``X``).

Example::

    anchors = sg.contrib.ndarray.MultiBoxPrior(feat, sizes=(0.5,))
"""
from __future__ import annotations

from typing import Any

from .. import ndarray as _nd


def __getattr__(name: str) -> Any:
    # sg.nd.contrib is filled when the front end installs its op functions, after this
    # module is imported: look names up on use
    try:
        return vars(_nd.contrib)[name]
    except KeyError:
        raise AttributeError(f"symgraph.contrib.ndarray has no {name!r}") from None


def __dir__() -> list[str]:
    return sorted(vars(_nd.contrib))
