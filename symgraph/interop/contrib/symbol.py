"""``mx.contrib.symbol`` (``mx.contrib.sym``): MXNet's module of the contrib ops on symbols,
the functions of ``sg.sym.contrib`` (``_contrib_X`` ops as ``X``).

Example::

    anchors = sg.contrib.symbol.MultiBoxPrior(feat, sizes=(0.5,))
"""
from __future__ import annotations

from ...frontend import symbol as _sym
from ._forward import forwarding

__getattr__, __dir__ = forwarding(lambda: _sym.contrib, __name__)
