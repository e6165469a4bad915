"""``sg.contrib``: MXNet's ``mx.contrib`` names; ``sg.contrib.amp`` is :mod:`symgraph.amp`,
``sg.contrib.onnx`` is :mod:`symgraph.onnx` and ``sg.contrib.tensorboard`` holds
``LogMetricsCallback`` (onnx and tensorboardX are imported only when used);
``sg.contrib.autograd`` is MXNet's older autograd interface."""
from __future__ import annotations

from .. import amp
from . import autograd, onnx, tensorboard

__all__ = ["amp", "autograd", "onnx", "tensorboard"]
