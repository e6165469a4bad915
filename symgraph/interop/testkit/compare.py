"""Array comparisons with MXNet's tolerance rules (``mx.test_utils``): a tolerance left None
takes a default chosen by the dtypes compared (the looser of the two), so float16 results are
held to float16 precision and float64 ones to float64's.

Example::

    >>> import numpy as np
    >>> from symgraph.interop.test_utils import assert_almost_equal
    >>> assert_almost_equal(np.float32([1, 2]), np.float32([1, 2.0001]))   # float32: rtol 1e-4
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ...core import config
from ...runtime.ndarray import NDArray

Tol = Union[None, float, Mapping[Any, float]]

_FLOAT_TOLS = {np.float16: (1e-2, 1e-1), np.float32: (1e-4, 1e-3), np.float64: (1e-5, 1e-20)}
_EXACT = (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64)


def default_dtype() -> type:
    """The dtype test inputs are made in: float32."""
    return np.float32


def default_rtols() -> dict[np.dtype, float]:
    """Relative tolerance by dtype (integers and bool compare exactly)."""
    return {**{np.dtype(t): r for t, (r, _) in _FLOAT_TOLS.items()},
            **{np.dtype(t): 0 for t in _EXACT}}


def default_atols() -> dict[np.dtype, float]:
    """Absolute tolerance by dtype (integers and bool compare exactly)."""
    return {**{np.dtype(t): a for t, (_, a) in _FLOAT_TOLS.items()},
            **{np.dtype(t): 0 for t in _EXACT}}


def default_numeric_eps() -> dict[np.dtype, float]:
    """Finite-difference step by dtype: powers of two, so ``x + eps`` drops no bits of eps."""
    return {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9,
            np.dtype(np.float64): 2.0 ** -14}


def effective_dtype(dat: Any) -> np.dtype:
    """The dtype whose tolerance ``dat`` deserves: float32 computed on a GPU with TF32 tensor
    cores on (``SYMGRAPH_TF32=1``) has float16's mantissa."""
    dtype = np.dtype(getattr(dat, "dtype", np.asarray(dat).dtype))
    ctx = getattr(dat, "context", None)
    if dtype == np.float32 and getattr(ctx, "device_type", "cpu") == "gpu" \
            and config.get("SYMGRAPH_TF32"):
        return np.dtype(np.float16)
    return dtype


def get_tolerance(dat: Any, tol: Tol, default_tol: Mapping[np.dtype, float]) -> float:
    """``tol`` when it is a number, else its entry (or the default's) for ``dat``'s dtype;
    a dtype neither knows is held to float32's tolerance."""
    if isinstance(tol, numbers.Number):
        return float(tol)
    dtype = effective_dtype(dat)
    fallback = default_tol.get(dtype, default_tol[np.dtype(np.float32)])
    return (tol or {}).get(dtype, fallback)


def get_tols(x: Any, y: Any, rtol: Tol, atol: Tol) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing ``x`` and ``y``: the looser of their dtypes' tolerances."""
    x = np.asarray(x) if isinstance(x, numbers.Number) else x
    y = np.asarray(y) if isinstance(y, numbers.Number) else y
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_rtol(rtol: Optional[float] = None, dtype: Any = np.float64) -> float:
    """``rtol``, or the default relative tolerance of ``dtype``."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol: Optional[float] = None, dtype: Any = np.float64) -> float:
    """``atol``, or the default absolute tolerance of ``dtype``."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_etol(etol: Optional[float] = None) -> float:
    """``etol`` (the fraction of elements allowed to differ), 0 by default."""
    return 0 if etol is None else etol


def _host(x: Any) -> np.ndarray:
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` have equal shapes and elements (arrays or NDArrays)."""
    return bool(np.array_equal(_host(a), _host(b)))


def _check_shapes(a: np.ndarray, b: np.ndarray, names: Sequence[str]) -> None:
    if a.shape != b.shape:
        raise AssertionError(f"shape mismatch: {names[0]} {a.shape} vs {names[1]} {b.shape}")


def almost_equal(a: Any, b: Any, rtol: Optional[float] = None, atol: Optional[float] = None,
                 equal_nan: bool = False, use_broadcast: bool = True) -> bool:
    """numpy's ``allclose`` (``|a - b| <= atol + rtol * |b|``); None tolerances are float64's."""
    a, b = _host(a), _host(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan))


def _violations(a: np.ndarray, b: np.ndarray, rtol: float, atol: float,
                equal_nan: bool) -> np.ndarray:
    """|a - b| / (atol + rtol |b|) per element; equal elements (infinities too) give 0, a NaN
    on one side only gives inf."""
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    with np.errstate(all="ignore"):
        err = np.where(a64 == b64, 0.0, np.abs(a64 - b64) / (atol + rtol * np.abs(b64) + 1e-300))
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    return np.where(nan_a | nan_b, np.where(nan_a & nan_b & equal_nan, 0.0, np.inf), err)


def assert_almost_equal(a: Any, b: Any, rtol: Tol = None, atol: Tol = None,
                        names: Sequence[str] = ("a", "b"), equal_nan: bool = False,
                        use_broadcast: bool = True, mismatches: tuple[int, int] = (10, 10)) -> None:
    """Raise AssertionError unless ``|a - b| <= atol + rtol * |b|`` everywhere (MXNet's
    signature). None tolerances follow the dtypes (:func:`get_tols`); shapes that broadcast
    are compared broadcast unless ``use_broadcast`` is False; bool arrays compare exactly.
    The message names the worst element and up to ``mismatches[0]`` others."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _host(a), _host(b)
    if not use_broadcast:
        _check_shapes(a, b, names)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b, err_msg=f"{names[0]} vs {names[1]}")
        return
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise AssertionError(f"shape mismatch: {names[0]} {a.shape} vs {names[1]} "
                             f"{b.shape}") from None
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    err = _violations(a, b, rtol, atol, equal_nan)
    bad = np.argwhere(err > 1)
    worst = np.unravel_index(int(np.argmax(err)), err.shape) if err.ndim else ()
    a_b, b_b = np.broadcast_arrays(a, b)
    shown = ", ".join(f"{tuple(int(j) for j in i)}: {a_b[tuple(i)]} vs {b_b[tuple(i)]}"
                      for i in bad[:max(0, mismatches[0])])
    raise AssertionError(
        f"{names[0]} and {names[1]} differ: error {float(err[worst]):.6g} exceeds tolerance "
        f"rtol={rtol:g}, atol={atol:g} at {len(bad)} of {err.size} elements "
        f"({100.0 * len(bad) / max(1, err.size):.3g}%); worst at {tuple(int(j) for j in worst)}"
        f": {names[0]}={a_b[worst]}, {names[1]}={b_b[worst]}; first: {shown}")


def assert_allclose(a: Any, b: Any, rtol: float = 1e-07, atol: float = 0,
                    equal_nan: bool = True) -> None:
    """numpy's ``assert_allclose`` defaults (NaNs equal) through :func:`assert_almost_equal`."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a: Any, b: Any, rtol: Tol = None, atol: Tol = None,
                                 etol: Optional[float] = None, names: Sequence[str] = ("a", "b"),
                                 equal_nan: bool = False,
                                 mismatches: tuple[int, int] = (10, 10)) -> None:
    """As :func:`assert_almost_equal`, but passes while at most a fraction ``etol`` of the
    elements is out of tolerance."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _host(a), _host(b)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if 1 - np.count_nonzero(close) / max(1, close.size) > etol:
        assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)


def assert_almost_equal_ignore_nan(a: Any, b: Any, rtol: Tol = None, atol: Tol = None,
                                   names: Sequence[str] = ("a", "b")) -> None:
    """:func:`assert_almost_equal` on the elements where neither side is NaN."""
    a, b = np.array(_host(a)), np.array(_host(b))
    nan = np.isnan(a) | np.isnan(b)
    a[nan], b[nan] = 0, 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f: Callable[..., Any], exception_type: Any, *args: Any,
                     **kwargs: Any) -> None:
    """Raise AssertionError unless ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type}")


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """Whether two NDArrays share memory: a change written through one shows in the other
    (``array1`` is restored afterwards)."""
    before = array2.asnumpy().copy()
    array1[:] += 1
    shared = not np.array_equal(array2.asnumpy(), before)
    array1[:] -= 1
    return shared and same(array1, array2)


def compare_ndarray_tuple(t1: Any, t2: Any, rtol: Tol = None, atol: Tol = None) -> None:
    """:func:`assert_almost_equal` over (nested) tuples of arrays; None on either side passes."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def collapse_sum_like(a: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Sum ``a`` down to ``shape``, the shape it was broadcast from (a broadcast's gradient)."""
    a = np.asarray(a)
    shape = tuple(shape)
    lead = a.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"collapse_sum_like: {a.shape} has fewer dimensions than {shape}")
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes, keepdims=True).reshape(shape)
