"""Pooling layers of ``gluon.nn`` (MXNet 1.9.1's names, arguments, their order and defaults):
``MaxPool1D/2D/3D``, ``AvgPool1D/2D/3D`` and ``GlobalMaxPool1D/2D/3D``,
``GlobalAvgPool1D/2D/3D``. Each is one ``Pooling`` op; channels-last layouts (``NWC``,
``NHWC``, ``NDHWC``), which the op does not compute, are transposed to channels first
around it, so the user's data and result stay channels last.

Example::

    pool = nn.MaxPool2D(3, 2, layout="NHWC")
    pool(sg.nd.ones((1, 10, 10, 4))).shape   # (1, 4, 4, 4)
"""
from __future__ import annotations

from typing import Any, Optional, Union, Sequence

from ...core.base import AttrError
from ..block import HybridBlock

IntOrTuple = Union[int, Sequence[int]]
FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def as_tuple(value: IntOrTuple, n: int, what: str) -> tuple[int, ...]:
    """``value`` as ``n`` ints (an int is repeated); AttrError naming ``what`` otherwise."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise AttrError(f"{what} must be an int or a tuple of {n} ints, got {value}")
    return value


def check_layout(who: str, layout: str, ndim: int) -> bool:
    """Whether ``layout`` puts the channels last; AttrError when it is neither of the
    ``ndim``-D layouts."""
    if layout not in (FIRST[ndim], LAST[ndim]):
        raise AttrError(f"{who}: layout {layout!r} is not supported; supported: "
                        f"{(FIRST[ndim], LAST[ndim])}")
    return layout == LAST[ndim]


def to_first_axes(ndim: int) -> tuple[int, ...]:
    """``transpose`` axes taking ``ndim``-D channels-last data to channels first."""
    return (0, ndim + 1) + tuple(range(1, ndim + 1))


def to_last_axes(ndim: int) -> tuple[int, ...]:
    """``transpose`` axes taking ``ndim``-D channels-first data back to channels last."""
    return (0,) + tuple(range(2, ndim + 2)) + (1,)


def channels_first_call(block: HybridBlock, F: Any, fn: Any, arrays: tuple, attrs: dict,
                        ndim: int) -> Any:
    """``block._op(F, fn, arrays, attrs)`` on channels-last data: its first array moved to
    channels first, the result moved back (the op computes channels first only)."""
    x = block._op(F, F.transpose, (arrays[0],), {"axes": to_first_axes(ndim)}, name=None)
    y = block._op(F, fn, (x,) + tuple(arrays[1:]), attrs)
    return block._op(F, F.transpose, (y,), {"axes": to_last_axes(ndim)}, name=None)


class _Pooling(HybridBlock):
    """One ``Pooling`` op; ``ndim`` spatial axes, channels last when ``last``."""

    def __init__(self, pool_size: tuple, strides: Optional[tuple], padding: tuple,
                 ceil_mode: bool, global_pool: bool, pool_type: str,
                 count_include_pad: Optional[bool] = None, last: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        strides = pool_size if strides is None else strides
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": padding,
                        "global_pool": global_pool, "pool_type": pool_type,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad
        self._last = last

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        if self._last:
            return channels_first_call(self, F, F.Pooling, (x,), self._kwargs,
                                       len(self._kwargs["kernel"]))
        return self._op(F, F.Pooling, (x,), self._kwargs)
    _FIXED_OPS = hybrid_forward  # fixed op calls (gluon/one_op.py)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']})"


def _pool_class(ndim: int, pool_type: str, order: tuple) -> Any:
    """``__init__(pool_size, strides, padding, *rest)``; ``order`` names the rest as MXNet
    orders them (AvgPool2D and the 3-D pools put ``ceil_mode`` before ``layout``)."""
    def __init__(self: Any, pool_size: IntOrTuple = (2,) * ndim, strides: Any = None,
                 padding: IntOrTuple = 0, *more: Any, **kwargs: Any) -> None:
        kwargs.update(zip(order, more))
        last = check_layout(type(self).__name__, kwargs.pop("layout", FIRST[ndim]), ndim)
        ceil_mode = kwargs.pop("ceil_mode", False)
        count_include_pad = kwargs.pop("count_include_pad", True)
        size = as_tuple(pool_size, ndim, "pool_size")
        strides = None if strides is None else as_tuple(strides, ndim, "strides")
        _Pooling.__init__(self, size, strides, as_tuple(padding, ndim, "padding"), ceil_mode,
                          False, pool_type,
                          count_include_pad if pool_type == "avg" else None, last, **kwargs)
    return __init__


_LAYOUT_FIRST = ("layout", "ceil_mode", "count_include_pad")
_CEIL_FIRST = ("ceil_mode", "layout", "count_include_pad")


class MaxPool1D(_Pooling):
    """Max pooling over NCW (or NWC) data (``strides`` default to ``pool_size``)."""
    __init__ = _pool_class(1, "max", _LAYOUT_FIRST)


class MaxPool2D(_Pooling):
    """Max pooling over NCHW (or NHWC) data (``strides`` default to ``pool_size``)."""
    __init__ = _pool_class(2, "max", _LAYOUT_FIRST)


class MaxPool3D(_Pooling):
    """Max pooling over NCDHW (or NDHWC) data (``strides`` default to ``pool_size``)."""
    __init__ = _pool_class(3, "max", _CEIL_FIRST)


class AvgPool1D(_Pooling):
    """Average pooling over NCW (or NWC) data (``count_include_pad`` as MXNet: True)."""
    __init__ = _pool_class(1, "avg", _LAYOUT_FIRST)


class AvgPool2D(_Pooling):
    """Average pooling over NCHW (or NHWC) data (``count_include_pad`` as MXNet: True)."""
    __init__ = _pool_class(2, "avg", _CEIL_FIRST)


class AvgPool3D(_Pooling):
    """Average pooling over NCDHW (or NDHWC) data."""
    __init__ = _pool_class(3, "avg", _CEIL_FIRST)


def _global_class(ndim: int, pool_type: str) -> Any:
    def __init__(self: Any, layout: str = FIRST[ndim], **kwargs: Any) -> None:
        last = check_layout(type(self).__name__, layout, ndim)
        _Pooling.__init__(self, (1,) * ndim, (1,) * ndim, (0,) * ndim, False, True,
                          pool_type, None, last, **kwargs)
    return __init__


class GlobalMaxPool1D(_Pooling):
    """Max over the whole W: output ``(N, C, 1)`` (``(N, 1, C)`` for NWC)."""
    __init__ = _global_class(1, "max")


class GlobalMaxPool2D(_Pooling):
    """Max over the whole H and W: output ``(N, C, 1, 1)``."""
    __init__ = _global_class(2, "max")


class GlobalMaxPool3D(_Pooling):
    """Max over the whole D, H and W: output ``(N, C, 1, 1, 1)``."""
    __init__ = _global_class(3, "max")


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole W: output ``(N, C, 1)`` (``(N, 1, C)`` for NWC)."""
    __init__ = _global_class(1, "avg")


class GlobalAvgPool2D(_Pooling):
    """Mean over the whole H and W: output ``(N, C, 1, 1)``."""
    __init__ = _global_class(2, "avg")


class GlobalAvgPool3D(_Pooling):
    """Mean over the whole D, H and W: output ``(N, C, 1, 1, 1)``."""
    __init__ = _global_class(3, "avg")
