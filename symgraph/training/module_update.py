"""The optimizer side of :class:`~symgraph.training.module.Module`: making the optimizer and
its updater (the fused device updater on the GPU), ``update``, mixed precision, and ``fit``'s
step, which on the GPU runs forward, backward and the fused update as one program run.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import optimizer as _opt
from ..core.base import BindError
from ..runtime import profiler
from .io import DataBatch


def for_module(optimizer: Any, params: dict, idx2name: dict, sym: Any) -> _opt.Optimizer:
    """``optimizer`` ready to update a module's parameters (``Module.init_optimizer``, one
    device or several): a name is created with ``params``; an Optimizer is given the
    parameters' names and the symbol's ``lr_mult``/``wd_mult`` attributes (its own ``params``
    stand, as in MXNet)."""
    if not isinstance(optimizer, _opt.Optimizer):
        return _opt.create(optimizer, param_idx2name=idx2name, sym=sym, **params)
    optimizer.idx2name = idx2name
    optimizer.sym_info = _opt.symbol_info(sym)
    optimizer.set_lr_mult({})
    optimizer.set_wd_mult({})
    return optimizer


class ModuleUpdate:
    """Optimizer and update methods of ``Module`` (a mixin over its executor state)."""

    # -- optimizer ---------------------------------------------------------------------------
    def _init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Make the optimizer; ``rescale_grad`` defaults to 1/batch size, as in MXNet."""
        if self.optimizer_initialized and not force_init:
            return
        if kvstore is not None and not hasattr(kvstore, "pushpull"):
            from .kvstore import check_type
            check_type(kvstore)  # one device, one process: every type means no exchange
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", 1.0 / self._data_shapes[0].shape[0])
        idx2name = dict(enumerate(self._param_names))
        optimizer = for_module(optimizer, params, idx2name, self._symbol)
        self._optimizer = optimizer
        self._updater = self._device_updater(optimizer) or _opt.get_updater(optimizer)
        self._tail: tuple = (None, None)
        self.optimizer_initialized = True

    def borrow_optimizer(self, shared_module: "ModuleUpdate") -> None:
        """Use ``shared_module``'s optimizer and updater (states included), as MXNet's: the
        buckets of a BucketingModule update one set of parameters."""
        if not shared_module.optimizer_initialized:
            raise BindError("borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer, self._updater = shared_module._optimizer, shared_module._updater
        self._tail = (None, None)
        self.optimizer_initialized = True

    def _device_updater(self, optimizer: _opt.Optimizer) -> Any:
        """On the GPU, with float32 parameters: the fused updater (states on the device, one
        kernel launch per step for all parameters); ``None`` elsewhere (numpy updater)."""
        args = self._exec.arg_dict
        if self._context.device_type != "gpu" or not optimizer.fused or any(
                args[n].dtype != np.float32 for n in self._param_names):
            return None
        from ..runtime.cuda.optimizer import FusedUpdater
        return FusedUpdater(optimizer, self._context.device_id)

    def update(self) -> None:
        """One optimizer step on every trainable parameter."""
        if not self.optimizer_initialized:
            raise BindError("update: call init_optimizer() first")
        grads = self._exec.grad_dict
        todo = [(i, n) for i, n in enumerate(self._param_names) if n in grads]
        if hasattr(self._updater, "stream"):  # device updater: order after our backward
            self._updater.stream = self._exec.train_program.stream

        def run() -> None:
            self._updater.update_multi([i for i, _ in todo], [grads[n] for _, n in todo],
                                       [self._exec.arg_dict[n] for _, n in todo])

        def step() -> None:
            if self._amp is None:
                run()
            else:  # float16: skip a step whose gradients overflowed (amp/module_amp.py)
                self._amp.update(self._exec, self._optimizer, [grads[n] for _, n in todo], run)
        if not profiler.recording():
            step()
            return
        stream = getattr(self._updater, "stream", None)  # sg.profiler: the step is one event
        with profiler.host_range(f"update ({type(self._optimizer).__name__})",
                                 str(getattr(self._exec, "_ctx", "cpu(0)")),
                                 getattr(stream, "synchronize", None)):
            step()

    def use_amp(self, target_dtype: Any) -> None:
        """Train in mixed precision (``fit(amp=...)``): 'float16' (with dynamic loss scaling)
        or 'bfloat16'; None turns it off. Takes effect at the next bind."""
        from ..frontend.amp.module_amp import ModuleAmp
        amp = None if target_dtype is None else ModuleAmp(target_dtype)
        if (amp and amp.target) != (self._amp and self._amp.target) and self.binded:
            if self.params_initialized:  # keep the trained values for the next bind
                self._arg_params, self._aux_params = self.get_params()
            self.binded = False  # the next bind makes the (un)converted executor
        self._amp = amp

    def forward_backward_update(self, data_batch: DataBatch) -> None:
        """``fit``'s step. With the device updater, forward, backward and the fused update are
        one program run (one CUDA graph replay per step); otherwise forward, backward, update."""
        staging = self._staging()
        self._load_batch(data_batch, staging)  # first: a batch of another size rebinds
        # while sg.profiler records, the update runs apart (the same fused kernel) so that it
        # is an event of its own; the profiled steps run eagerly anyway
        tail = None if profiler.recording() else self._update_tail()
        if tail is None:
            self._exec.forward(is_train=True)
            self.backward()
            self.update()
            return
        self._updater.set_step_scalars(tail.indices, self._exec.train_program.stream)
        self._exec.train_step(tail)

    def _staging(self) -> Any:
        """Pinned staging buffers for ``fit`` on the GPU with the fused update, else ``None``."""
        if not (self.optimizer_initialized and hasattr(self._updater, "tail")):
            return None
        if self._stage_buffers is None:
            from ..runtime.cuda.staging import Staging
            self._stage_buffers = Staging(self._context.device_id)
        return self._stage_buffers

    def _queue_metric(self, eval_metric: Any, labels: Sequence, pad: int) -> Any:
        """On the GPU (``fit`` with the fused update): outputs leave by async copies and the
        metric is fed when the next step is queued; elsewhere at once."""
        staging = self._staging()
        if staging is None:
            return super()._queue_metric(eval_metric, labels, pad)
        keep = slice(None, -pad if pad else None)
        outs = self._exec.outputs[:max(1, len(labels))]
        wait = staging.from_device(outs, self._exec.train_program.stream)
        host = [np.asarray(lb.asnumpy() if hasattr(lb, "asnumpy") else lb)[keep] for lb in labels]
        return lambda: eval_metric.update(host, [o[keep].copy() for o in wait()])

    def _update_tail(self) -> Any:
        """The fused update as a backward tail for the current executor (made once per bind);
        ``None`` without a device updater, when a gradient accumulates (``grad_req='add'``) or
        when no gradient reaches a trained parameter."""
        if not (self.optimizer_initialized and self.for_training
                and hasattr(self._updater, "tail")) or \
                (self._amp is not None and self._amp.scaler is not None):
            return None  # the loss scaler looks at the gradients before each update
        exe, tail = self._tail
        if exe is not self._exec:
            slots = self._exec.grad_slots()
            reqs = self._exec.grad_req.values()
            todo = [(i, n) for i, n in enumerate(self._param_names) if n in slots]
            unreached = [n for n in self._param_names
                         if n not in slots and self._exec.grad_req.get(n, "null") != "null"]
            tail = None
            # A parameter no gradient reaches still takes its step on a zero gradient (weight
            # decay, momentum), as on the CPU: the tail has no slot for it, so update() runs.
            if all(r != "add" for r in reqs) and not unreached:
                tail = self._updater.tail([i for i, _ in todo],
                                          [self._exec.arg_dict[n] for _, n in todo],
                                          [slots[n] for _, n in todo])
            self._tail = (self._exec, tail)
        return tail
