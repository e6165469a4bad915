"""``sg.onnx``: ONNX export and import with MXNet 1.9's function names and signatures.

    sg.onnx.export_model(sym, params, in_shapes=[(1, 1, 28, 28)], in_types=np.float32,
                         onnx_file_path="net.onnx")
    sym, arg_params, aux_params = sg.onnx.import_model("net.onnx")
    sg.onnx.get_model_metadata("net.onnx")["input_tensor_data"]  # [(name, shape, type)]

The graph written is the inference graph (opset :data:`OPSET`): loss heads become their
prediction (``SoftmaxOutput`` -> ``Softmax``, regression outputs -> identity or ``Sigmoid``),
``Dropout`` is an identity, ``BatchNorm`` uses its moving statistics. Label inputs that only
feed loss heads are dropped. Import runs ``onnx.checker`` and ONNX's strict shape inference
first (a model they reject raises :class:`~symgraph.DataError`) and maps each operator per its
spec at the model's opset. One converter per op in ``export_ops.EXPORTERS`` and per ONNX
operator in ``import_ops.IMPORTERS``; an op without one raises :class:`~symgraph.GraphError`
naming the node, the op and the supported set. ``symgraph.interop.onnx.backend`` is ONNX's
``Backend`` interface (docs/onnx.md). Needs the ``onnx`` extra
(``pip install 'symgraph[onnx]'``: onnx and onnxruntime).
"""
from __future__ import annotations

from .export import OPSET, export_model
from .importer import get_model_metadata, import_model

__all__ = ["export_model", "import_model", "get_model_metadata", "OPSET"]
