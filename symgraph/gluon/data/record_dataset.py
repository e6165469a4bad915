"""``gluon.data.RecordFileDataset``: the records of an indexed RecordIO file (``.rec`` with its
``.idx`` beside it) as a dataset of raw bytes."""
from __future__ import annotations

import os

from ...core.base import DataError
from .dataset import Dataset


class RecordFileDataset(Dataset):
    """Sample ``i``: the bytes of the ``i``-th record listed in ``<filename stem>.idx``.

    Example::

        >>> ds = RecordFileDataset('train.rec')                     # doctest: +SKIP
        >>> header, img = sg.recordio.unpack(ds[0])                 # doctest: +SKIP

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'data')
    >>> rec = sg.recordio.MXIndexedRecordIO(path + '.idx', path + '.rec', 'w')
    >>> for i, payload in enumerate([b'first', b'second']):
    ...     rec.write_idx(i, payload)
    >>> rec.close()
    >>> ds = sg.gluon.data.RecordFileDataset(path + '.rec')
    >>> len(ds), ds[1]
    (2, b'second')
    """

    def __init__(self, filename: str) -> None:
        from ...training import recordio
        self.filename = filename
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        for path in (filename, self.idx_file):
            if not os.path.isfile(path):
                raise DataError(f"RecordFileDataset: {path} does not exist (a .rec file needs "
                                f"its .idx index beside it; make both with symgraph im2rec)")
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx: int) -> bytes:
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self) -> int:
        return len(self._record.keys)
