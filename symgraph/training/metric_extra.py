"""More MXNet 1.x metrics: F1, MCC, Perplexity, MAE, RMSE, NegativeLogLikelihood,
PearsonCorrelation, PCC, Torch, Caffe. Importing this module registers them for
``sg.metric.create('f1')`` / ``eval_metric='f1'`` and puts them on ``sg.metric``.

Example::

    f1 = sg.metric.create("f1")
    f1.update([sg.nd.array([0, 1, 1])], [sg.nd.array([[0.3, 0.7], [0.1, 0.9], [0.8, 0.2]])])
    f1.get()  # ('f1', 0.666...)
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy

from . import metric as _metric
from ..core.base import DataError
from .metric import MSE, EvalMetric, Loss, host_array, check_label_shapes

__all__ = ["F1", "MCC", "Perplexity", "MAE", "RMSE", "NegativeLogLikelihood",
           "PearsonCorrelation", "PCC", "Torch", "Caffe"]


def _install(klass: type, *aliases: str) -> None:
    _metric.register(klass, *aliases)
    setattr(_metric, klass.__name__, klass)
    _metric.__all__.append(klass.__name__)


def _column(x: numpy.ndarray) -> numpy.ndarray:
    return x.reshape(x.shape[0], 1) if x.ndim == 1 else x


class MAE(EvalMetric):
    """Mean absolute error, averaged per batch then over batches (as MXNet 1.x)."""

    def __init__(self, name: str = "mae", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
        return float(numpy.abs(_column(label) - _column(pred)).mean()), 1


class RMSE(MSE):
    """Root mean squared error, per batch then averaged over batches (as MXNet 1.x)."""

    def __init__(self, name: str = "rmse", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
        mse, n = super()._batch(label, pred)
        return math.sqrt(mse), n


class NegativeLogLikelihood(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples."""

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss", **kwargs: Any) -> None:
        self.eps = eps
        super().__init__(name, eps=eps, **kwargs)

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
        label = label.ravel().astype(numpy.int64)
        prob = pred[numpy.arange(pred.shape[0]), label]
        return float(-numpy.log(prob + self.eps).sum()), pred.shape[0]


class Perplexity(EvalMetric):
    """``exp(mean(-log p[label]))`` over labels that are not ``ignore_label``; probabilities
    are floored at 1e-10, as MXNet's."""

    def __init__(self, ignore_label: Optional[int], axis: int = -1, name: str = "perplexity",
                 **kwargs: Any) -> None:
        self.ignore_label, self.axis = ignore_label, axis
        super().__init__(name, ignore_label=ignore_label, **kwargs)

    def update(self, labels: Sequence, preds: Sequence) -> None:
        check_label_shapes(labels, preds, self.name)
        for label, pred in zip(labels, preds):
            label, pred = host_array(label).ravel(), host_array(pred)
            if label.size * pred.shape[self.axis] != pred.size:
                raise DataError(f"{self.name}: labels {label.shape} do not match predictions "
                                f"{pred.shape} along axis {self.axis}")
            flat = numpy.moveaxis(pred, self.axis, -1).reshape(label.size, -1)
            # MXNet picks with ``pick``'s default mode, 'clip': a label past the last class
            # (a vocabulary counted from 1) reads the last class, not an IndexError
            index = numpy.clip(label.astype(numpy.int64), 0, flat.shape[1] - 1)
            picked = numpy.take_along_axis(flat, index.reshape(-1, 1), 1).ravel()
            keep = numpy.ones(label.size, bool) if self.ignore_label is None \
                else label != self.ignore_label
            loss = -numpy.log(numpy.maximum(1e-10, picked[keep])).sum()
            self._add(float(loss), int(keep.sum()))

    def get(self) -> tuple[Any, Any]:
        return self.name, math.exp(self.sum_metric / self.num_inst) if self.num_inst \
            else float("nan")

    def get_global(self) -> tuple[Any, Any]:
        n = self.global_num_inst
        return self.name, math.exp(self.global_sum_metric / n) if n else float("nan")


class _Binary(EvalMetric):
    """F1 and MCC: a confusion matrix of a binary task (arg-max of two-column predictions),
    kept locally and globally. ``average='macro'``: the score of each update, averaged;
    ``'micro'``: the score of all counts together."""

    def __init__(self, name: str, average: str = "macro", **kwargs: Any) -> None:
        if average not in ("macro", "micro"):
            raise DataError(f"{name}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(name, average=average, **kwargs)

    def reset_local(self) -> None:
        super().reset_local()
        self.counts = numpy.zeros(4)  # tp, fp, fn, tn of this interval

    def reset(self) -> None:
        super().reset()
        self.global_counts = numpy.zeros(4)

    def _score(self, counts: numpy.ndarray) -> float:
        raise NotImplementedError

    def update(self, labels: Sequence, preds: Sequence) -> None:
        check_label_shapes(labels, preds, self.name)
        batch = numpy.zeros(4)
        for label, pred in zip(labels, preds):
            label, pred = host_array(label).ravel(), host_array(pred)
            if len(numpy.unique(label)) > 2:
                raise DataError(f"{self.name}: labels {sorted(numpy.unique(label))[:5]}... "
                                f"are not binary")
            p, t = pred.argmax(axis=1) == 1, label == 1
            batch += [(p & t).sum(), (p & ~t).sum(), (~p & t).sum(), (~p & ~t).sum()]
        if self.average == "macro":
            # (MXNet's global score of a macro update is the same batch's score)
            self._add(self._score(batch), 1)
            return
        self.counts += batch
        self.global_counts += batch
        self.num_inst, self.global_num_inst = self.counts.sum(), self.global_counts.sum()
        self.sum_metric = self._score(self.counts) * self.num_inst
        self.global_sum_metric = self._score(self.global_counts) * self.global_num_inst


class F1(_Binary):
    """F1 score of the positive class (label 1) of a binary task."""

    def __init__(self, name: str = "f1", average: str = "macro", **kwargs: Any) -> None:
        super().__init__(name, average, **kwargs)

    def _score(self, counts: numpy.ndarray) -> float:
        tp, fp, fn, _ = counts
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        total = precision + recall
        return float(2 * precision * recall / total) if total > 0 else 0.0


class MCC(_Binary):
    """Matthews correlation coefficient of a binary task; zero factors of the denominator are
    left out, as MXNet does."""

    def __init__(self, name: str = "mcc", average: str = "macro", **kwargs: Any) -> None:
        super().__init__(name, average, **kwargs)

    def _score(self, counts: numpy.ndarray) -> float:
        tp, fp, fn, tn = (float(c) for c in counts)
        if not tp + fp + fn + tn:
            return 0.0
        terms = [t for t in (tp + fp, tp + fn, tn + fp, tn + fn) if t != 0.0]
        return (tp * tn - fp * fn) / math.sqrt(math.prod(terms))


class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels (same shapes): per update, averaged
    (``average='macro'``), or over everything seen (``'micro'``)."""

    def __init__(self, name: str = "pearsonr", average: str = "macro", **kwargs: Any) -> None:
        self.average = average
        super().__init__(name, average=average, **kwargs)

    def reset(self) -> None:
        super().reset()
        # n, sum p, sum l, sum p^2, sum l^2, sum p*l: kept over reset_local, as MXNet's
        self._sums = numpy.zeros(6)

    def update(self, labels: Sequence, preds: Sequence) -> None:
        check_label_shapes(labels, preds, self.name)
        for label, pred in zip(labels, preds):
            label, pred = host_array(label).astype(numpy.float64), host_array(pred).astype(numpy.float64)
            if label.shape != pred.shape:
                raise DataError(f"{self.name}: labels {label.shape} and predictions "
                                f"{pred.shape} differ in shape")
            if self.average == "macro":
                self._add(float(numpy.corrcoef(pred.ravel(), label.ravel())[0, 1]), 1)
                continue
            p, q = pred.ravel(), label.ravel()
            self._sums += [p.size, p.sum(), q.sum(), p @ p, q @ q, p @ q]
            self.num_inst += 1
            self.global_num_inst += 1

    def get(self) -> tuple[Any, Any]:
        if self.average == "macro" or not self.num_inst:
            return super().get()
        n, sp, sl, spp, sll, spl = self._sums
        cov, vp, vl = spl - sp * sl / n, spp - sp * sp / n, sll - sl * sl / n
        return self.name, float(cov / math.sqrt(vp * vl))


class PCC(EvalMetric):
    """Multi-class Matthews correlation (Gorodkin's R_K) from a confusion matrix that grows
    with the largest class seen; predictions are arg-maxed when shaped unlike the labels."""

    def __init__(self, name: str = "pcc", **kwargs: Any) -> None:
        self.k = 2
        super().__init__(name, **kwargs)

    def reset(self) -> None:
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))

    @staticmethod
    def _mcc(cm: numpy.ndarray) -> float:
        n, x, y = cm.sum(), cm.sum(axis=1), cm.sum(axis=0)
        cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        return float(numpy.sum(cm.diagonal() * n - x * y) / math.sqrt(cov_xx * cov_yy))

    @property
    def sum_metric(self) -> float:  # type: ignore[override]
        return self._mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self) -> float:  # type: ignore[override]
        return self._mcc(self.gcm) * self.global_num_inst

    def update(self, labels: Sequence, preds: Sequence) -> None:
        check_label_shapes(labels, preds, self.name)
        for label, pred in zip(labels, preds):
            label, pred = host_array(label).astype(numpy.int64), host_array(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype(numpy.int64)
            label, pred = label.ravel(), pred.ravel()
            n = int(max(pred.max(), label.max()))
            if n >= self.k:
                grow = ((0, n + 1 - self.k), (0, n + 1 - self.k))
                self.lcm, self.gcm = numpy.pad(self.lcm, grow), numpy.pad(self.gcm, grow)
                self.k = n + 1
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1


class Torch(Loss):
    """MXNet's name for a :class:`~symgraph.training.metric.Loss` of torch-criterion outputs."""

    def __init__(self, name: str = "torch", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)


class Caffe(Loss):
    """MXNet's name for a :class:`~symgraph.training.metric.Loss` of caffe-loss outputs."""

    def __init__(self, name: str = "caffe", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)


for _klass, _aliases in ((F1, ()), (MCC, ()), (Perplexity, ()), (MAE, ()), (RMSE, ()),
                         (NegativeLogLikelihood, ("nll_loss",)),
                         (PearsonCorrelation, ("pearsonr",)), (PCC, ()), (Torch, ()),
                         (Caffe, ())):
    _install(_klass, *_aliases)
