"""``sg.model``: MXNet 1.x's checkpoint functions (:mod:`~symgraph.training.checkpoint`) and
its ``FeedForward`` model over ``Module``.

Example::

    >>> import symgraph as sg
    >>> sg.model.save_checkpoint is sg.training.checkpoint.save_checkpoint
    True
"""
from __future__ import annotations

from .checkpoint import (checkpoint_names, load_arrays, load_checkpoint,  # noqa: F401
                         load_optimizer_states, load_params, save_arrays, save_checkpoint,
                         save_params)
from .model_feedforward import FeedForward  # noqa: F401

__all__ = ["save_checkpoint", "load_checkpoint", "save_params", "load_params", "save_arrays",
           "load_arrays", "load_optimizer_states", "checkpoint_names", "FeedForward"]
