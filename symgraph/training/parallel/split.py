"""Slicing a batch over devices, as MXNet's executor group does.

Device ``i`` gets ``round(work_load[i] * batch / sum(work_load))`` samples (Python's rounding),
the last device takes what rounding left over, and the slices are contiguous in device order.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ...core.base import BindError


def batch_axis(layout: Optional[str]) -> int:
    """The batch axis of an array of ``layout`` (MXNet's ``DataDesc.get_batch_axis``): the
    position of ``N``, 0 without a layout or an ``N``."""
    return max(0, (layout or "N").find("N"))


def take_part(value: np.ndarray, axis: int, part: slice) -> np.ndarray:
    """Samples ``part`` of ``value`` along its batch ``axis`` (a view)."""
    return value[(slice(None),) * axis + (part,)]


def split_batch(batch_size: int, work_load_list: Optional[Sequence[float]] = None,
                num_devices: Optional[int] = None) -> list[slice]:
    """Contiguous slices of ``range(batch_size)``, one per device (MXNet's
    ``_split_input_slice``); an empty slice or a bad work load raises ``BindError``."""
    loads = list(work_load_list) if work_load_list is not None else [1] * (num_devices or 1)
    if num_devices is not None and len(loads) != num_devices:
        raise BindError(f"work_load_list has {len(loads)} entries for {num_devices} devices: "
                        f"{loads}")
    if not loads or any(not w > 0 for w in loads):
        raise BindError(f"work_load_list must hold positive numbers, got {loads}")
    total = sum(loads)
    counts = [int(round(w * batch_size / total)) for w in loads]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for i, count in enumerate(counts):
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise BindError(f"batch of {batch_size} split by work_load_list {loads} leaves "
                            f"device {i} no samples; use a larger batch or fewer devices")
        slices.append(slice(begin, end))
    return slices
