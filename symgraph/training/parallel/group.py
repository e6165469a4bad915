"""``Module(context=[...])``: one executor per device, batches sliced as MXNet does, gradients
summed by a bucketed all-reduce, and the same optimizer step on every device.

Requires: the contexts are distinct and of one kind (all ``cpu(i)`` or all ``gpu(i)``).
Guarantees: after each ``update`` every replica holds bitwise the same parameters (the summed
gradient is identical on every device and the update is the same arithmetic), so no
broadcast is needed; ``get_params`` reads device 0.

Device ``k``'s parameter ``i`` is optimizer index ``i * num_devices + k`` (MXNet's numbering),
so update counts, ``lr_mult`` and ``wd_mult`` are per parameter and equal on every device.
On the GPU each device runs its step as one CUDA graph; the all-reduce (NCCL, grouped per
bucket) and the fused optimizer step are queued on each executor's stream after it.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .. import optimizer as _opt
from ...core.base import BindError
from ...core.context import Context, cpu
from ..io import DataBatch, DataDesc
from ...core.log import LOGGER
from ..module import Module
from ..module_update import for_module
from ...runtime.ndarray import NDArray, array
from ...runtime.placement import device_groups
from .bucket import DEFAULT_BUCKET_BYTES, make_buckets
from . import flat
from .split import batch_axis, split_batch, take_part
from .step import DeviceSlice, StepQueue


def _host(x: Any) -> np.ndarray:
    return x._data if isinstance(x, NDArray) and x.context.device_type == "cpu" \
        else np.asarray(x.asnumpy() if hasattr(x, "asnumpy") else x)


def _with_dim(shape: Sequence[int], axis: int, size: int) -> tuple:
    """``shape`` with ``size`` at ``axis`` (a device's part of the batch)."""
    return tuple(shape[:axis]) + (size,) + tuple(shape[axis + 1:])


def _merged(parts: list[NDArray], axis: int) -> NDArray:
    """Per-device arrays joined along the batch ``axis``, in their dtype."""
    return array(np.concatenate([p.asnumpy() for p in parts], axis=axis), dtype=parts[0].dtype)


class DataParallelModule(Module):
    """A :class:`~symgraph.training.module.Module` over several devices of this process (and, with a
    ``dist`` kvstore, over several processes)."""

    data_parallel = True  # (what ``Module(context=[...])`` looks for among its subclasses)

    def __init__(self, symbol: Any, data_names: Sequence[str] = ("data",),
                 label_names: Optional[Sequence[str]] = ("softmax_label",),
                 context: Any = None, fixed_param_names: Optional[Sequence[str]] = None,
                 logger: Any = LOGGER, work_load_list: Optional[Sequence[float]] = None,
                 **kwargs: Any) -> None:
        if not isinstance(context, (list, tuple)):  # one device of several processes
            context = [context or cpu()]
        contexts: list[Context] = list(context)
        kinds = {c.device_type for c in contexts}
        if len(kinds) != 1 or len(set(contexts)) != len(contexts):
            raise BindError(f"Module: contexts must be distinct devices of one kind, got "
                            f"{contexts}")
        super().__init__(symbol, data_names, label_names, contexts[0], fixed_param_names,
                         logger, **kwargs)
        if work_load_list is not None and len(work_load_list) != len(contexts):
            raise BindError(f"Module: work_load_list {list(work_load_list)} has "
                            f"{len(work_load_list)} entries for {len(contexts)} contexts")
        self._contexts = contexts
        self._work_load_list = list(work_load_list or [1] * len(contexts))
        self._slices: list[slice] = []
        self._axes: dict[str, int] = {}  # batch axis of each input (its DataDesc layout)
        self._updaters: list[Any] = []
        self._comm: Any = None
        self._queue = StepQueue()  # fit's step: enqueue order, host waits, phase times
        self._reduce_plan: tuple = (None, [])  # (executors, per-bucket replica lists)
        self._update_args: dict[int, tuple] = {}  # device -> (executor, update_multi args)
        self._kv_name: Optional[str] = None
        self.bucket_bytes = DEFAULT_BUCKET_BYTES

    def __repr__(self) -> str:
        return super().__repr__().replace(f"on {self._context}", f"on {self._contexts}")

    def use_amp(self, target_dtype: Any) -> None:
        """Mixed precision is not wired through the multi-device step yet: refuse it rather
        than train in float32 without saying so."""
        if target_dtype is not None:
            raise BindError(f"Module over {self._contexts}: fit(amp={target_dtype!r}) runs on "
                            f"one device only (the multi-device step has no loss scaling or "
                            f"master weights yet); train on one context or without amp")
        super().use_amp(None)

    @property
    def contexts(self) -> list[Context]:
        return list(self._contexts)

    @property
    def executors(self) -> list[Any]:
        """One executor per device (device ``k`` runs samples ``slices[k]`` of each batch)."""
        return list(self._execs)

    # -- bind ----------------------------------------------------------------------------------
    def _bind_executors(self, descs: list[DataDesc], reqs: dict[str, str],
                        for_training: bool, shared_module: Any = None) -> list[Any]:
        """One executor per context, each for its slice of the batch along each input's
        ``__layout__`` batch axis (Module.bind's checks and parameter copies then serve every
        device)."""
        if shared_module is not None:
            raise BindError(f"Module over {self._contexts}: shared_module is supported on one "
                            f"device only")
        axes = {d.name: batch_axis(d.layout) for d in descs}
        slices = split_batch(descs[0].shape[axes[descs[0].name]], self._work_load_list,
                             len(self._contexts))
        types = {d.name: d.dtype for d in descs}
        execs = [self._symbol.simple_bind(
            ctx, grad_req=reqs, type_dict=types, group2ctx=groups,
            **{d.name: _with_dim(d.shape, axes[d.name], part.stop - part.start) for d in descs})
            for ctx, part, groups in zip(self._contexts, slices,
                                         device_groups(self._group2ctxs, len(self._contexts)))]
        # all made: a failed bind leaves the old
        self._execs, self._slices, self._axes = execs, slices, axes
        if for_training and self._contexts[0].device_type == "gpu":
            self._buckets()  # flat gradient buckets: before any run records the pointers
        return self._execs

    def init_params(self, *args: Any, **kwargs: Any) -> None:
        """As Module's, on device 0; then the same values on every device."""
        was = self.params_initialized
        super().init_params(*args, **kwargs)
        if not was or kwargs.get("force_init") or (len(args) > 4 and args[4]):
            for exe in self._execs[1:]:
                exe.copy_params_from(self._arg_params, self._aux_params)

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """Parameters of device 0 (every device holds the same bits) and aux states averaged
        over the devices (BatchNorm statistics differ per slice), as MXNet does."""
        arg, aux = super().get_params()
        if self.binded and len(self._execs) > 1:
            for name in self._aux_names:
                total = sum(exe.aux_dict[name].asnumpy().astype(np.float64)
                            for exe in self._execs)
                aux[name] = array((total / len(self._execs)).astype(aux[name].dtype))
        return arg, aux

    # -- optimizer -----------------------------------------------------------------------------
    def _init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                        optimizer_params: Any = (("learning_rate", 0.01),),
                        force_init: bool = False) -> None:
        """The optimizer (``rescale_grad`` = 1 / global batch), one updater per device and
        the communicator the kvstore type selects."""
        from .setup import make_communicator
        if self.optimizer_initialized and not force_init:
            return
        comm, workers, name = make_communicator(kvstore, self._contexts)
        n = len(self._contexts)
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", 1.0 / (self._data_shapes[0].shape[0] * workers))
        idx2name = {i * n + k: name for i, name in enumerate(self._param_names)
                    for k in range(n)}
        optimizer = for_module(optimizer, params, idx2name, self._symbol)
        self._optimizer, self._comm, self._kv_name = optimizer, comm, name
        self._queue.reset()
        if hasattr(comm, "streams"):  # collectives queue on the executors' streams
            comm.streams = [exe.train_program.stream for exe in self._execs]
        if self._contexts[0].device_type == "gpu" and optimizer.fused:
            from ...runtime.cuda.optimizer import FusedUpdater
            self._updaters = [FusedUpdater(optimizer, c.device_id) for c in self._contexts]
        else:
            self._updaters = [_opt.get_updater(optimizer)] * n
        self._updater = _UpdaterGroup(self._updaters, n)
        self.optimizer_initialized = True
        if workers > 1:  # every process starts from rank 0's parameters
            self._sync_params()

    def _sync_params(self) -> None:
        names = self._param_names
        reps = [[exe.arg_dict[n] for n in names] + [exe.aux_dict[n] for n in self._aux_names]
                for exe in self._execs]
        self._comm.check_manifest(names + self._aux_names, reps[0], "Module.init_optimizer")
        self._comm.broadcast(reps)
        _wait(self._comm)
        self._arg_params, self._aux_params = self.get_params()

    # -- computation ---------------------------------------------------------------------------
    def _host_batch(self, data_batch: DataBatch) -> dict[str, np.ndarray]:
        """The batch's arrays on the host (rebinding first if its size changed)."""
        return {k: _host(v) for k, v in self._bound_batch(data_batch).items()}

    def _load_batch(self, data_batch: DataBatch) -> None:
        """Slice the batch over the devices."""
        host = self._host_batch(data_batch)
        for exe, part in zip(self._execs, self._slices):
            for name, value in host.items():
                exe.arg_dict[name][:] = take_part(value, self._axes.get(name, 0), part)

    def forward(self, data_batch: DataBatch, is_train: Optional[bool] = None) -> None:
        self._load_batch(data_batch)
        train = self.for_training if is_train is None else is_train
        for exe in self._execs:
            exe.forward(is_train=train)

    def backward(self, out_grads: Any = None) -> None:
        if not self.for_training:
            raise BindError("backward: module was bound with for_training=False")
        axes = self._output_axes()
        for exe, ctx, part in zip(self._execs, self._contexts, self._slices):
            exe.backward(None if out_grads is None else
                         [array(take_part(_host(g), ax, part), ctx, g.dtype)
                          for g, ax in zip(out_grads, axes)])

    def _output_axes(self) -> list[int]:
        """The batch axis of each output (its ``__layout__``, as MXNet's executor group)."""
        return [batch_axis(self._symbol[i].attr("__layout__"))
                for i in range(len(self._output_names))]

    def _buckets(self) -> list[list[list[Any]]]:
        """Per bucket, the gradient arrays of every device (``[device][array]``), made once
        per bind (the executors' gradient arrays stay put between steps)."""
        key, plan = self._reduce_plan
        if key != (self._execs, self.bucket_bytes):
            names = [n for n in self._param_names if n in self._execs[0].grad_dict]
            grads = [[exe.grad_dict[n] for n in names] for exe in self._execs]
            sizes = [g.size * np.dtype(g.dtype).itemsize for g in grads[0]] if names else []
            plan = [self._flatten([[rep[i] for i in b.indices] for rep in grads])
                    for b in make_buckets(sizes, self.bucket_bytes)] if sizes else []
            self._reduce_plan = ((list(self._execs), self.bucket_bytes), plan)
        return plan

    def _flatten(self, replicas: list[list[Any]]) -> list[list[Any]]:
        """On GPUs, before the executors' first run: the bucket's gradients become views of
        one buffer per device (``flat.py``), reduced by one call per device."""
        if self._contexts[0].device_type != "gpu" or not flat.enabled() or any(
                getattr(exe, "_trained", False) or getattr(exe, "_forwarded", False)
                for exe in self._execs):
            return replicas
        bufs = [flat.flatten(rep, flat.gpu_alloc(ctx.device_id), flat.gpu_view)
                for rep, ctx in zip(replicas, self._contexts)]
        return replicas if any(b is None for b in bufs) else [[b] for b in bufs]

    def allreduce(self) -> None:
        """Sum the gradients of all devices (and processes) into every device's grad arrays."""
        if self._comm is None:
            raise BindError("update: call init_optimizer() first")
        if hasattr(self._comm, "streams"):  # collectives queue behind each device's step
            self._comm.streams = [exe.train_program.stream for exe in self._execs]
        for replicas in self._buckets():
            self._comm.allreduce(replicas)

    def update(self) -> None:
        """All-reduce the gradients, then the same optimizer step on every device."""
        if not self.optimizer_initialized:
            raise BindError("update: call init_optimizer() first")
        self.allreduce()
        for k in range(len(self._execs)):
            self._update_device(k)

    def _update_device(self, k: int) -> None:
        """Queue device ``k``'s optimizer step (parameter ``i`` is index ``i * n + k``); its
        argument lists are made once per bind."""
        exe, upd, n = self._execs[k], self._updaters[k], len(self._execs)
        args = self._update_args.get(k)
        if args is None or args[0] is not exe:
            todo = [(i, m) for i, m in enumerate(self._param_names) if m in exe.grad_dict]
            args = self._update_args[k] = (exe, [i * n + k for i, _ in todo],
                                           [exe.grad_dict[m] for _, m in todo],
                                           [exe.arg_dict[m] for _, m in todo])
        if hasattr(upd, "stream"):
            upd.stream = exe.train_program.stream
        upd.update_multi(*args[1:])

    def forward_backward_update(self, data_batch: DataBatch) -> None:
        """``fit``'s step, queued by :class:`~.step.StepQueue`: per device the batch copy
        and one program run (one CUDA graph on the GPU) back to back, then the all-reduce
        and the update on every device's stream; the host waits only for the step before
        last. ``step_times`` (host seconds per phase) is filled while it is a dict."""
        if not self.optimizer_initialized:
            raise BindError("update: call init_optimizer() first")
        with self._queue.phase("batch"):
            host = self._host_batch(data_batch)
            self._staging()
        stage = self._stage_buffers
        devices = [DeviceSlice(exe, part, host, stage[exe] if stage is not None else None,
                               lambda k=k: self._update_device(k), self._axes)
                   for k, (exe, part) in enumerate(zip(self._execs, self._slices))]
        self._queue.run(devices, self.allreduce, self._comm)

    @property
    def step_times(self) -> Optional[dict[str, float]]:
        """Host seconds spent per phase of ``forward_backward_update`` since it was set to
        ``{}`` (``None``: not collected); ``step_count`` steps were timed."""
        return self._queue.times

    @step_times.setter
    def step_times(self, value: Optional[dict[str, float]]) -> None:
        self._queue.times, self._queue.steps = value, 0

    @property
    def step_count(self) -> int:
        return self._queue.steps

    def _staging(self) -> Any:
        if self._contexts[0].device_type != "gpu" or not self.optimizer_initialized:
            return None
        if self._stage_buffers is None:
            from ...runtime.cuda.staging import Staging
            self._stage_buffers = {exe: Staging(c.device_id)
                                   for exe, c in zip(self._execs, self._contexts)}
        elif set(self._stage_buffers) != set(self._execs):  # rebound
            self._stage_buffers = None
            return self._staging()
        return self._stage_buffers

    def _queue_metric(self, eval_metric: Any, labels: Sequence, pad: int) -> Any:
        """On GPUs the outputs leave by async copies, one per device, and the metric is fed
        when the next step is queued (as Module does on one GPU); on CPUs at once."""
        staging = self._staging()
        if staging is None:
            self.update_metric(eval_metric, labels, pad=pad)
            return None
        keep = slice(None, -pad if pad else None)
        count = max(1, len(labels))
        waits = [staging[exe].from_device(exe.outputs[:count], exe.train_program.stream)
                 for exe in self._execs]
        host = [np.asarray(_host(lb))[keep] for lb in labels]

        def finish() -> None:
            parts = [w() for w in waits]
            preds = [np.concatenate([p[i] for p in parts])[keep] for i in range(count)]
            eval_metric.update(host, preds)
        return finish

    # -- outputs -------------------------------------------------------------------------------
    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """Outputs of all devices, concatenated along the batch (per device if not merged)."""
        per = [list(exe.outputs) for exe in self._execs]
        if not merge_multi_context:
            return [[p[i] for p in per] for i in range(len(per[0]))]
        return [_merged([p[i] for p in per], ax) for i, ax in enumerate(self._output_axes())]

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        if not self.inputs_need_grad:
            raise BindError("get_input_grads: module was bound with inputs_need_grad=False")
        return [_merged([exe.grad_dict[n] for exe in self._execs], self._axes.get(n, 0))
                for n in self._data_names]

    def update_metric(self, eval_metric: Any, labels: Sequence, pre_sliced: bool = False,
                      pad: int = 0) -> None:
        keep = slice(None, -pad if pad else None)
        preds = [o.asnumpy()[keep] for o in self.get_outputs()][:max(1, len(labels))]
        eval_metric.update([np.asarray(_host(lb))[keep] for lb in labels], preds)

    @property
    def output_shapes(self) -> list[tuple[str, tuple]]:
        d = self._data_shapes[0]
        batch = d.shape[self._axes.get(d.name, 0)]
        return [(n, _with_dim(o.shape, ax, batch)) for n, o, ax
                in zip(self._output_names, self._exec.outputs, self._output_axes())]


class _UpdaterGroup:
    """The updaters of the devices, as one for checkpoints: states are saved as those of
    device 0 under plain parameter indices (every device holds the same), so a ``.states``
    file moves between 1 and N devices; loading gives them to every device."""

    def __init__(self, updaters: Sequence[Any], num_devices: int) -> None:
        self.updaters = list({id(u): u for u in updaters}.values())
        self.first, self.n = updaters[0], num_devices

    def get_states(self) -> dict[str, np.ndarray]:
        out = {}
        for key, value in self.first.get_states().items():
            kind, index, *rest = key.split(":")
            if int(index) % self.n == 0:
                out[":".join([kind, str(int(index) // self.n), *rest])] = value
        return out

    def set_states(self, arrays: dict[str, np.ndarray]) -> None:
        spread = {}
        for key, value in arrays.items():
            kind, index, *rest = key.split(":")
            for k in range(self.n):
                spread[":".join([kind, str(int(index) * self.n + k), *rest])] = value
        for upd in self.updaters:
            upd.set_states(spread)


def _wait(comm: Any) -> None:
    if hasattr(comm, "wait"):
        comm.wait()

