"""``sg.contrib.tensorboard``: MXNet's ``mx.contrib.tensorboard`` path to
:class:`symgraph.callback.LogMetricsCallback` (TensorBoard event files via ``tensorboardX``)."""
from __future__ import annotations

from ..callback import LogMetricsCallback

__all__ = ["LogMetricsCallback"]
