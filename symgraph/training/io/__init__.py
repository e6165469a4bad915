"""``sg.io``: data iterators as in MXNet 1.x: the protocol (``DataIter``, ``DataBatch``,
``DataDesc``), the in-memory iterators (``base.py``), CSV and LibSVM files (``text.py``), the
iterators over other iterators (``wrappers.py``) and ``ImageRecordIter`` over MXNet's
``.rec`` files (``symgraph/image/record_iter.py``, which builds on ``base.py``).

Example::

    >>> import numpy as np, symgraph as sg
    >>> it = sg.io.NDArrayIter(np.zeros((10, 3)), np.arange(10), batch_size=4)
    >>> next(iter(it)).data[0].shape
    (4, 3)
"""
from __future__ import annotations

from .base import (LAST_BATCH_HANDLES, DataBatch, DataDesc, DataIter, MNISTIter,  # noqa: F401
                   NDArrayIter)
from .text import CSVIter, LibSVMIter
from .wrappers import PrefetchingIter, ResizeIter
from ..image.record_iter import ImageRecordIter

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "MNISTIter", "CSVIter",
           "LibSVMIter", "ResizeIter", "PrefetchingIter", "ImageRecordIter"]
