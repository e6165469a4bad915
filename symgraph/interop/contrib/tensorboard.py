"""``sg.contrib.tensorboard``: MXNet's ``mx.contrib.tensorboard`` path to
:class:`symgraph.training.callback.LogMetricsCallback` (TensorBoard event files via ``tensorboardX``)."""
from __future__ import annotations

from ...training.callback import LogMetricsCallback

__all__ = ["LogMetricsCallback"]
