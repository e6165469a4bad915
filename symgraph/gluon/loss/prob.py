"""``gluon.loss`` probabilistic and sequence losses (MXNet 1.x names, arguments, defaults):
KL divergence, Poisson negative log-likelihood, smoothed deep metric learning (SDML) and
CTC. Each is a HybridBlock composed of registered ops through ``F``."""
from __future__ import annotations

import math
from typing import Any, Optional

from ...core.base import AttrError
from .basic import Loss, apply_weighting


class KLDivLoss(Loss):
    """``label * (log(label) - pred)`` summed per sample, ``pred`` holding log-probabilities
    (``from_logits=True``) or logits that ``log_softmax`` over ``axis`` turns into them.

    Example: ``KLDivLoss(from_logits=False)(logits, probabilities)``.

    Examples
    --------
    >>> # 0.5 (log 0.5 - log 0.25) + 0.5 (log 0.5 - log 0.75), summed per sample
    >>> sg.gluon.loss.KLDivLoss()(sg.nd.log(sg.nd.array([[0.25, 0.75]])),
    ...                           sg.nd.array([[0.5, 0.5]]))
    [0.1438]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, from_logits: bool = True, axis: int = -1,
                 weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits, self._axis = from_logits, axis

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood ``exp(pred) - target * pred`` (``from_logits``: pred
    is the log of the rate) or ``pred - target * log(pred + epsilon)``, plus Stirling's
    approximation of ``log(target!)`` where ``target > 1`` (``compute_full``); MXNet's mean
    over every element, shape ``(1,)``.

    Example: ``PoissonNLLLoss()(log_rate, counts)``.

    Examples
    --------
    >>> # exp(pred) - label * pred: 1 and e, mean (1 + e) / 2
    >>> sg.gluon.loss.PoissonNLLLoss()(sg.nd.array([[0, 1]]), sg.nd.array([[1, 0]]))
    [1.8591]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, weight: Optional[float] = None, from_logits: bool = True,
                 batch_axis: int = 0, compute_full: bool = False, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits, self._compute_full = from_logits, compute_full

    def hybrid_forward(self, F: Any, pred: Any, target: Any, sample_weight: Any = None,
                       epsilon: float = 1e-08) -> Any:
        target = F.reshape_like(target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            # where, not a product with the mask: 0 * log(0) would make zero counts NaN
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * math.pi * target)
            loss = loss + F.where(target > 1, stirling, F.zeros_like(stirling))
        loss = apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class SDMLLoss(Loss):
    """Smoothed deep metric learning: for a batch of pairs ``(x1[i], x2[i])`` the KL
    divergence between ``softmax(-|x1[i] - x2[j]|^2 over j)`` and labels putting
    ``1 - smoothing_parameter`` on ``j = i`` and the rest evenly on the other rows; one loss
    per row ``(N,)``. Inputs are ``(N, dim)``.

    Example: ``SDMLLoss()(embeddings_a, embeddings_b)``.

    Examples
    --------
    >>> x1 = sg.nd.array([[1, 0], [0, 1]])
    >>> loss = sg.gluon.loss.SDMLLoss()(x1, x1)  # row i of x1 pairs with row i of x2
    >>> loss.shape
    (2,)
    """

    def __init__(self, smoothing_parameter: float = 0.3, weight: Optional[float] = 1.,
                 batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F: Any, x1: Any, x2: Any, sample_weight: Any = None) -> Any:
        # The labels' identity matrix needs N, which a traced symbol does not know, so the KL
        # divergence is written with the diagonal alone: sum_j label_ij log label_ij is
        # (1-s) log(1-s) + s log(s/(N-1)), and sum_j label_ij log_prob_ij is
        # (1-s) log_prob_ii + s/(N-1) (sum_j log_prob_ij - log_prob_ii).
        diff = F.broadcast_sub(F.expand_dims(x1, axis=1), F.expand_dims(x2, axis=0))
        neg = -F.sum(F.square(diff), axis=2)  # (N, N): minus the squared distances
        log_prob = F.log_softmax(neg, axis=1)
        lse = F.slice_axis(neg - log_prob, axis=1, begin=0, end=1)  # log-sum-exp of each row
        diag = -F.sum(F.square(x1 - x2), axis=1, keepdims=True) - lse  # log_prob_ii, (N, 1)
        s = self.smoothing_parameter
        off = s / (F.sum(F.ones_like(neg), axis=1, keepdims=True) - 1)  # s/(N-1), (N, 1)
        cross = (1 - s) * diag + off * (F.sum(log_prob, axis=1, keepdims=True) - diag)
        entropy = (1 - s) * math.log(1 - s + 1e-12) + s * F.log(off + 1e-12)
        loss = F.reshape(entropy - cross, shape=(-1,))
        return apply_weighting(F, loss, self._weight, sample_weight)


class CTCLoss(Loss):
    """Connectionist temporal classification loss per sequence (the ``CTCLoss`` op with
    ``blank_label='last'``: channel C-1 is the blank and -1 pads labels). ``layout`` of
    ``pred``: 'NTC' or 'TNC'; ``label_layout``: 'NT' or 'TN'; optional ``pred_lengths`` and
    ``label_lengths`` (N,) give each sequence's length.

    Example: ``CTCLoss()(pred_ntc, labels_nt)`` gives ``(N,)`` negative log-likelihoods.

    Examples
    --------
    >>> # one step, classes [a, blank] equally likely: -log(1/2) for the label 'a'
    >>> sg.gluon.loss.CTCLoss()(sg.nd.zeros((1, 1, 2)), sg.nd.array([[0]]))
    [0.6931]
    <NDArray 1 @cpu(0)>
    """

    def __init__(self, layout: str = "NTC", label_layout: str = "NT",
                 weight: Optional[float] = None, **kwargs: Any) -> None:
        if layout not in ("NTC", "TNC"):
            raise AttrError(f"CTCLoss: layout must be 'NTC' or 'TNC', got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise AttrError(f"CTCLoss: label_layout must be 'NT' or 'TN', got {label_layout!r}")
        self._layout, self._label_layout = layout, label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, pred_lengths: Any = None,
                       label_lengths: Any = None, sample_weight: Any = None) -> Any:
        if self._layout == "NTC":
            pred = F.swapaxes(pred, dim1=0, dim2=1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, dim1=0, dim2=1)
        lengths = [x for x in (pred_lengths, label_lengths) if x is not None]
        loss = F.CTCLoss(pred, label, *lengths, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return apply_weighting(F, loss, self._weight, sample_weight)


__all__ = ["KLDivLoss", "PoissonNLLLoss", "SDMLLoss", "CTCLoss"]
