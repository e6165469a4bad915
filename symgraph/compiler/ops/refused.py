"""MXNet 1.9.1 ops symgraph refuses by name (``registry.refuse``): a graph holding one (a
quantized model's JSON) fails to load with the reason, not with "unknown operator".

int8 quantization is MXNet's graph-rewriting flow (``contrib.quantization.quantize_model``:
calibration, ``quantize_v2``/``requantize``/``dequantize`` and ``quantized_*`` kernels on oneDNN
or cuDNN int8); symgraph runs float32, float16 and bfloat16 (AMP) only.

Example::

    sg.sym.load_json(quantized_json)  # GraphError: operator '_contrib_quantize_v2' is not ...
"""
from __future__ import annotations

from ...core.registry import refuse

QUANTIZATION = (
    "_contrib_calibrate_entropy", "_contrib_dequantize", "_contrib_quantize",
    "_contrib_quantize_asym", "_contrib_quantize_v2", "_contrib_quantized_act",
    "_contrib_quantized_batch_norm", "_contrib_quantized_concat", "_contrib_quantized_conv",
    "_contrib_quantized_elemwise_add", "_contrib_quantized_elemwise_mul",
    "_contrib_quantized_embedding", "_contrib_quantized_flatten",
    "_contrib_quantized_fully_connected", "_contrib_quantized_pooling",
    "_contrib_quantized_rnn", "_contrib_requantize",
)
WHY = ("int8 quantization is out of scope in symgraph (see docs/mxnet_parity.md): run the "
       "float32 model, or float16/bfloat16 through sg.amp")

for _name in QUANTIZATION:
    refuse(_name, WHY)
