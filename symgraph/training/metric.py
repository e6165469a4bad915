"""``sg.metric``: evaluation metrics with MXNet 1.x names (``create('acc')``...)."""
from __future__ import annotations

import json
from typing import Any, Callable, Optional, Sequence

import numpy

from ..core.base import AttrError, DataError

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "CrossEntropy", "MSE",
           "Loss", "CustomMetric", "create", "register", "check_label_shapes"]
# ``np`` (MXNet's metric.np) is public as ``sg.metric.np`` but kept out of star imports, where
# it would shadow the usual numpy alias.


def host_array(x: Any) -> numpy.ndarray:
    return x.asnumpy() if hasattr(x, "asnumpy") else numpy.asarray(x)


def check_label_shapes(labels: Sequence, preds: Sequence, metric: str) -> None:
    if len(labels) != len(preds):
        raise DataError(f"{metric}: {len(labels)} label arrays for {len(preds)} outputs")


class EvalMetric:
    """Base class: ``update(labels, preds)``, ``get() -> (name, value)``, ``reset()``.

    As MXNet 1.x, a metric keeps local statistics (``sum_metric``/``num_inst``, cleared by
    :meth:`reset_local`, e.g. every logging interval) and global ones (``global_*``, cleared
    only by :meth:`reset`); ``get_global`` reads the latter.
    """

    def __init__(self, name: str, output_names: Optional[list] = None,
                 label_names: Optional[list] = None, **kwargs: Any) -> None:
        self.name = str(name)
        self.output_names, self.label_names = output_names, label_names
        self._has_global_stats = kwargs.pop("has_global_stats", True)
        self._kwargs = kwargs  # the subclass's own arguments, for get_config
        self.reset()

    def reset(self) -> None:
        """Clear local and global statistics."""
        self.reset_local()
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value: float, count: float) -> None:
        """Add one batch's ``(sum, count)`` to local and global statistics."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def update(self, labels: Sequence, preds: Sequence) -> None:
        check_label_shapes(labels, preds, self.name)
        for label, pred in zip(labels, preds):
            label, pred = host_array(label), host_array(pred)
            self._check_batch(label, pred)
            self._add(*self._batch(label, pred))

    def _check_batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> None:
        if len(label) != len(pred):
            raise DataError(f"{self.name}: label batch {label.shape} does not match "
                            f"output batch {pred.shape}")

    def update_dict(self, label: dict, pred: dict) -> None:
        """:meth:`update` from name -> array dicts, picking ``output_names``/``label_names``
        when set (all values otherwise)."""
        try:
            preds = [pred[n] for n in self.output_names] if self.output_names is not None \
                else list(pred.values())
            labels = [label[n] for n in self.label_names] if self.label_names is not None \
                else list(label.values())
        except KeyError as exc:
            raise DataError(f"{self.name}: update_dict has no array named {exc}") from None
        self.update(labels, preds)

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
        raise NotImplementedError

    def get(self) -> tuple[Any, Any]:
        value = self.sum_metric / self.num_inst if self.num_inst else float("nan")
        return self.name, value

    def get_global(self) -> tuple[Any, Any]:
        """``(name, value)`` over everything since the last :meth:`reset`."""
        if not self._has_global_stats:
            return self.get()
        n = self.global_num_inst
        return self.name, self.global_sum_metric / n if n else float("nan")

    def get_name_value(self) -> list[tuple[str, float]]:
        return _pairs(*self.get())

    def get_global_name_value(self) -> list[tuple[str, float]]:
        return _pairs(*self.get_global())

    def get_config(self) -> dict:
        """The arguments that recreate this metric with :func:`create`."""
        return {**self._kwargs, "metric": type(self).__name__, "name": self.name,
                "output_names": self.output_names, "label_names": self.label_names}

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"


def _pairs(name: Any, value: Any) -> list[tuple[str, float]]:
    names = name if isinstance(name, list) else [name]
    return list(zip(names, value if isinstance(value, list) else [value]))


class Accuracy(EvalMetric):
    """Fraction of samples whose arg-max prediction (along ``axis``) equals the label."""

    def __init__(self, axis: int = 1, name: str = "accuracy", **kwargs: Any) -> None:
        self.axis = axis
        super().__init__(name, axis=axis, **kwargs)

    def _check_batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> None:
        """Sizes are compared after the arg-max, flattened (as MXNet: a custom iterator may
        give labels as a 2-d array holding one batch's labels in any layout)."""

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
        if pred.shape != label.shape:
            pred = pred.argmax(axis=self.axis)
        if pred.size != label.size:
            raise DataError(f"{self.name}: {label.size} labels for {pred.size} predictions "
                            f"(label shape {label.shape}, predicted classes {pred.shape})")
        pred, label = pred.astype(numpy.int64).ravel(), label.astype(numpy.int64).ravel()
        return float((pred == label).sum()), len(label)


class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest predictions."""

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy", **kwargs: Any) -> None:
        if top_k < 1:
            raise AttrError(f"TopKAccuracy: top_k must be at least 1, got {top_k}")
        self.top_k = top_k
        super().__init__(f"{name}_{top_k}", top_k=top_k, **kwargs)

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
        k = min(self.top_k, pred.shape[1])
        top = numpy.argpartition(pred, -k, axis=1)[:, -k:]
        hit = (top == label.astype(numpy.int64).reshape(-1, 1)).any(axis=1)
        return float(hit.sum()), len(label)


class CrossEntropy(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples (predictions are probabilities)."""

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy", **kwargs: Any) -> None:
        self.eps = eps
        super().__init__(name, eps=eps, **kwargs)

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
        label = label.astype(numpy.int64).ravel()
        prob = pred[numpy.arange(len(label)), label]
        return float(-numpy.log(prob + self.eps).sum()), len(label)


class MSE(EvalMetric):
    """Mean squared error, averaged per batch then over batches (as MXNet 1.x)."""

    def __init__(self, name: str = "mse", **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

    def _batch(self, label: numpy.ndarray, pred: numpy.ndarray) -> tuple[float, int]:
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
        for pred in preds if isinstance(preds, (list, tuple)) else [preds]:
            p = host_array(pred)
            self._add(float(p.sum()), p.size)


class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on numpy arrays, returning a value (averaged over
    batches) or a ``(sum, count)`` pair. ``allow_extra_outputs`` lets ``preds`` be longer
    than ``labels`` (the pairs are zipped)."""

    def __init__(self, feval: Callable, name: Optional[str] = None,
                 allow_extra_outputs: bool = False, output_names: Optional[list] = None,
                 label_names: Optional[list] = None) -> None:
        if name is None:
            name = getattr(feval, "__name__", "custom")
            name = f"custom({name})" if "<" in name else name
        self._feval, self._allow_extra_outputs = feval, allow_extra_outputs
        super().__init__(name, output_names, label_names, feval=feval,
                         allow_extra_outputs=allow_extra_outputs)

    def update(self, labels: Sequence, preds: Sequence) -> None:
        if not self._allow_extra_outputs:
            check_label_shapes(labels, preds, self.name)
        for label, pred in zip(labels, preds):
            got = self._feval(host_array(label), host_array(pred))
            self._add(*(got if isinstance(got, tuple) else (got, 1)))

    def get_config(self) -> dict:
        raise AttrError(f"CustomMetric {self.name!r} cannot be serialized (it holds a function)")


def np(numpy_feval: Callable, name: Optional[str] = None,
       allow_extra_outputs: bool = False) -> CustomMetric:
    """MXNet's ``metric.np``: a :class:`CustomMetric` from a function of numpy arrays.

    Example::

        mae = sg.metric.np(lambda label, pred: float(abs(label - pred).mean()), name="mae")
    """
    return CustomMetric(numpy_feval, name, allow_extra_outputs)


class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get`` returns lists of names and values."""

    def __init__(self, metrics: Optional[list] = None, name: str = "composite",
                 output_names: Optional[list] = None, label_names: Optional[list] = None) -> None:
        self.metrics = [create(m) for m in metrics or []]
        super().__init__(name, output_names, label_names)

    def add(self, metric: Any) -> None:
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        if not -len(self.metrics) <= index < len(self.metrics):
            raise AttrError(f"{self.name}: metric index {index} out of range "
                            f"0..{len(self.metrics) - 1}")
        return self.metrics[index]

    def reset(self) -> None:
        for m in getattr(self, "metrics", []):
            m.reset()

    def reset_local(self) -> None:
        for m in getattr(self, "metrics", []):
            m.reset_local()

    def update(self, labels: Sequence, preds: Sequence) -> None:
        for m in self.metrics:
            m.update(labels, preds)

    def update_dict(self, labels: dict, preds: dict) -> None:
        if self.label_names is not None:
            labels = {k: v for k, v in labels.items() if k in self.label_names}
        if self.output_names is not None:
            preds = {k: v for k, v in preds.items() if k in self.output_names}
        for m in self.metrics:
            m.update_dict(labels, preds)

    def get(self) -> tuple:
        pairs = [p for m in self.metrics for p in m.get_name_value()]
        return [n for n, _ in pairs], [v for _, v in pairs]

    def get_global(self) -> tuple:
        pairs = [p for m in self.metrics for p in m.get_global_name_value()]
        return [n for n, _ in pairs], [v for _, v in pairs]

    def get_config(self) -> dict:
        return {**super().get_config(), "metrics": [m.get_config() for m in self.metrics]}


_REGISTRY: dict[str, type] = {
    "acc": Accuracy, "accuracy": Accuracy, "top_k_accuracy": TopKAccuracy,
    "top_k_acc": TopKAccuracy, "ce": CrossEntropy, "cross-entropy": CrossEntropy,
    "mse": MSE, "loss": Loss, "composite": CompositeEvalMetric,
    "compositeevalmetric": CompositeEvalMetric, "crossentropy": CrossEntropy,
    "topkaccuracy": TopKAccuracy, "custommetric": CustomMetric,
}


def register(klass: type, *aliases: str) -> type:
    """Make ``klass`` creatable by its lower-cased class name and ``aliases``."""
    for key in (klass.__name__.lower(), *aliases):
        _REGISTRY[key] = klass
    return klass


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name (``'acc'``, ``'f1'``...), an instance, a function
    ``(label, pred)`` or a list of these (a :class:`CompositeEvalMetric`)."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, (list, tuple)):
        return CompositeEvalMetric([create(m, *args, **kwargs) for m in metric])
    if isinstance(metric, dict) or str(metric).lstrip().startswith("{"):
        return _from_config(metric, args, kwargs)
    key = str(metric).lower()
    if key not in _REGISTRY:
        raise AttrError(f"unknown metric {metric!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[key](*args, **kwargs)


def _from_config(config: Any, args: tuple, kwargs: dict) -> EvalMetric:
    """A metric from :meth:`EvalMetric.get_config`'s dict or its JSON (MXNet's round trip):
    ``metric`` names the class, the other keys are its arguments."""
    if args or kwargs:
        raise AttrError(f"metric config {config!r}: no further arguments may be given, got "
                        f"{list(args) + sorted(kwargs)}")
    if not isinstance(config, dict):
        try:
            config = json.loads(config)
        except ValueError as exc:
            raise AttrError(f"metric config {config!r}: not JSON ({exc})") from None
    if not isinstance(config, dict) or "metric" not in config:
        raise AttrError(f"metric config {config!r}: expected a dict with a 'metric' key")
    config = dict(config)
    return create(config.pop("metric"), **config)
