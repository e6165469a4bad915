"""The runtime layer: arrays and random numbers (``ndarray``, ``random``), the one compile
interface (``compile.build_stage``), the numpy and CUDA backends (``backend/``, ``cuda/``),
MXNet's ``Executor`` and monitor, run-time kernels (``rtc``) and the profiler."""
