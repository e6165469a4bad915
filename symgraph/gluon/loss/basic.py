"""The ``Loss`` base class, its weighting, and MXNet's classic losses (softmax cross-entropy,
L1, L2, sigmoid binary cross-entropy)."""
from __future__ import annotations

from typing import Any, Optional

from ...core.base import AttrError
from ..block import HybridBlock


def apply_weighting(F: Any, loss: Any, weight: Optional[float], sample_weight: Any) -> Any:
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, (int, float)):
            raise AttrError(f"loss weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


class Loss(HybridBlock):
    """Base class: ``weight`` scales the loss, ``batch_axis`` is kept by the final mean.

    Examples
    --------
    >>> class MeanAbs(sg.gluon.loss.Loss):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(weight=None, batch_axis=0, **kwargs)
    ...     def hybrid_forward(self, F, pred, label):
    ...         return F.mean(F.abs(pred - label), axis=self._batch_axis, exclude=True)
    >>> MeanAbs()(sg.nd.array([[1, -3]]), sg.nd.array([[0, 0]]))
    [2.]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, weight: Optional[float], batch_axis: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._weight, self._batch_axis = weight, batch_axis

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _per_sample(self, F: Any, loss: Any, sample_weight: Any,
                    weight: Optional[float] = None) -> Any:
        loss = apply_weighting(F, loss, self._weight if weight is None else weight, sample_weight)
        return self._op(F, F.mean, (loss,), {"axis": self._batch_axis, "exclude": True}, None)

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class SoftmaxCrossEntropyLoss(Loss):
    """``-log softmax(pred)[label]`` per sample (``sparse_label``), or
    ``-sum(label * log softmax(pred))`` with dense labels; ``from_logits``: ``pred`` already
    holds log-probabilities.

    Examples
    --------
    >>> pred = sg.nd.array([[0, np.log(3)]])  # softmax: [0.25, 0.75]
    >>> sg.gluon.loss.SoftmaxCrossEntropyLoss()(pred, sg.nd.array([1]))  # -log(0.75)
    [0.2877]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, axis: int = -1, sparse_label: bool = True, from_logits: bool = False,
                 weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._axis, self._sparse_label, self._from_logits = axis, sparse_label, from_logits

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        if not self._from_logits:
            pred = self._op(F, F.log_softmax, (pred,), {"axis": self._axis}, None)
        if self._sparse_label:
            loss = self._op(F, F.negative, (self._op(F, F.pick, (pred, label), {
                "axis": self._axis, "keepdims": True}, None),), {}, None)
        else:
            label = F.reshape_like(label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        return self._per_sample(F, loss, sample_weight)
    # (sparse labels, no weights: its op calls are kept after the first, gluon/one_op.py)
    _FIXED_OPS = hybrid_forward


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class L2Loss(Loss):
    """``weight/2 * (label - pred)^2`` per element, averaged per sample.

    Examples
    --------
    >>> sg.gluon.loss.L2Loss()(sg.nd.array([[1, 2]]), sg.nd.array([[0, 0]]))  # (1 + 4) / 2 / 2
    [1.25]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, weight: float = 1.0, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = F.reshape_like(label, pred)
        loss = F.square(label - pred)
        return self._per_sample(F, loss, sample_weight, self._weight / 2)


class L1Loss(Loss):
    """``weight * |label - pred|`` per element, averaged per sample.

    Examples
    --------
    >>> sg.gluon.loss.L1Loss()(sg.nd.array([[1, -3]]), sg.nd.array([[0, 0]]))  # (1 + 3) / 2
    [2.]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = F.reshape_like(label, pred)
        return self._per_sample(F, F.abs(label - pred), sample_weight)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of ``sigmoid(pred)`` (or of ``pred`` itself with
    ``from_sigmoid=True``) against labels in [0, 1]; the logits form is the stable
    ``relu(x) - x*z + log(1 + exp(-|x|))``. ``pos_weight`` (broadcast to the predictions)
    weights the positive term, as MXNet 1.9.1's.

    Examples
    --------
    >>> sg.gluon.loss.SigmoidBCELoss()(sg.nd.array([[0]]), sg.nd.array([[1]]))  # -log(1/2)
    [0.6931]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, from_sigmoid: bool = False, weight: Optional[float] = None,
                 batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None,
                       pos_weight: Any = None) -> Any:
        label = F.reshape_like(label, pred)
        if not self._from_sigmoid and pos_weight is None:
            loss = F.relu(pred) - pred * label + \
                F.Activation(-F.abs(pred), act_type="softrelu")
        elif not self._from_sigmoid:
            # -pw z log s(x) - (1-z) log(1-s(x)) with -log s(x) = softplus(-x), written
            # stably: (1-z) x + (1 + (pw-1) z) (relu(-x) + log(1 + exp(-|x|)))
            scale = 1.0 + F.broadcast_mul(pos_weight - 1.0, label)
            loss = pred - pred * label + scale * (
                F.relu(-pred) + F.Activation(-F.abs(pred), act_type="softrelu"))
        else:
            eps = 1e-12
            pos = F.log(pred + eps) * label
            if pos_weight is not None:  # weights the positive term, broadcast over the batch
                pos = F.broadcast_mul(pos, pos_weight)
            loss = -(pos + F.log(1.0 - pred + eps) * (1.0 - label))
        return self._per_sample(F, loss, sample_weight)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss
