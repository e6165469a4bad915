"""``mx.contrib.ndarray`` (``mx.contrib.nd``): MXNet's module of the contrib ops on arrays,
the functions of ``sg.nd.contrib`` (``_contrib_X`` ops as ``X``).

Example::

    anchors = sg.contrib.ndarray.MultiBoxPrior(feat, sizes=(0.5,))
"""
from __future__ import annotations

from ...runtime import ndarray as _nd
from ._forward import forwarding

__getattr__, __dir__ = forwarding(lambda: _nd.contrib, __name__)
