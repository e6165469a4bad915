"""``SyncBatchNorm``: BatchNorm whose statistics are reduced over the devices of a
data-parallel step (MXNet's ``gluon.contrib.nn.SyncBatchNorm``, also ``gluon.nn``'s). The
reduction is the op's: ``compiler/ops/sync_batch_norm.py`` and ``passes/merge_replicas.py``.
"""
from __future__ import annotations

from typing import Any, Optional

from ...core.base import AttrError
from .basic_layers import BatchNorm


class SyncBatchNorm(BatchNorm):
    """BatchNorm (channel axis 1) whose batch statistics are those of the whole batch of a
    data-parallel step over ``num_devices`` devices (the ``contrib.SyncBatchNorm`` op, keyed
    by the layer's prefix): mean, variance, moving statistics and gradients equal one
    BatchNorm's over the devices' batches concatenated. The replicas share them when their
    losses are differentiated together (``autograd.backward(losses)``: one program holds
    every device's forward); a program holding one replica warns and uses its own batch.

    Example of a data-parallel step::

        xs = gluon.utils.split_and_load(x, [sg.cpu(0), sg.cpu(1)])
        with autograd.record():
            losses = [loss_fn(net(xk), yk) for xk, yk in zip(xs, ys)]
        autograd.backward(losses)
        trainer.step(batch_size)

    Examples
    --------
    >>> bn = sg.gluon.contrib.nn.SyncBatchNorm(in_channels=2, num_devices=1)
    >>> bn.initialize()
    >>> with sg.autograd.record():  # training: each channel by its batch mean and deviation
    ...     y = bn(sg.nd.array([[1, 10], [3, 30]]))
    >>> y
    [[-1. -1.]
     [ 1.  1.]]
    <NDArray 2x2 @cpu(0)>
    """

    def __init__(self, in_channels: int = 0, num_devices: Optional[int] = None,
                 momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 running_mean_initializer: Any = "zeros",
                 running_variance_initializer: Any = "ones", **kwargs: Any) -> None:
        super().__init__(1, momentum, epsilon, center, scale, use_global_stats,
                         beta_initializer, gamma_initializer, running_mean_initializer,
                         running_variance_initializer, in_channels, **kwargs)
        if num_devices is not None and num_devices < 1:
            raise AttrError(f"SyncBatchNorm: num_devices must be >= 1, got {num_devices}")
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": num_devices or 1,
                        "key": self.prefix}

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any,
                       running_var: Any) -> Any:
        return self._op(F, F.contrib.SyncBatchNorm,
                        (x, gamma, beta, running_mean, running_var), self._kwargs)
