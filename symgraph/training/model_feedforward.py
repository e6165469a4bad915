"""MXNet's legacy ``mx.model.FeedForward`` over :class:`~symgraph.training.module.Module`: ``fit``,
``predict``, ``score``, ``save``/``load`` and ``create`` with MXNet's arguments. Numpy inputs
become an ``NDArrayIter`` of ``numpy_batch_size``; extra keywords go to the optimizer.

Examples
--------
>>> x = sg.sym.Variable('data')
>>> net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(x, num_hidden=2, name='fc'), name='softmax')
>>> X = np.random.rand(20, 3).astype('float32'); y = (X[:, 0] > 0.5).astype('float32')
>>> model = sg.model.FeedForward(net, num_epoch=2, learning_rate=0.1, numpy_batch_size=10)
>>> model.fit(X, y)
>>> model.predict(X).shape
(20, 2)
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import initializer as _init
from ..core.base import DataError
from ..core.context import cpu

__all__ = ["FeedForward"]


class FeedForward:
    """A symbol with its parameters, trained and run as one model (MXNet 0.x's API)."""

    def __init__(self, symbol: Any, ctx: Any = None, num_epoch: Optional[int] = None,
                 epoch_size: Optional[int] = None, optimizer: Any = "sgd",
                 initializer: Any = _init.Uniform(0.01), numpy_batch_size: int = 128,
                 arg_params: Optional[dict] = None, aux_params: Optional[dict] = None,
                 allow_extra_params: bool = False, begin_epoch: int = 0, **kwargs: Any) -> None:
        self.symbol, self.ctx = symbol, ctx if ctx is not None else cpu()
        self.num_epoch, self.epoch_size = num_epoch, epoch_size
        self.optimizer, self.initializer = optimizer, initializer
        self.numpy_batch_size, self.begin_epoch = numpy_batch_size, begin_epoch
        self.arg_params, self.aux_params = arg_params, aux_params
        self.allow_extra_params = allow_extra_params
        self.kwargs = dict(kwargs)  # optimizer parameters (learning_rate, momentum...)
        self._pred_module: Any = None

    def _iter(self, X: Any, y: Any = None, shuffle: bool = False) -> Any:
        from .io import DataIter, NDArrayIter
        if isinstance(X, DataIter):
            return X
        if y is None and shuffle:
            raise DataError("FeedForward.fit: numpy data needs labels y")
        return NDArrayIter(X, y, batch_size=min(self.numpy_batch_size, len(X)),
                           shuffle=shuffle, last_batch_handle="pad" if y is None else
                           "roll_over" if shuffle else "pad")

    def _module(self, data: Any, for_training: bool) -> Any:
        from .module import Module
        labels = [d.name for d in data.provide_label or []] if for_training else []
        args = set(self.symbol.list_arguments())
        labels = labels or [a for a in args if a.endswith("label")]
        mod = Module(self.symbol, data_names=[d.name for d in data.provide_data],
                     label_names=labels, context=self.ctx)
        return mod

    def fit(self, X: Any, y: Any = None, eval_data: Any = None, eval_metric: Any = "acc",
            epoch_end_callback: Any = None, batch_end_callback: Any = None,
            kvstore: Any = "local", logger: Any = None, work_load_list: Any = None,
            monitor: Any = None, eval_end_callback: Any = None,
            eval_batch_end_callback: Any = None) -> None:
        """Train for ``num_epoch`` epochs; the parameters are kept on the model."""
        if self.num_epoch is None:
            raise DataError("FeedForward.fit: num_epoch is not set")
        data = self._iter(X, y, shuffle=True)
        if isinstance(eval_data, tuple):
            eval_data = self._iter(*eval_data)
        mod = self._module(data, True)
        mod.fit(data, eval_data=eval_data, eval_metric=eval_metric,
                epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                kvstore=kvstore, optimizer=self.optimizer, optimizer_params=self.kwargs,
                eval_end_callback=eval_end_callback,
                eval_batch_end_callback=eval_batch_end_callback, initializer=self.initializer,
                arg_params=self.arg_params, aux_params=self.aux_params,
                allow_missing=True, begin_epoch=self.begin_epoch, num_epoch=self.num_epoch,
                monitor=monitor)
        self.arg_params, self.aux_params = mod.get_params()
        self._pred_module = None

    def _bound(self, data: Any) -> Any:
        if self.arg_params is None:
            raise DataError("FeedForward: no parameters (fit or load the model first)")
        mod = self._module(data, False)
        mod.bind(data_shapes=data.provide_data, label_shapes=data.provide_label,
                 for_training=False)
        mod.set_params(self.arg_params, self.aux_params or {},
                       allow_extra=self.allow_extra_params)
        return mod

    def predict(self, X: Any, num_batch: Optional[int] = None, return_data: bool = False,
                reset: bool = True) -> Any:
        """Outputs over ``X`` (numpy or an iterator), padding removed; with ``return_data``
        also ``(data, label)`` as numpy."""
        data = self._iter(X)
        outs = self._bound(data).predict(data, num_batch=num_batch, reset=reset,
                                         always_output_list=True)
        outs = [o.asnumpy() for o in outs]
        if not return_data:
            return outs[0] if len(outs) == 1 else outs
        xs, ys = (np.asarray(X), None) if isinstance(X, np.ndarray) else (None, None)
        return (outs[0] if len(outs) == 1 else outs), xs, ys

    def score(self, X: Any, eval_metric: Any = "acc", num_batch: Optional[int] = None,
              batch_end_callback: Any = None, reset: bool = True) -> float:
        """The metric's value over ``X`` (an iterator with labels)."""
        data = self._iter(X)
        res = self._bound(data).score(data, eval_metric, num_batch=num_batch,
                                      batch_end_callback=batch_end_callback, reset=reset)
        return res[0][1]

    def save(self, prefix: str, epoch: Optional[int] = None) -> None:
        """``prefix-symbol.json`` and ``prefix-%04d.params`` (epoch: ``num_epoch``)."""
        from .checkpoint import save_checkpoint
        save_checkpoint(prefix, self.num_epoch if epoch is None else epoch, self.symbol,
                        self.arg_params or {}, self.aux_params or {})

    @staticmethod
    def load(prefix: str, epoch: int, ctx: Any = None, **kwargs: Any) -> "FeedForward":
        """A model from :meth:`save` (or MXNet's checkpoint) files."""
        from .checkpoint import load_checkpoint
        sym, arg, aux = load_checkpoint(prefix, epoch)
        return FeedForward(sym, ctx=ctx, arg_params=arg, aux_params=aux, begin_epoch=epoch,
                           **kwargs)

    @staticmethod
    def create(symbol: Any, X: Any, y: Any = None, ctx: Any = None,
               num_epoch: Optional[int] = None, epoch_size: Optional[int] = None,
               optimizer: Any = "sgd", initializer: Any = _init.Uniform(0.01),
               eval_data: Any = None, eval_metric: Any = "acc", epoch_end_callback: Any = None,
               batch_end_callback: Any = None, kvstore: Any = "local", logger: Any = None,
               work_load_list: Any = None, eval_end_callback: Any = None,
               eval_batch_end_callback: Any = None, **kwargs: Any) -> "FeedForward":
        """Construct and :meth:`fit` in one call."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model
