"""gluon.data additions: ``Dataset.shard``/``take``/``sample`` (lazy views, MXNet's split of
a dataset over workers) and ``DataLoader(auto_reload=True)``; references are plain Python."""
from __future__ import annotations

import pytest

from symgraph.core.base import DataError
from symgraph.gluon.data import DataLoader, SimpleDataset


def test_shard_splits_contiguously() -> None:
    data = SimpleDataset(list(range(10)))
    shards = [list(data.shard(4, i)) for i in range(4)]
    # 10 = 3 + 3 + 2 + 2: the first 10 % 4 shards are one longer
    assert shards == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    with pytest.raises(DataError, match="index 4 of 4"):
        data.shard(4, 4)


def test_take_and_sample() -> None:
    data = SimpleDataset(list(range(6))).transform(lambda v: v * 10)
    assert list(data.take(None)) == [0, 10, 20, 30, 40, 50]
    assert list(data.take(100)) == [0, 10, 20, 30, 40, 50]
    assert list(data.take(2)) == [0, 10]
    assert list(data.sample([5, 0, 5])) == [50, 0, 50]


def test_auto_reload_loader_gives_the_same_batches() -> None:
    data = SimpleDataset([float(i) for i in range(7)])
    plain = [b.asnumpy().tolist() for b in DataLoader(data, 3)]
    loader = DataLoader(data, 3, num_workers=1, thread_pool=True, auto_reload=True)
    for _ in range(2):
        assert [b.asnumpy().tolist() for b in loader] == plain
