"""Cases for CTCLoss: the forward against a brute-force sum over every alignment (float64),
the gradient against central differences of the op's own forward."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from tests.gluon._loss_refs import ctc_brute

from .case import Case, normal

S = sg.sym
data, label = S.var("data"), S.var("label")
data_lengths, label_lengths = S.var("data_lengths"), S.var("label_lengths")
T, N, C = 4, 3, 3


def _fixed(values) -> object:
    return lambda rng: np.asarray(values, dtype=np.float64)


def _ref(blank: int, pad: int):
    def ref(data, label, data_lengths=None, label_lengths=None):
        out = []
        for b in range(data.shape[1]):
            steps = T if data_lengths is None else int(data_lengths[b])
            seq = [int(v) for v in label[b]]
            n = seq.index(pad) if label_lengths is None and pad in seq else \
                len(seq) if label_lengths is None else int(label_lengths[b])
            out.append(ctc_brute(data[:steps, b], seq[:n], blank))
        return np.array(out)
    return ref


CASES = [
    Case("CTCLoss", lambda: S.CTCLoss(data, label), {
        "data": normal(T, N, C), "label": _fixed([[1, 2], [2, 2], [1, 0]])},
        _ref(0, 0), grad_nodes=["data"], id="CTCLoss-first"),
    Case("CTCLoss", lambda: S.contrib.ctc_loss(data, label, blank_label="last"), {
        "data": normal(T, N, C), "label": _fixed([[0, 1], [1, -1], [-1, -1]])},
        _ref(C - 1, -1), grad_nodes=["data"], id="CTCLoss-last"),
    Case("CTCLoss", lambda: S.ctc_loss(data, label, data_lengths, label_lengths,
                                       use_data_lengths=True, use_label_lengths=True), {
        "data": normal(T, N, C), "label": _fixed([[1, 2], [2, 1], [1, 1]]),
        "data_lengths": _fixed([4, 2, 3]), "label_lengths": _fixed([2, 1, 2])},
        _ref(0, 0), grad_nodes=["data"], id="CTCLoss-lengths"),
]
