"""``sg.mod.Module``: the MXNet 1.x intermediate training API over one executor.

``bind`` makes the executor from data/label shapes, ``init_params`` fills parameters (from an
initializer or given arrays), ``init_optimizer`` makes the updater, and ``forward``/``backward``/
``update`` run one step. ``fit``, ``score`` and ``predict`` live in :mod:`symgraph.base_module`.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import optimizer as _opt
from ..core.log import LOGGER
from ..core.base import BindError, DataError, ExecutionError
from .base_module import BaseModule
from .module_params import ModuleParams
from .module_update import ModuleUpdate
from .module_reqs import module_grad_reqs
from ..runtime.executor import Executor
from ..runtime.placement import device_groups
from ..core.context import Context, cpu
from .io import DataBatch, DataDesc
from ..runtime.ndarray import NDArray, array
from .parallel.setup import wants_data_parallel

__all__ = ["Module", "BaseModule"]


def _descs(shapes: Any) -> list[DataDesc]:
    return [d if isinstance(d, DataDesc) else DataDesc(d[0], d[1]) for d in shapes or []]


class ExecutorGroupView:
    """MXNet's ``DataParallelExecutorGroup``'s state: ``execs`` (one per device) and names."""

    def __init__(self, execs: list, param_names: list[str], aux_names: list[str],
                 data_names: list[str], label_names: list[str]) -> None:
        self.execs = execs
        self.param_names, self.aux_names = param_names, aux_names
        self.data_names, self.label_names = data_names, label_names


class Module(ModuleUpdate, ModuleParams, BaseModule):
    """A trainable module over ``symbol`` (MXNet's ``mx.mod.Module``). With several contexts,
    or in one of several launched processes, it is a ``parallel.group.DataParallelModule``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> "Module":
        if cls is Module and wants_data_parallel(args, kwargs):  # the subclass that says it
            cls = next((c for c in Module.__subclasses__() if c.__dict__.get("data_parallel")),
                       Module)  # (parallel/group.py's DataParallelModule; symgraph imports it)
        return super().__new__(cls)

    def __init__(self, symbol: Any, data_names: Sequence[str] = ("data",),
                 label_names: Optional[Sequence[str]] = ("softmax_label",),
                 context: Any = None, fixed_param_names: Optional[Sequence[str]] = None,
                 logger: Any = LOGGER, work_load_list: Optional[Sequence[float]] = None,
                 state_names: Optional[Sequence[str]] = None, group2ctxs: Any = None) -> None:
        super().__init__(logger)
        self._group2ctxs = group2ctxs  # MXNet's model parallelism (runtime/placement.py)
        if isinstance(context, (list, tuple)):  # several: parallel.group.DataParallelModule
            if len(context) != 1:
                raise BindError(f"Module: {list(context)} needs the data-parallel module")
            context = context[0]
        self._context: Context = context or cpu()
        self._symbol = symbol
        args = symbol.list_arguments()
        self._data_names = list(data_names)
        self._label_names = [n for n in (label_names or []) if n in args]
        self._state_names = list(state_names or [])
        for kind, names in (("data", self._data_names), ("state", self._state_names)):
            for n in names:
                if n not in args:
                    raise BindError(f"Module: {kind} name {n!r} is not an argument of the "
                                    f"symbol; arguments: {args}")
        inputs = set(self._data_names) | set(self._label_names) | set(self._state_names)
        self._param_names = [n for n in args if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._fixed_param_names = list(fixed_param_names or [])
        self._output_names = symbol.list_outputs()
        # MXNet's: None until bind; _label_shapes stays None when bind gets no label shapes, so
        # ``bind(..., label_shapes=mod._label_shapes)`` works on a module without labels.
        self._data_shapes: Optional[list[DataDesc]] = None
        self._label_shapes: Optional[list[DataDesc]] = None
        self._exec: Any = None
        self._execs: list[Any] = []  # every executor bind made (here one: _exec)
        self._grad_req = "write"
        self._arg_params: Optional[dict] = None
        self._aux_params: Optional[dict] = None
        self._updater: Any = None
        self._optimizer: Optional[_opt.Optimizer] = None
        self._stage_buffers: Any = None  # cuda.staging.Staging of fit's GPU path
        self._amp: Any = None  # amp.module_amp.ModuleAmp, set by fit(amp=...)

    # -- names and shapes ------------------------------------------------------------------
    def __repr__(self) -> str:
        if self.binded:
            descs = list(self._data_shapes) + list(self._label_shapes or [])
            inputs = ", ".join(f"{d.name} {d.shape}" for d in descs)
            state = "bound for training" if self.for_training else "bound for inference"
        else:
            inputs, state = ", ".join(self._data_names + self._label_names), "not bound"
        opt = getattr(self, "_optimizer", None)
        extra = f", optimizer {type(opt).__name__}" if self.optimizer_initialized else ""
        return (f"<Module {self._symbol.name or 'group'} on {self._context}: inputs {inputs}; "
                f"{len(self._param_names)} parameters, {len(self._aux_names)} aux states; "
                f"{state}{extra}>")

    @property
    def symbol(self) -> Any:
        return self._symbol

    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    def _bound(self, what: str) -> None:
        """Refuse ``what`` (a name of the bound state) before ``bind``, as MXNet asserts."""
        if not self.binded:
            raise BindError(f"Module.{what}: the module is not bound; call bind() first")

    @property
    def data_shapes(self) -> list[DataDesc]:
        """The data descriptions given to ``bind`` (``mod._data_shapes`` is None before)."""
        self._bound("data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self) -> Optional[list[DataDesc]]:
        """The label descriptions given to ``bind``; None when it got none (MXNet's)."""
        self._bound("label_shapes")
        return self._label_shapes

    @property
    def _exec_group(self) -> "ExecutorGroupView":
        """MXNet's ``Module._exec_group`` (read by its tests): a view of the one executor."""
        self._bound("_exec_group")
        return ExecutorGroupView([self._exec], list(self._param_names), list(self._aux_names),
                                 list(self._data_names), list(self._label_names))

    @property
    def output_shapes(self) -> list[tuple[str, tuple]]:
        """``(name, shape)`` of each output of the bound executor."""
        self._bound("output_shapes")
        return [(n, o.shape) for n, o in zip(self._output_names, self._exec.outputs)]

    # -- bind --------------------------------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False,
             shared_module: Any = None, grad_req: str = "write") -> None:
        """Make the executor for these input shapes (``[(name, shape)]`` or DataDesc lists)."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        data, label = _descs(data_shapes), _descs(label_shapes)
        given = [d.name for d in data]
        if sorted(given) != sorted(self._data_names):
            raise BindError(f"bind: data shapes for {given}, module data names are "
                            f"{self._data_names}")
        if label and sorted(d.name for d in label) != sorted(self._label_names):
            raise BindError(f"bind: label shapes for {[d.name for d in label]}, module label "
                            f"names are {self._label_names}")
        self._check_batch(data + label)
        reqs = module_grad_reqs(self._symbol.list_arguments(), self._param_names,
                                self._fixed_param_names, self._data_names, for_training,
                                inputs_need_grad, grad_req)
        self._execs = self._bind_executors(data + label, reqs, for_training, shared_module)
        self._grad_req, self._exec, self._fed = grad_req, self._execs[0], False
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._data_shapes, self._label_shapes = data, (label if label_shapes is not None else None)
        for mon in getattr(self, "_monitors", []):  # a rebind keeps the monitors installed
            for exe in self._execs:
                mon.install(exe)
        self.binded = True
        if self.params_initialized:
            self._check_params(self._arg_params, self._aux_params, False, False)
            for exe in self._execs:
                exe.copy_params_from(self._arg_params, self._aux_params)

    def _bind_executors(self, descs: list[DataDesc], reqs: dict[str, str],
                        for_training: bool, shared_module: Any = None) -> list[Any]:
        """The executors ``bind`` makes for inputs ``descs``: one, on this context (the
        data-parallel module makes one per device), on ``shared_module``'s arrays if given."""
        shapes = {d.name: d.shape for d in descs}
        types = {d.name: d.dtype for d in descs}
        symbol = self._symbol
        if self._amp is not None:  # a mixed-precision copy; parameters stay float32
            symbol = self._amp.symbol(symbol)
            for mine, extra in zip((reqs, shapes, types), self._amp.bind_extras()):
                mine.update(extra)
        if shared_module is None:
            exe = symbol.simple_bind(self._context, grad_req=reqs, type_dict=types,
                                     group2ctx=device_groups(self._group2ctxs, 1)[0], **shapes)
        else:  # the arrays only: the executor that runs is bound on the shared ones, once
            exe = self._share(shared_module, Executor.simple_bind(
                symbol, self._context, reqs, types, shapes, stages=()), reqs)
        if self._amp is not None:
            self._amp.after_bind(exe)
        return [exe]

    def _share(self, shared: "Module", mine: Any, reqs: dict[str, str]) -> Any:
        """The executor rebound onto ``shared``'s parameter, gradient and aux arrays (MXNet's
        ``shared_module``: a BucketingModule's buckets train one set of parameters)."""
        if not shared.binded or self._amp is not None:
            raise BindError("bind: shared_module must be bound (and without AMP)")
        theirs = shared._exec
        args, grads, aux = dict(mine.arg_dict), dict(mine.grad_dict), dict(mine.aux_dict)
        for kind, names, own, other in (
                ("parameter", self._param_names, (args, grads), (theirs.arg_dict,
                                                                 theirs.grad_dict)),
                ("aux state", self._aux_names, (aux,), (theirs.aux_dict,))):
            for n in names:
                if n not in other[0]:
                    continue
                if other[0][n].shape != own[0][n].shape:
                    raise BindError(f"bind: {kind} {n} has shape {own[0][n].shape} here, "
                                    f"{other[0][n].shape} in shared_module")
                for mine_d, theirs_d in zip(own, other):
                    if n in theirs_d:
                        mine_d[n] = theirs_d[n]
        self.params_initialized = shared.params_initialized
        self._arg_params, self._aux_params = shared._arg_params, shared._aux_params
        return self._symbol.bind(self._context, args, args_grad=grads, grad_req=reqs,
                                 aux_states=aux)

    @staticmethod
    def _check_batch(descs: Sequence[DataDesc]) -> None:
        sizes = {d.name: d.shape[0] for d in descs if len(d.shape)}
        if len(set(sizes.values())) > 1:
            raise BindError(f"data and label batch sizes differ: {sizes}")

    def reshape(self, data_shapes: Any, label_shapes: Any = None) -> None:
        """Rebind for new input shapes, keeping parameters (and the optimizer)."""
        arg, aux = self.get_params() if self.params_initialized else (None, None)
        self.binded = False
        self.bind(data_shapes, label_shapes, self.for_training, self.inputs_need_grad)
        if arg is not None:
            for exe in self._execs:
                exe.copy_params_from(arg, aux)

    # -- computation -------------------------------------------------------------------------
    def _batch_arrays(self, data_batch: DataBatch) -> dict[str, Any]:
        data = list(data_batch.data)
        label = list(getattr(data_batch, "label", None) or [])
        if len(data) != len(self._data_names):
            raise DataError(f"forward: {len(data)} data arrays for data names {self._data_names}")
        arrays = dict(zip(self._data_names, data))
        if label and self._label_names:
            if len(label) != len(self._label_names):
                raise DataError(f"forward: {len(label)} label arrays for label names "
                                f"{self._label_names}")
            arrays.update(zip(self._label_names, label))
        sizes = {k: v.shape[0] for k, v in arrays.items()}
        if len(set(sizes.values())) > 1:
            raise DataError(f"forward: data and label batch sizes differ: {sizes}")
        return arrays

    def forward(self, data_batch: DataBatch, is_train: Optional[bool] = None) -> None:
        """Run forward on a batch (rebinding first if its shapes differ from the bound ones)."""
        self._load_batch(data_batch)
        self._exec.forward(is_train=self.for_training if is_train is None else is_train)

    def _bound_batch(self, data_batch: DataBatch) -> dict[str, Any]:
        """The batch's arrays by name, after rebinding if their shapes differ from the bound."""
        if not (self.binded and self.params_initialized):
            raise BindError("forward: call bind() and init_params() first")
        arrays = self._batch_arrays(data_batch)
        bound = {d.name: d.shape for d in self._data_shapes + (self._label_shapes or [])}
        if any(tuple(v.shape) != bound.get(k, tuple(v.shape)) for k, v in arrays.items()):
            self.reshape([(n, tuple(arrays[n].shape)) for n in self._data_names],
                         [(n, tuple(arrays[n].shape)) for n in self._label_names
                          if n in arrays and self._label_shapes] or None)
        return arrays

    def _load_batch(self, data_batch: DataBatch, staging: Any = None) -> None:
        """Copy a batch into the bound inputs (rebinding first if its shapes differ); with a
        ``cuda.staging.Staging``, one async copy per input on the training stream."""
        arrays = self._bound_batch(data_batch)
        for name, value in arrays.items():
            if staging is None:
                self._exec.arg_dict[name][:] = value
            else:
                staging.to_device(self._exec.arg_dict[name], value,
                                  self._exec.train_program.stream)
        self._fed = True

    def backward(self, out_grads: Any = None) -> None:
        if not self.for_training:
            raise BindError("backward: module was bound with for_training=False")
        if not self._fed:  # no batch loaded since bind(): refused rather than zero gradients
            raise ExecutionError("backward: no forward() has run since bind(): no batch to "
                                 "differentiate; call forward(batch) first")
        self._exec.backward(out_grads)

    def install_monitor(self, mon: Any) -> None:
        """Install ``mon`` on the bound executors (and on any executor a rebind makes)."""
        if self._exec is None:
            raise BindError("install_monitor: bind the module first")
        self._monitors = getattr(self, "_monitors", []) + [mon]
        for exe in self._execs:
            mon.install(exe)

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """The outputs; with ``merge_multi_context=False``, each as the list of its parts per
        context (split along the batch axis of its ``__layout__``, as MXNet's)."""
        outs = list(self._exec.outputs)
        if merge_multi_context:
            return outs
        layouts = [self._symbol[i].attr("__layout__") for i in range(len(outs))]
        return [self._parts(o, lay) for o, lay in zip(outs, layouts)]

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        if not self.inputs_need_grad:
            raise BindError("get_input_grads: module was bound with inputs_need_grad=False")
        grads = [self._exec.grad_dict.get(n) for n in self._data_names]  # None: grad_req null
        return grads if merge_multi_context else [
            g if g is None else self._parts(g, d.layout) for g, d in zip(grads, self._data_shapes)]

    def _parts(self, arr: NDArray, layout: Optional[str]) -> list[NDArray]:
        """``arr`` cut along its batch axis (``N`` of ``layout``, else 0) into one part per
        context given at construction (MXNet's slicing: ceil(batch / parts) rows each)."""
        axis = max(0, (layout or "N").find("N"))
        n = getattr(self, "_n_parts", 1)
        step = -(-arr.shape[axis] // n)
        host = arr.asnumpy()
        return [array(np.take(host, range(i * step, min((i + 1) * step, arr.shape[axis])),
                              axis=axis), arr.context, arr.dtype) for i in range(n)]

    def update_metric(self, eval_metric: Any, labels: Sequence, pre_sliced: bool = False,
                      pad: int = 0) -> None:
        """Feed the current outputs to ``eval_metric``; the last ``pad`` rows are left out."""
        keep = slice(None, -pad if pad else None)
        preds = [o.asnumpy()[keep] for o in self._exec.outputs][:max(1, len(labels))]
        eval_metric.update([np.asarray(lb.asnumpy() if hasattr(lb, "asnumpy") else lb)[keep]
                            for lb in labels], preds)
