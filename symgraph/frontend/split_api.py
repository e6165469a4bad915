"""MXNet's ``split_v2`` (``sg.nd.split_v2``, ``sg.sym.split_v2``): numpy's ``split`` along an
axis, at given indices or into equal sections.

Sections are the ``split`` op (SliceChannel); indices are one ``slice_axis`` per piece. Both
get shapes, gradients and GPU code from those ops.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Union

from ..core.base import AttrError


def make_split_v2(ns: dict, group: Callable[[list], Any]) -> Callable:
    """``split_v2`` over op functions ``ns``; ``group`` joins the pieces (a list of NDArrays,
    or one Symbol with an output per piece)."""
    split, slice_axis, squeeze = ns["split"], ns["slice_axis"], ns["squeeze"]

    def split_v2(ary: Any, indices_or_sections: Union[int, Sequence[int]], axis: int = 0,
                 squeeze_axis: bool = False) -> Any:
        """Split ``ary`` along ``axis`` into ``indices_or_sections`` equal parts (an int) or
        at the given indices (a tuple), as ``numpy.split``.

        Examples
        --------
        >>> [p.shape for p in sg.nd.split_v2(sg.nd.zeros((5, 2)), (1, 3))]
        [(1, 2), (2, 2), (2, 2)]
        """
        if isinstance(indices_or_sections, int):
            return split(ary, num_outputs=indices_or_sections, axis=axis,
                         squeeze_axis=squeeze_axis)
        if not isinstance(indices_or_sections, (tuple, list)):
            raise AttrError(f"split_v2: indices_or_sections must be an int or a tuple of "
                            f"ints, got {indices_or_sections!r}")
        bounds = [0] + [int(i) for i in indices_or_sections] + [None]
        pieces = [slice_axis(ary, axis=axis, begin=b, end=e)
                  for b, e in zip(bounds[:-1], bounds[1:])]
        if squeeze_axis:
            pieces = [squeeze(p, axis=axis) for p in pieces]
        return pieces[0] if len(pieces) == 1 else group(pieces)
    return split_v2
