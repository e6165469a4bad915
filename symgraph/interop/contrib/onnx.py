"""``sg.contrib.onnx``: MXNet 1.x's ``mx.contrib.onnx`` path to :mod:`symgraph.onnx`
(``import_model``, ``get_model_metadata``, ``export_model``)."""
from __future__ import annotations

from ..onnx import export_model, get_model_metadata, import_model

__all__ = ["import_model", "get_model_metadata", "export_model"]
