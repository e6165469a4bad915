"""The interop layer, on top: ONNX import and export, drawings of graphs (``viz``), the
command line (``cli``), the runnable example models, MXNet's ``test_utils`` and the
``.pyi`` stub generator."""
