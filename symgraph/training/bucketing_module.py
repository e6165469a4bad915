"""``sg.mod.BucketingModule``: MXNet 1.x's module for inputs of several shapes (sequence
lengths), one :class:`~symgraph.training.module.Module` per bucket key.

``sym_gen(key) -> (symbol, data_names, label_names)`` makes each bucket's network. The default
bucket's module is bound first and owns the parameters; every other bucket's module is bound
with it as ``shared_module``, so all buckets read and train the same parameter, gradient and
auxiliary arrays (with ``grad_req='add'`` gradients of successive buckets accumulate), and
they share its optimizer. A batch's ``bucket_key`` (default: the default key) picks the module.

``import symgraph`` puts the class on ``symgraph.module`` (``sg.mod.BucketingModule``), since
this module builds on that one.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import module as _module
from ..core.base import BindError
from .base_module import BaseModule
from ..core.context import cpu
from ..core.log import LOGGER
from ..core.name import NameManager

SymGen = Callable[[Any], tuple]


class BucketingModule(BaseModule):
    """One Module per bucket key over shared parameters (MXNet's ``mx.mod.BucketingModule``)."""

    def __init__(self, sym_gen: SymGen, default_bucket_key: Any = None, logger: Any = LOGGER,
                 context: Any = None, work_load_list: Optional[Sequence[float]] = None,
                 fixed_param_names: Optional[Sequence[str]] = None,
                 state_names: Optional[Sequence[str]] = None, group2ctxs: Any = None,
                 compression_params: Any = None) -> None:
        super().__init__(logger)
        if default_bucket_key is None:
            raise BindError("BucketingModule: default_bucket_key is required")
        if compression_params:
            raise BindError("BucketingModule: compression_params are not supported")
        self._group2ctxs = group2ctxs
        self._sym_gen, self._default_bucket_key = sym_gen, default_bucket_key
        self._context = context or cpu()
        self._work_load_list = work_load_list
        self._fixed_param_names = list(fixed_param_names or [])
        self._state_names = list(state_names or [])
        self._buckets: dict[Any, Any] = {}
        self._curr_module: Any = None
        self._curr_bucket_key: Any = None
        self._bind_args: dict = {}

    def _new_module(self, key: Any) -> Any:
        # Fresh automatic names per call, as MXNet's: every bucket's unnamed layers are
        # ``embedding0``..., so their parameters are the default bucket's
        with NameManager():
            symbol, data_names, label_names = self._sym_gen(key)
        return _module.Module(symbol, data_names, label_names, context=self._context,
                              logger=self.logger, work_load_list=self._work_load_list,
                              fixed_param_names=self._fixed_param_names,
                              group2ctxs=self._group2ctxs,
                              state_names=self._state_names)

    # -- what the current bucket's module says -------------------------------------------------
    @property
    def symbol(self) -> Any:
        return self._curr_module.symbol

    @property
    def data_names(self) -> list[str]:
        return self._curr_module.data_names

    @property
    def output_names(self) -> list[str]:
        return self._curr_module.output_names

    @property
    def data_shapes(self) -> list:
        return self._curr_module.data_shapes

    @property
    def label_shapes(self) -> list:
        return self._curr_module.label_shapes

    @property
    def output_shapes(self) -> list:
        return self._curr_module.output_shapes

    # -- binding ----------------------------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False,
             shared_module: Any = None, grad_req: str = "write") -> None:
        """Bind the default bucket's module (the one that owns the parameters)."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise BindError("BucketingModule.bind: shared_module is not supported")
        self._bind_args = {"for_training": for_training, "inputs_need_grad": inputs_need_grad,
                           "grad_req": grad_req}
        # a module made by load() (its saved symbol, its parameters pending) or a new one
        module = self._buckets.get(self._default_bucket_key) or \
            self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, **self._bind_args)
        self._buckets = {self._default_bucket_key: module}
        self._curr_module, self._curr_bucket_key = module, self._default_bucket_key
        self.binded = True
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        if module.params_initialized:
            self._sync_params_state()

    def switch_bucket(self, bucket_key: Any, data_shapes: Any, label_shapes: Any = None) -> None:
        """Make ``bucket_key``'s module current, binding it over the shared parameters the
        first time."""
        if not self.binded:
            raise BindError("switch_bucket: call bind() first")
        if bucket_key not in self._buckets:
            default = self._buckets[self._default_bucket_key]
            module = self._new_module(bucket_key)
            module.bind(data_shapes, label_shapes, shared_module=default, **self._bind_args)
            if default.optimizer_initialized:
                module.borrow_optimizer(default)
            for mon in getattr(self, "_monitors", []):  # installed before this bucket existed
                module.install_monitor(mon)
            self._buckets[bucket_key] = module
        self._curr_module, self._curr_bucket_key = self._buckets[bucket_key], bucket_key

    # -- parameters and optimizer (the default bucket's) ------------------------------------
    def init_params(self, *args: Any, **kwargs: Any) -> None:
        self._buckets[self._default_bucket_key].init_params(*args, **kwargs)
        self._sync_params_state()

    def set_params(self, *args: Any, **kwargs: Any) -> None:
        self._buckets[self._default_bucket_key].set_params(*args, **kwargs)
        self._sync_params_state()

    def _sync_params_state(self) -> None:
        default = self._buckets[self._default_bucket_key]
        for module in self._buckets.values():
            module.params_initialized = default.params_initialized
            module._arg_params, module._aux_params = default._arg_params, default._aux_params
        self.params_initialized = default.params_initialized

    def get_params(self) -> tuple[dict, dict]:
        return self._buckets[self._default_bucket_key].get_params()

    def init_optimizer(self, *args: Any, **kwargs: Any) -> None:
        default = self._buckets[self._default_bucket_key]
        default.init_optimizer(*args, **kwargs)
        for module in self._buckets.values():
            if module is not default:
                module.borrow_optimizer(default)
        self.optimizer_initialized = True

    # -- computation (the batch's bucket) -----------------------------------------------------
    def forward(self, data_batch: Any, is_train: Optional[bool] = None) -> None:
        key = getattr(data_batch, "bucket_key", None)
        key = self._default_bucket_key if key is None else key
        self.switch_bucket(key, getattr(data_batch, "provide_data", None)
                           or self._curr_module.data_shapes,
                           getattr(data_batch, "provide_label", None)
                           or self._curr_module.label_shapes)
        self._curr_module.forward(data_batch, is_train)

    def backward(self, out_grads: Any = None) -> None:
        self._curr_module.backward(out_grads)

    def update(self) -> None:
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        return self._curr_module.get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        return self._curr_module.get_input_grads(merge_multi_context)

    def get_states(self, merge_multi_context: bool = True) -> list:
        return self._curr_module.get_states(merge_multi_context)

    def set_states(self, states: Any = None, value: Any = None) -> None:
        self._curr_module.set_states(states, value)

    def update_metric(self, eval_metric: Any, labels: Sequence, pre_sliced: bool = False,
                      pad: int = 0) -> None:
        self._curr_module.update_metric(eval_metric, labels, pre_sliced, pad)

    def install_monitor(self, mon: Any) -> None:
        """Install ``mon`` on every bucket's module, and on buckets bound later."""
        self._monitors = getattr(self, "_monitors", []) + [mon]
        for module in self._buckets.values():
            module.install_monitor(mon)

    # -- checkpoints ----------------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """MXNet's files: ``prefix-%04d.params``, each bucket's ``prefix-<key>-symbol.json``
        and ``prefix.buckets`` (the keys, an int32 array).

        >>> mod.save_checkpoint("lm", 3)    # doctest: +SKIP
        """
        from ..runtime import ndfile
        from .checkpoint import save_params
        if not self._buckets:
            raise BindError("save_checkpoint: an empty BucketingModule (bind it first)")
        save_params("%s-%04d.params" % (prefix, epoch), *self.get_params())
        for key, module in self._buckets.items():
            module.symbol.save("%s-%s-symbol.json" % (prefix, key))
        ndfile.save("%s.buckets" % prefix, [np.array(list(self._buckets), np.int32)])

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen: Optional[SymGen] = None,
             default_bucket_key: Any = None, **kwargs: Any) -> "BucketingModule":
        """A BucketingModule over :meth:`save_checkpoint`'s files: the default bucket runs its
        saved symbol, other buckets come from ``sym_gen``; parameters are set on ``bind``."""
        from ..frontend import symbol as sym
        from ..runtime import ndfile
        from .checkpoint import load_params
        if sym_gen is None or default_bucket_key is None:
            raise BindError("BucketingModule.load: sym_gen and default_bucket_key are required")
        keys = [int(k) for k in ndfile.load("%s.buckets" % prefix)[0][0].ravel()]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        if default_bucket_key in keys:
            with NameManager():
                _, data_names, label_names = sym_gen(default_bucket_key)
            mod._buckets[default_bucket_key] = _module.Module(
                sym.load("%s-%s-symbol.json" % (prefix, default_bucket_key)), data_names,
                label_names, context=mod._context, fixed_param_names=mod._fixed_param_names,
                state_names=mod._state_names, logger=mod.logger)
        else:
            mod._buckets[default_bucket_key] = mod._new_module(default_bucket_key)
        mod._buckets[default_bucket_key].set_params(*load_params("%s-%04d.params"
                                                                 % (prefix, epoch)))
        mod.params_initialized = True
        return mod


_module.BucketingModule = BucketingModule
