"""Floating-point dtypes symgraph computes in, narrow ones included.

bfloat16 comes from ``ml_dtypes`` (the numpy bfloat16 dtype the JAX project maintains); importing
this module registers it, so ``np.dtype("bfloat16")`` works everywhere after ``import symgraph``.
Its numpy kind is ``'V'``, not ``'f'``: code that asks "is this a float?" asks :func:`is_float`.

Narrow dtypes (float16, bfloat16) are storage types: the numpy backend computes every op in
float32 and stores the result narrow (``backend/numpy_backend.py``), as the GPU kernels load narrow
and compute in float.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT16 = np.dtype(np.float16)
FLOAT32 = np.dtype(np.float32)
NARROW = (FLOAT16, BFLOAT16)

# Short spellings users write (``--amp bf16``); MXNet's names are the numpy ones.
ALIASES = {"bf16": BFLOAT16, "fp16": FLOAT16, "half": FLOAT16, "fp32": FLOAT32,
           "float": FLOAT32, "fp64": np.dtype(np.float64)}


def as_dtype(v: Any) -> np.dtype:
    """``v`` as a numpy dtype: numpy names and types, ``'bfloat16'``/``'bf16'``/``'fp16'``,
    ``ml_dtypes.bfloat16``, or MXNet's ``[('bfloat16', '<u2')]`` structured spelling."""
    if isinstance(v, str):
        key = v.strip()
        if key.lower() in ALIASES:
            return ALIASES[key.lower()]
        return np.dtype(key)
    dt = np.dtype(v)
    if dt.names == ("bfloat16",):  # MXNet 1.x's numpy stand-in for bfloat16
        return BFLOAT16
    return dt


def is_float(dt: Any) -> bool:
    """True for float16/32/64 and bfloat16."""
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == BFLOAT16


def is_narrow(dt: Any) -> bool:
    """True for float16 and bfloat16 (stored narrow, computed in float32)."""
    return np.dtype(dt) in NARROW


def compute_dtype(dt: Any) -> np.dtype:
    """The dtype a value of ``dt`` is computed in: float32 for narrow floats, else ``dt``."""
    dt = np.dtype(dt)
    return FLOAT32 if dt in NARROW else dt
