"""``_arange``: MXNet's ``sym.arange`` / ``nd.arange``, values ``start + step * (i // repeat)``
below ``stop`` (``[0, start)`` when ``stop`` is None), in ``dtype``. As MXNet 1.9.1, an integer
dtype truncates ``start`` and ``step`` first (``arange(1.3, 5, 1.3, dtype='int32')`` is
``[1, 2, 3]``), and with ``infer_range`` and no ``stop`` the length is the consumers'."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.registry import INJECTIVE, NOT_DIFFERENTIABLE, OpDef, PartialShape, RunCtx, register
from ._util import check_attr

ARANGE_PARAMS = {
    "start": Param("float", 0.0, doc="First value (the end when stop is None)."),
    "stop": Param("float?", None, doc="End, excluded; None: the range is [0, start)."),
    "step": Param("float", 1.0, doc="Spacing between values; not 0."),
    "repeat": Param("int", 1, doc="How many times each value repeats."),
    "infer_range": Param("bool", False, doc="With stop None, the length comes from the "
                                            "consumers' shapes (start is then the first)."),
    "ctx": Param("str", "", doc="ignored: the executor's context places it"),
    "dtype": Param("dtype", "float32"),
}


def _inferred(a: Attrs) -> bool:
    return a["infer_range"] and a["stop"] is None


def arange_bounds(a: Attrs) -> tuple[float, float]:
    """(start, stop) as MXNet reads them: ``stop`` None means ``[0, start)``."""
    return (0.0, a["start"]) if a["stop"] is None else (a["start"], a["stop"])


def arange_length(a: Attrs) -> int:
    """Number of elements, ``ceil((stop - start) / step) * repeat``; AttrError for a step of
    0, a repeat below 1 or an empty range (MXNet refuses those too).

    >>> arange_length(Attrs({"start": 1.3, "stop": 456.6, "step": 1.3, "repeat": 2}))
    702
    """
    check_attr(a["step"] != 0, "step", a["step"], "must not be 0")
    check_attr(a["repeat"] >= 1, "repeat", a["repeat"], "must be >= 1")
    start, stop = arange_bounds(a)
    check_attr((stop - start) * a["step"] > 0, "stop", stop,
               f"gives an empty range from start={start} by step={a['step']}")
    return math.ceil((stop - start) / a["step"]) * a["repeat"]


def cast_bounds(a: Attrs, start: float) -> tuple[float, float]:
    """(start, step) in the output's type as MXNet's kernel takes them: truncated toward zero
    for an integer dtype (the values then step by whole numbers)."""
    if np.dtype(a["dtype"]).kind in "iub":
        return float(math.trunc(start)), float(math.trunc(a["step"]))
    return start, a["step"]


def arange_values(a: Attrs, size: int) -> np.ndarray:
    """The first ``size`` values, computed exactly (integers) or in float64 (floats), then
    stored in ``dtype`` (an integer type wraps as C's conversion does)."""
    start, step = cast_bounds(a, a["start"] if _inferred(a) else arange_bounds(a)[0])
    index = np.arange(size, dtype=np.int64) // a["repeat"]
    dtype = np.dtype(a["dtype"])
    if dtype.kind in "iub":
        return (int(start) + index * int(step)).astype(dtype)
    return (start + index * step).astype(dtype)


def arange_array(start: float, stop: Optional[float] = None, step: float = 1.0, repeat: int = 1,
                 dtype: Any = "float32") -> np.ndarray:
    """MXNet's ``nd.arange`` values as a numpy array (what ``_arange`` computes).

    >>> arange_array(1.3, 5, 1.3, dtype="int32").tolist()
    [1, 2, 3]
    """
    a = Attrs({"start": start, "stop": stop, "step": step, "repeat": repeat,
               "infer_range": False, "dtype": np.dtype(dtype).name})
    return arange_values(a, arange_length(a))


def _arange_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if not _inferred(a):
        return ins, [(arange_length(a),)]
    check_attr(a["step"] != 0 and a["repeat"] >= 1, "step", a["step"], "must not be 0 (and "
               "repeat >= 1)")
    out = outs[0]
    return ins, [out if out is not None and 0 not in out else PartialShape((0,))]


def _arange_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    check_attr("size" in a or not _inferred(a), "infer_range", True,
               "needs the inferred length (the numpy backend's at_shapes gives it)")
    return [arange_values(a, a["size"] if "size" in a else arange_length(a))]


register(OpDef(
    "_arange", ARANGE_PARAMS, (), _arange_shape, _arange_compute, NOT_DIFFERENTIABLE,
    INJECTIVE, infer_type=lambda a, ins, outs: (ins, [np.dtype(a["dtype"])]),
    partial_shapes=True,
    # the numpy reference learns an inferred range's length from the decided shape
    extra={"at_shapes": lambda a, shapes: a.replace(size=shapes[0][0]) if _inferred(a) else a},
    lowering=("arange", {"bounds": lambda a: cast_bounds(
        a, a["start"] if _inferred(a) else arange_bounds(a)[0]),
        "dtypes": ("float64", "float32", "float16", "bfloat16", "int8", "uint8", "int32",
                   "int64")}),
    doc="start, start + step, ... below stop, each repeated `repeat` times (MXNet's arange)."))
