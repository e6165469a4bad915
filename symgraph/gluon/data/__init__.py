"""``gluon.data``: datasets, samplers and the DataLoader (MXNet 1.x names)."""
from __future__ import annotations

from . import vision
from .dataloader import DataLoader, default_batchify_fn
from .dataset import ArrayDataset, Dataset, SimpleDataset
from .record_dataset import RecordFileDataset
from .sampler import (BatchSampler, FilterSampler, IntervalSampler, RandomSampler, Sampler,
                      SequentialSampler)

__all__ = ["ArrayDataset", "BatchSampler", "DataLoader", "Dataset", "FilterSampler",
           "IntervalSampler", "RandomSampler", "RecordFileDataset", "Sampler",
           "SequentialSampler", "SimpleDataset", "default_batchify_fn", "vision"]
