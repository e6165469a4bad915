"""``sg.metric``: evaluation metrics with MXNet 1.x names (``create('acc')``...)."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from .base import AttrError, DataError

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "CrossEntropy", "MSE",
           "Loss", "CustomMetric", "create", "check_label_shapes"]


def _host(x: Any) -> np.ndarray:
    return x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x)


def check_label_shapes(labels: Sequence, preds: Sequence, metric: str) -> None:
    if len(labels) != len(preds):
        raise DataError(f"{metric}: {len(labels)} label arrays for {len(preds)} outputs")


class EvalMetric:
    """Base class: ``update(labels, preds)``, ``get() -> (name, value)``, ``reset()``."""

    def __init__(self, name: str, output_names: Optional[list] = None,
                 label_names: Optional[list] = None) -> None:
        self.name = name
        self.output_names, self.label_names = output_names, label_names
        self.reset()

    def reset(self) -> None:
        self.num_inst = 0
        self.sum_metric = 0.0

    def update(self, labels: Sequence, preds: Sequence) -> None:
        check_label_shapes(labels, preds, self.name)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            if len(label) != len(pred):
                raise DataError(f"{self.name}: label batch {label.shape} does not match "
                                f"output batch {pred.shape}")
            s, n = self._batch(label, pred)
            self.sum_metric += s
            self.num_inst += n

    def _batch(self, label: np.ndarray, pred: np.ndarray) -> tuple[float, int]:
        raise NotImplementedError

    def get(self) -> tuple[str, float]:
        value = self.sum_metric / self.num_inst if self.num_inst else float("nan")
        return self.name, value

    def get_name_value(self) -> list[tuple[str, float]]:
        name, value = self.get()
        return [(name, value)] if isinstance(name, str) else list(zip(name, value))

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"


class Accuracy(EvalMetric):
    """Fraction of samples whose arg-max prediction (along ``axis``) equals the label."""

    def __init__(self, axis: int = 1, name: str = "accuracy", **kwargs: Any) -> None:
        self.axis = axis
        super().__init__(name, **kwargs)

    def _batch(self, label: np.ndarray, pred: np.ndarray) -> tuple[float, int]:
        if pred.shape != label.shape:
            pred = pred.argmax(axis=self.axis)
        pred, label = pred.astype(np.int64).ravel(), label.astype(np.int64).ravel()
        return float((pred == label).sum()), len(label)


class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest predictions."""

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy", **kwargs: Any) -> None:
        if top_k < 1:
            raise AttrError(f"TopKAccuracy: top_k must be at least 1, got {top_k}")
        self.top_k = top_k
        super().__init__(f"{name}_{top_k}", **kwargs)

    def _batch(self, label: np.ndarray, pred: np.ndarray) -> tuple[float, int]:
        k = min(self.top_k, pred.shape[1])
        top = np.argpartition(pred, -k, axis=1)[:, -k:]
        hit = (top == label.astype(np.int64).reshape(-1, 1)).any(axis=1)
        return float(hit.sum()), len(label)


class CrossEntropy(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples (predictions are probabilities)."""

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy", **kwargs: Any) -> None:
        self.eps = eps
        super().__init__(name, **kwargs)

    def _batch(self, label: np.ndarray, pred: np.ndarray) -> tuple[float, int]:
        label = label.astype(np.int64).ravel()
        prob = pred[np.arange(len(label)), label]
        return float(-np.log(prob + self.eps).sum()), len(label)


class MSE(EvalMetric):
    """Mean squared error, averaged per batch then over batches (as MXNet 1.x)."""

    def __init__(self, name: str = "mse", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def _batch(self, label: np.ndarray, pred: np.ndarray) -> tuple[float, int]:
        if label.ndim == 1:
            label = label.reshape(label.shape[0], 1)
        if pred.ndim == 1:
            pred = pred.reshape(pred.shape[0], 1)
        return float(((label - pred) ** 2.0).mean()), 1


class Loss(EvalMetric):
    """Mean of the output values (for ``MakeLoss`` outputs); labels are ignored."""

    def __init__(self, name: str = "loss", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def update(self, labels: Sequence, preds: Sequence) -> None:
        for pred in preds:
            p = _host(pred)
            self.sum_metric += float(p.sum())
            self.num_inst += p.size


class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred) -> value`` (numpy arrays), averaged over batches."""

    def __init__(self, feval: Callable, name: Optional[str] = None, **kwargs: Any) -> None:
        self._feval = feval
        super().__init__(name or getattr(feval, "__name__", "custom"), **kwargs)

    def _batch(self, label: np.ndarray, pred: np.ndarray) -> tuple[float, int]:
        return float(self._feval(label, pred)), 1


class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get`` returns lists of names and values."""

    def __init__(self, metrics: Optional[list] = None, name: str = "composite") -> None:
        self.metrics = [create(m) for m in metrics or []]
        super().__init__(name)

    def add(self, metric: Any) -> None:
        self.metrics.append(create(metric))

    def reset(self) -> None:
        for m in getattr(self, "metrics", []):
            m.reset()

    def update(self, labels: Sequence, preds: Sequence) -> None:
        for m in self.metrics:
            m.update(labels, preds)

    def get(self) -> tuple:
        pairs = [p for m in self.metrics for p in m.get_name_value()]
        return [n for n, _ in pairs], [v for _, v in pairs]


_REGISTRY: dict[str, type] = {
    "acc": Accuracy, "accuracy": Accuracy, "top_k_accuracy": TopKAccuracy,
    "top_k_acc": TopKAccuracy, "ce": CrossEntropy, "cross-entropy": CrossEntropy,
    "mse": MSE, "loss": Loss, "composite": CompositeEvalMetric,
}


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name, an instance, a function ``(label, pred)`` or a list of these."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, (list, tuple)):
        return CompositeEvalMetric([create(m) for m in metric])
    key = str(metric).lower()
    if key not in _REGISTRY:
        raise AttrError(f"unknown metric {metric!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[key](*args, **kwargs)
