"""Checks shared by the Estimator and its event handlers: metric lists, metric references,
the metric suggested for a loss."""
from __future__ import annotations

from typing import Any, Optional

from ....core.base import DataError
from ....training.metric import Accuracy, CompositeEvalMetric, EvalMetric


def as_list_of(value: Any, kind: type, what: str) -> list:
    """``value`` (one ``kind``, a list of them or None) as a list; a DataError naming ``what``
    and the first wrong item otherwise."""
    if isinstance(value, kind):
        return [value]
    items = list(value or [])
    bad = [v for v in items if not isinstance(v, kind)]
    if bad:
        raise DataError(f"{what} must be a {kind.__name__} or a list of them, got {bad[0]!r}")
    return items


def check_metrics(metrics: Any) -> list:
    """``metrics`` as a flat list of EvalMetrics (a CompositeEvalMetric is opened up)."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for inner in metrics.metrics for m in check_metrics(inner)]
    return as_list_of(metrics, EvalMetric, "metrics")


def check_handler_metric_ref(handler: Any, known: list) -> None:
    """A DataError when ``handler`` refers (through its ``metrics``/``monitor``) to a metric
    that is none of the Estimator's: it would never be updated."""
    for attr in ("metrics", "monitor"):
        ref = getattr(handler, attr, None)
        for metric in ref if isinstance(ref, list) else [ref] if ref else []:
            if not any(metric is k for k in known):
                raise DataError(f"event handler {type(handler).__name__} refers to metric "
                                f"{metric.name!r} outside the estimator's training and "
                                f"validation metrics; use estimator.train_metrics and "
                                f"estimator.val_metrics instead")


def suggest_metric_for_loss(loss: Any) -> Optional[EvalMetric]:
    """Accuracy for a softmax cross-entropy loss, else nothing."""
    from ...loss import SoftmaxCrossEntropyLoss
    return Accuracy() if isinstance(loss, SoftmaxCrossEntropyLoss) else None


# The set-up the estimator's and its handlers' examples share: a one-unit Dense net, an
# estimator over it with quiet logging, and two batches of ones.
ESTIMATOR_SETUP = """
    >>> E = sg.gluon.contrib.estimator
    >>> net = sg.gluon.nn.Dense(1, in_units=1)
    >>> net.initialize()
    >>> est = E.Estimator(net, sg.gluon.loss.L2Loss(), trainer=sg.gluon.Trainer(
    ...     net.collect_params(), 'sgd', {'learning_rate': 0.1}))
    >>> est.logger.setLevel('WARNING')  # no progress lines
    >>> data = sg.gluon.data.DataLoader(sg.gluon.data.ArrayDataset(
    ...     sg.nd.ones((4, 1)), sg.nd.ones((4, 1))), batch_size=2)  # 2 batches"""


def example_after_setup(cls: type) -> type:
    """Class decorator: open ``cls``'s Examples section with :data:`ESTIMATOR_SETUP`, so each
    docstring's source holds only its own lines while help() shows a complete example."""
    head = "Examples\n    --------"
    assert cls.__doc__ and head in cls.__doc__, f"{cls.__name__}: no Examples section"
    cls.__doc__ = cls.__doc__.replace(head, head + ESTIMATOR_SETUP, 1)
    return cls
