"""Sentences for recurrent networks (MXNet's ``mx.rnn.io``): words to integer codes, and an
iterator that groups sentences into length buckets for a ``BucketingModule``."""
from __future__ import annotations

import logging
import random
from typing import Any, Optional, Sequence

import numpy as np

from ...runtime import ndarray as _nd
from ...core.base import DataError
from ...training.io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences: Sequence[Sequence[str]], vocab: Optional[dict] = None,
                     invalid_label: int = -1, invalid_key: str = "\n", start_label: int = 0,
                     unknown_token: Optional[str] = None) -> tuple[list, dict]:
    """Each word to its code in ``vocab`` (built from ``start_label`` when None, skipping
    ``invalid_label``); with a given ``vocab`` new words map to ``unknown_token``.

    Examples
    --------
    >>> sg.rnn.encode_sentences([['a', 'b'], ['b', 'c']], start_label=1)
    ([[1, 2], [2, 3]], {'\\n': -1, 'a': 1, 'b': 2, 'c': 3})
    """
    new_vocab = vocab is None
    vocab = {invalid_key: invalid_label} if new_vocab else vocab
    idx, coded = start_label, []
    for sent in sentences:
        codes = []
        for word in sent:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise DataError(f"encode_sentences: unknown token {word!r} and no "
                                    f"unknown_token given")
                word = unknown_token or word
                if word not in vocab:  # (the unknown token keeps its first code)
                    idx += idx == invalid_label
                    vocab[word] = idx
                    idx += 1
            codes.append(vocab[word])
        coded.append(codes)
    return coded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences, each padded with ``invalid_label`` to the smallest
    bucket length that holds it (sentences longer than every bucket are dropped). The label
    is the sentence shifted by one word. ``buckets`` default: every length that occurs at
    least ``batch_size`` times. ``layout`` 'NT' (batch major) or 'TN'."""

    def __init__(self, sentences: Sequence[Sequence[int]], batch_size: int,
                 buckets: Optional[list] = None, invalid_label: int = -1,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Any = "float32", layout: str = "NT") -> None:
        super().__init__(batch_size)
        if layout not in ("NT", "TN"):
            raise DataError(f"BucketSentenceIter: layout={layout!r}; 'NT' or 'TN'")
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [n for n, c in enumerate(counts) if c >= batch_size]
        if not buckets:
            raise DataError(f"BucketSentenceIter: no bucket (no sentence length occurs "
                            f"batch_size={batch_size} times); pass buckets=")
        self.buckets = sorted(buckets)
        rows: list[list] = [[] for _ in self.buckets]
        discarded = 0
        for sent in sentences:
            b = int(np.searchsorted(self.buckets, len(sent)))
            if b == len(self.buckets):
                discarded += 1
                continue
            row = np.full((self.buckets[b],), invalid_label, dtype=dtype)
            row[:len(sent)] = sent
            rows[b].append(row)
        if discarded:
            logging.warning("BucketSentenceIter: discarded %d sentences longer than the "
                            "largest bucket", discarded)
        self.data = [np.asarray(r, dtype=dtype).reshape(len(r), n)
                     for r, n in zip(rows, self.buckets)]
        self.batch_size, self.invalid_label, self.dtype = batch_size, invalid_label, dtype
        self.data_name, self.label_name, self.layout = data_name, label_name, layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        self.provide_data = [self._desc(data_name, self.default_bucket_key)]
        self.provide_label = [self._desc(label_name, self.default_bucket_key)]
        self.idx = [(i, j) for i, d in enumerate(self.data)
                    for j in range(0, len(d) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def _desc(self, name: str, length: int) -> DataDesc:
        shape = (self.batch_size, length) if self.major_axis == 0 else \
            (length, self.batch_size)
        return DataDesc(name, shape, self.dtype, layout=self.layout)

    def reset(self) -> None:
        """Shuffle the batches and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for d in self.data:
            np.random.shuffle(d)
        self.nddata, self.ndlabel = [], []
        for d in self.data:
            label = np.full_like(d, self.invalid_label)
            label[:, :-1] = d[:, 1:]
            self.nddata.append(d)
            self.ndlabel.append(label)

    def next(self) -> DataBatch:
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        n = self.buckets[i]
        return DataBatch([_nd.array(data, dtype=self.dtype)],
                         [_nd.array(label, dtype=self.dtype)], pad=0, bucket_key=n,
                         provide_data=[self._desc(self.data_name, n)],
                         provide_label=[self._desc(self.label_name, n)])
