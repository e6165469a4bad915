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

from .layer_docs import AVG, FIRST, GLOBAL_PARAMS, LAST, POOL_PARAMS, document

IntOrTuple = Union[int, Sequence[int]]


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


def _pool_init(block: _Pooling, ndim: int, pool_type: str, pool_size: IntOrTuple,
               strides: Any, padding: IntOrTuple, layout: str, ceil_mode: bool,
               count_include_pad: Optional[bool], kwargs: dict) -> None:
    """The shared body of the MaxPool/AvgPool classes' ``__init__``."""
    last = check_layout(type(block).__name__, layout, ndim)
    size = as_tuple(pool_size, ndim, "pool_size")
    strides = None if strides is None else as_tuple(strides, ndim, "strides")
    _Pooling.__init__(block, size, strides, as_tuple(padding, ndim, "padding"), ceil_mode,
                      False, pool_type, count_include_pad, last, **kwargs)


def _global_init(block: _Pooling, ndim: int, pool_type: str, layout: str,
                 kwargs: dict) -> None:
    """The shared body of the GlobalMaxPool/GlobalAvgPool classes' ``__init__``."""
    last = check_layout(type(block).__name__, layout, ndim)
    _Pooling.__init__(block, (1,) * ndim, (1,) * ndim, (0,) * ndim, False, True,
                      pool_type, None, last, **kwargs)


class MaxPool1D(_Pooling):
    """Max pooling over NCW (or NWC) data (``strides`` default to ``pool_size``).

    Examples
    --------
    >>> sg.gluon.nn.MaxPool1D()(sg.nd.array([[[1, 3, 2, 4]]]))
    [[[3. 4.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = 2, strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, layout: str = "NCW", ceil_mode: bool = False,
                 **kwargs: Any) -> None:
        _pool_init(self, 1, "max", pool_size, strides, padding, layout, ceil_mode,
                   None, kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over NCHW (or NHWC) data (``strides`` default to ``pool_size``).

    Examples
    --------
    >>> sg.gluon.nn.MaxPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[4.]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    >>> sg.gluon.nn.MaxPool2D(3, 2, layout='NHWC')(sg.nd.ones((1, 10, 10, 4))).shape
    (1, 4, 4, 4)
    """

    def __init__(self, pool_size: IntOrTuple = (2, 2), strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, layout: str = "NCHW", ceil_mode: bool = False,
                 **kwargs: Any) -> None:
        _pool_init(self, 2, "max", pool_size, strides, padding, layout, ceil_mode,
                   None, kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over NCDHW (or NDHWC) data (``strides`` default to ``pool_size``).

    Examples
    --------
    >>> sg.gluon.nn.MaxPool3D()(sg.nd.arange(8).reshape((1, 1, 2, 2, 2)))  # the largest of 0..7
    [[[[[7.]]]]]
    <NDArray 1x1x1x1x1 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = (2, 2, 2), strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False, layout: str = "NCDHW",
                 **kwargs: Any) -> None:
        _pool_init(self, 3, "max", pool_size, strides, padding, layout, ceil_mode,
                   None, kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over NCW (or NWC) data (``count_include_pad`` as MXNet: True).

    Examples
    --------
    >>> sg.gluon.nn.AvgPool1D()(sg.nd.array([[[1, 3, 2, 4]]]))
    [[[2. 3.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = 2, strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, layout: str = "NCW", ceil_mode: bool = False,
                 count_include_pad: bool = True, **kwargs: Any) -> None:
        _pool_init(self, 1, "avg", pool_size, strides, padding, layout, ceil_mode,
                   count_include_pad, kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over NCHW (or NHWC) data (``count_include_pad`` as MXNet: True).

    Examples
    --------
    >>> sg.gluon.nn.AvgPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[2.5]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    >>> pool = sg.gluon.nn.AvgPool2D(padding=1)  # padded zeros count in the divisor
    >>> pool(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[0.25 0.5 ]
       [0.75 1.  ]]]]
    <NDArray 1x1x2x2 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = (2, 2), strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False, layout: str = "NCHW",
                 count_include_pad: bool = True, **kwargs: Any) -> None:
        _pool_init(self, 2, "avg", pool_size, strides, padding, layout, ceil_mode,
                   count_include_pad, kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over NCDHW (or NDHWC) data (``count_include_pad`` as MXNet: True).

    Examples
    --------
    >>> sg.gluon.nn.AvgPool3D()(sg.nd.arange(8).reshape((1, 1, 2, 2, 2)))  # the mean of 0..7
    [[[[[3.5]]]]]
    <NDArray 1x1x1x1x1 @cpu(0)>
    """

    def __init__(self, pool_size: IntOrTuple = (2, 2, 2), strides: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False, layout: str = "NCDHW",
                 count_include_pad: bool = True, **kwargs: Any) -> None:
        _pool_init(self, 3, "avg", pool_size, strides, padding, layout, ceil_mode,
                   count_include_pad, kwargs)


class GlobalMaxPool1D(_Pooling):
    """Max over the whole W: output ``(N, C, 1)`` (``(N, 1, C)`` for NWC).

    Examples
    --------
    >>> sg.gluon.nn.GlobalMaxPool1D()(sg.nd.array([[[1, 3, 2, 4]]]))
    [[[4.]]]
    <NDArray 1x1x1 @cpu(0)>
    """

    def __init__(self, layout: str = "NCW", **kwargs: Any) -> None:
        _global_init(self, 1, "max", layout, kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over the whole H and W: output ``(N, C, 1, 1)``.

    Examples
    --------
    >>> sg.gluon.nn.GlobalMaxPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[4.]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    """

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        _global_init(self, 2, "max", layout, kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over the whole D, H and W: output ``(N, C, 1, 1, 1)``.

    Examples
    --------
    >>> sg.gluon.nn.GlobalMaxPool3D()(sg.nd.arange(8).reshape((1, 1, 2, 2, 2)))
    [[[[[7.]]]]]
    <NDArray 1x1x1x1x1 @cpu(0)>
    """

    def __init__(self, layout: str = "NCDHW", **kwargs: Any) -> None:
        _global_init(self, 3, "max", layout, kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole W: output ``(N, C, 1)`` (``(N, 1, C)`` for NWC).

    Examples
    --------
    >>> sg.gluon.nn.GlobalAvgPool1D(layout='NWC')(sg.nd.array([[[1, 2], [3, 6]]]))
    [[[2. 4.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, layout: str = "NCW", **kwargs: Any) -> None:
        _global_init(self, 1, "avg", layout, kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over the whole H and W: output ``(N, C, 1, 1)``.

    Examples
    --------
    >>> sg.gluon.nn.GlobalAvgPool2D()(sg.nd.array([[[[1, 2], [3, 4]]]]))
    [[[[2.5]]]]
    <NDArray 1x1x1x1 @cpu(0)>
    """

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        _global_init(self, 2, "avg", layout, kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over the whole D, H and W: output ``(N, C, 1, 1, 1)``.

    Examples
    --------
    >>> sg.gluon.nn.GlobalAvgPool3D()(sg.nd.arange(8).reshape((1, 1, 2, 2, 2)))
    [[[[[3.5]]]]]
    <NDArray 1x1x1x1x1 @cpu(0)>
    """

    def __init__(self, layout: str = "NCDHW", **kwargs: Any) -> None:
        _global_init(self, 3, "avg", layout, kwargs)


for _cls, _n in ((MaxPool1D, 1), (MaxPool2D, 2), (MaxPool3D, 3)):
    document(_cls, POOL_PARAMS, _n, avg="")
for _cls, _n in ((AvgPool1D, 1), (AvgPool2D, 2), (AvgPool3D, 3)):
    document(_cls, POOL_PARAMS, _n, avg=AVG)
for _cls, _n in ((GlobalMaxPool1D, 1), (GlobalMaxPool2D, 2), (GlobalMaxPool3D, 3),
                 (GlobalAvgPool1D, 1), (GlobalAvgPool2D, 2), (GlobalAvgPool3D, 3)):
    document(_cls, GLOBAL_PARAMS, _n)
