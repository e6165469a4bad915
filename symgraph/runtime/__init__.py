"""The runtime layer: arrays and random numbers (``ndarray``, ``random``), the one compile
interface (``compile.build_stage``), the numpy and CUDA backends (``backend/``, ``cuda/``),
MXNet's ``Executor`` and monitor, run-time kernels (``rtc``) and the profiler."""

from .features import Feature, Features, feature_list  # noqa: E402,F401  (MXNet's mx.runtime)
