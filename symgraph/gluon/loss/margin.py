"""``gluon.loss`` regression and margin losses (MXNet 1.x names, arguments, defaults):
Huber, hinge, squared hinge, logistic, triplet and cosine embedding. Each is a HybridBlock
composed of registered ops through ``F`` (gradients and GPU code come from those ops)."""
from __future__ import annotations

from typing import Any, Optional

from ...core.base import AttrError
from .basic import Loss, apply_weighting


class HuberLoss(Loss):
    """Smooth L1 per element: ``|d| - rho/2`` where ``|d| > rho``, else ``d^2 / (2 rho)``
    (``d = label - pred``), averaged per sample.

    Example: ``HuberLoss(rho=1)(pred, label)`` gives one loss per row of ``pred``.

    Examples
    --------
    >>> # 0.5 * 0.5 ** 2 inside rho = 1, 3 - 0.5 outside; mean of 0.125 and 2.5
    >>> sg.gluon.loss.HuberLoss()(sg.nd.array([[0.5, 3]]), sg.nd.array([[0, 0]]))
    [1.3125]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, rho: float = 1, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        dist = F.abs(F.reshape_like(label, pred) - pred)
        loss = F.where(dist > self._rho, dist - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(dist))
        return self._per_sample(F, loss, sample_weight)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` per element (labels -1 or 1), averaged per sample.

    Example: ``HingeLoss()(pred, sg.nd.array([1, -1]))``.

    Examples
    --------
    >>> # max(0, 1 - pred * label): 0.5 and 0, mean 0.25
    >>> sg.gluon.loss.HingeLoss()(sg.nd.array([[0.5, 2]]), sg.nd.array([[1, 1]]))
    [0.25]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        loss = F.relu(self._margin - pred * F.reshape_like(label, pred))
        return self._per_sample(F, loss, sample_weight)


class SquaredHingeLoss(HingeLoss):
    """``max(0, margin - pred * label)^2`` per element, averaged per sample.

    Example: ``SquaredHingeLoss(margin=2)(pred, label)``.

    Examples
    --------
    >>> # max(0, 1 - pred * label) ** 2: 0.25 and 0, mean 0.125
    >>> sg.gluon.loss.SquaredHingeLoss()(sg.nd.array([[0.5, 2]]), sg.nd.array([[1, 1]]))
    [0.125]
    <NDArray 1 @cpu(0)>
    """

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        loss = F.square(F.relu(self._margin - pred * F.reshape_like(label, pred)))
        return self._per_sample(F, loss, sample_weight)


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))`` per element for labels -1/1 (``label_format='signed'``)
    or 0/1 (``'binary'``), in the stable form ``relu(x) - x*z + log(1 + exp(-|x|))``.

    Example: ``LogisticLoss(label_format='binary')(pred, label)``.

    Examples
    --------
    >>> sg.gluon.loss.LogisticLoss()(sg.nd.array([[0]]), sg.nd.array([[1]]))  # log(1 + e^0)
    [0.6931]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0,
                 label_format: str = "signed", **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise AttrError(f"LogisticLoss: label_format must be 'signed' or 'binary', got "
                            f"{label_format!r}")
        self._label_format = label_format

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = F.reshape_like(label, pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        return self._per_sample(F, loss, sample_weight)


class TripletLoss(Loss):
    """``max(0, |pred - positive|^2 - |pred - negative|^2 + margin)`` per sample, the squared
    distances summed over every axis but ``batch_axis``. ``sample_weight`` (which MXNet's
    TripletLoss lacks) scales the result.

    Example: ``TripletLoss(margin=1)(anchor, positive, negative)``.

    Examples
    --------
    >>> # max(0, |a - p|^2 - |a - n|^2 + margin) = 2 - 1 + 1
    >>> a, p, n = sg.nd.array([[0, 0]]), sg.nd.array([[1, 1]]), sg.nd.array([[1, 0]])
    >>> sg.gluon.loss.TripletLoss()(a, p, n)
    [2.]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, positive: Any, negative: Any,
                       sample_weight: Any = None) -> Any:
        positive = F.reshape_like(positive, pred)
        negative = F.reshape_like(negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        return apply_weighting(F, F.relu(loss + self._margin), self._weight, sample_weight)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(input1, input2)`` for label 1, ``max(0, cos - margin)`` for label -1, with
    the cosine over the last axis; one loss per sample, shape ``(N, 1)`` as in MXNet.

    Example: ``CosineEmbeddingLoss()(a, b, sg.nd.array([1, -1]))``.

    Examples
    --------
    >>> # label 1: 1 - cos(45 degrees)
    >>> sg.gluon.loss.CosineEmbeddingLoss()(sg.nd.array([[1, 0]]), sg.nd.array([[1, 1]]),
    ...                                     sg.nd.array([1]))
    [[0.2929]]
    <NDArray 1x1 @cpu(0)>
    """

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0,
                 margin: float = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, input1: Any, input2: Any, label: Any,
                       sample_weight: Any = None) -> Any:
        input1 = F.reshape_like(input1, input2)
        label = F.reshape(label, shape=(-1, 1))
        norms = F.reshape(F.norm(input1, axis=-1) * F.norm(input2, axis=-1), shape=(-1, 1))
        dots = F.reshape(F.sum(input1 * input2, axis=-1), shape=(-1, 1))
        # (the floor keeps a zero vector's cosine finite, as MXNet's 1e-12)
        cos = dots / F.maximum(norms, 1e-12)
        loss = (1 - cos) * (label == 1) + F.relu((label == -1) * (cos - self._margin))
        return apply_weighting(F, loss, self._weight, sample_weight)


__all__ = ["HuberLoss", "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss",
           "CosineEmbeddingLoss"]
