"""``gluon.model_zoo``: MXNet 1.9.1's predefined vision models (``vision``) and their
pretrained parameter files (``model_store``).

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.get_model("resnet18_v1", classes=10)
"""
from __future__ import annotations

from . import model_store, vision

__all__ = ["model_store", "vision"]
