"""``sg.runtime.Features()``: MXNet's feature query, answered for what symgraph can do here.

MXNet reports the options its library was compiled with; symgraph has no compiled library,
so each feature says whether this installation provides it now (``CUDA``: pycuda and a
device; ``CUDNN``: the cuDNN library loads), or is a fixed property of symgraph
(``INT64_TENSOR_SIZE``: element counts are 64-bit; ``SIGNAL_HANDLER``, ``DIST_KVSTORE``...:
absent). Unknown names raise RuntimeError, as in MXNet.

Example::

    >>> import symgraph as sg
    >>> sg.runtime.Features().is_enabled("INT64_TENSOR_SIZE")
    True
"""
from __future__ import annotations

import ctypes.util
from collections import OrderedDict
from typing import Callable, Optional

from ..core.context import num_gpus


class Feature:
    """One feature: ``name`` and ``enabled``."""

    def __init__(self, name: str, enabled: bool) -> None:
        self.name, self.enabled = name, bool(enabled)

    def __repr__(self) -> str:
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _has_library(name: str) -> Callable[[], bool]:
    return lambda: ctypes.util.find_library(name) is not None


# name -> how to tell whether it is there (MXNet's names; the rest of MXNet's list is absent)
_CHECKS: dict[str, Callable[[], bool]] = {
    "CUDA": lambda: num_gpus() > 0, "CUDNN": _has_library("cudnn"),
    "NCCL": _has_library("nccl"), "CUDA_RTC": lambda: num_gpus() > 0,
    "BLAS_OPEN": _has_library("openblas"), "LAPACK": lambda: True,
    "INT64_TENSOR_SIZE": lambda: True, "F16C": lambda: True, "OPENCV": lambda: False,
    "MKLDNN": lambda: False, "TENSORRT": lambda: False, "DIST_KVSTORE": lambda: False,
    "PROFILER": lambda: True, "SIGNAL_HANDLER": lambda: False, "DEBUG": lambda: False,
    "TVM_OP": lambda: False,
}


def feature_list() -> list[Feature]:
    """Every feature symgraph reports, as :class:`Feature` objects."""
    return [Feature(name, check()) for name, check in _CHECKS.items()]


class Features(OrderedDict):
    """Feature name -> :class:`Feature`, computed once per process (as MXNet's singleton)."""

    _instance: Optional["Features"] = None

    def __new__(cls) -> "Features":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            OrderedDict.__init__(cls._instance, [(f.name, f) for f in feature_list()])
        return cls._instance

    def __init__(self) -> None:  # (filled once in __new__)
        pass

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether ``feature_name`` (any case) is there; RuntimeError for an unknown one."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: "
                               f"{list(self.keys())}")
        return self[name].enabled
