"""``sg.contrib``: MXNet's ``mx.contrib`` names; ``sg.contrib.amp`` is :mod:`symgraph.amp`,
``sg.contrib.onnx`` is :mod:`symgraph.onnx` and ``sg.contrib.tensorboard`` holds
``LogMetricsCallback`` (onnx and tensorboardX are imported only when used);
``sg.contrib.autograd`` is MXNet's older autograd interface; ``sg.contrib.ndarray`` /
``sg.contrib.symbol`` (also ``nd`` / ``sym``) hold the contrib ops as MXNet's modules do."""
from __future__ import annotations

from ...frontend import amp
from . import autograd, ndarray, onnx, symbol, tensorboard

nd, sym = ndarray, symbol
__all__ = ["amp", "autograd", "nd", "ndarray", "onnx", "sym", "symbol", "tensorboard"]
