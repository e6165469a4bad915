"""``gluon.Trainer``: applies an optimizer to a set of Parameters after ``backward()``.

It reuses the optimizers of ``sg.optimizer`` (their update rules are data), through an
``Updater`` per context: on the CPU the numpy update, on the GPU with float32 weights (or narrow
ones under ``multi_precision``) the fused multi-tensor update of
``symgraph.runtime.cuda.optimizer`` (one kernel launch for all parameters).
Gradients of several contexts are summed by a kvstore before the update (``allreduce_grads``);
with ``update_on_kvstore`` the store applies the optimizer (see :mod:`.trainer_kv` for MXNet's
rules); distributed kvstores are refused by name.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..training import optimizer as _opt
from ..core.base import AttrError, DataError, ExecutionError, MissingParamError
from .parameter import VERSION, DeferredInitializationError, Parameter
from .parameter_dict import ParameterDict
from .trainer_kv import ContextCounts, UpdateOnKVStoreError, check_spec, create_store


def _param_list(params: Any) -> list[Parameter]:
    if isinstance(params, (ParameterDict, Mapping)):
        params = list(params.values())
    if not isinstance(params, (list, tuple)):
        raise AttrError(f"Trainer: params must be a ParameterDict, a dict or a list of "
                        f"Parameters, got {type(params).__name__}")
    out: list[Parameter] = []
    for p in params:
        if not isinstance(p, Parameter):
            raise AttrError(f"Trainer: params must contain Parameters, got "
                            f"{type(p).__name__}")
        if all(q is not p for q in out):
            out.append(p)
    return out


def _fresh(arr: Any) -> bool:
    """Whether a backward() wrote this array's gradient since the last step (MXNet's
    ``_fresh_grad``; ``attach_grad`` clears it with the new buffer)."""
    return arr._fresh_grad


def _all_fresh(arrays: Sequence[Any]) -> bool:
    for a in arrays:
        if not _fresh(a):
            return False
    return True


class Trainer:
    """MXNet's ``gluon.Trainer(params, optimizer, optimizer_params, kvstore)``.

    Examples
    --------
    >>> net = sg.gluon.nn.Dense(1, in_units=1, use_bias=False, weight_initializer='ones')
    >>> net.initialize()
    >>> trainer = sg.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    >>> with sg.autograd.record():
    ...     y = net(sg.nd.array([[2]]))  # y = w x: dy/dw = 2
    >>> y.backward()
    >>> trainer.step(batch_size=1)
    >>> net.weight.data()  # 1 - 0.1 * 2
    [[0.8]]
    <NDArray 1x1 @cpu(0)>
    """

    def __init__(self, params: Any, optimizer: Any, optimizer_params: Optional[dict] = None,
                 kvstore: Any = "device", compression_params: Any = None,
                 update_on_kvstore: Optional[bool] = None) -> None:
        check_spec(kvstore)
        if compression_params is not None:
            raise AttrError("Trainer: compression_params is not supported (gradients are "
                            "exchanged uncompressed)")
        self._params = _param_list(params)
        names = [p.name for p in self._params]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise AttrError(f"Trainer: two different Parameters are named {dup}")
        self._param2idx = {p.name: i for i, p in enumerate(self._params)}
        optimizer_params = dict(optimizer_params or {})
        self._scale = float(optimizer_params.get("rescale_grad", 1.0))
        self._optimizer = self._make_optimizer(optimizer, optimizer_params)
        self._ctx_updaters: dict[Any, Any] = {}   # context -> Updater
        self._counts = ContextCounts()
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_updater = _opt.get_updater(self._optimizer)  # the store's, kept over resets
        self._reset_kvstore()
        for p in self._params:
            p._set_trainer(self)
        # (parameter VERSION, _gather(), its arrays on the one context or None)
        self._gathered: Optional[tuple[int, list, Optional[tuple]]] = None
        self._amp_loss_scaler: Any = None  # sg.amp.init_trainer: skip steps that overflow
        self._amp_original_scale = self._scale

    def _make_optimizer(self, optimizer: Any, params: dict) -> _opt.Optimizer:
        idx2name = {i: p.name for i, p in enumerate(self._params)}
        if isinstance(optimizer, _opt.Optimizer):
            if params:
                raise AttrError("Trainer: optimizer_params must be None when optimizer is "
                                "an Optimizer instance (set them on the instance)")
            optimizer.idx2name = idx2name
        else:
            optimizer = _opt.create(optimizer, param_idx2name=idx2name, **params)
        # Gluon takes multipliers from the Parameters only (biases get weight decay too), at
        # each step: a multiplier changed after this keeps effect, as in MXNet.
        optimizer.param_dict = dict(enumerate(self._params))
        return optimizer

    # -- properties ---------------------------------------------------------------------------
    @property
    def optimizer(self) -> _opt.Optimizer:
        return self._optimizer

    @property
    def learning_rate(self) -> float:
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr: float) -> None:
        """Set a new learning rate (an AttrError when an lr_scheduler drives it)."""
        self._optimizer.set_learning_rate(lr)

    @property
    def _updaters(self) -> list:
        """The per-context updaters in context order (MXNet's list; made at the first step)."""
        return list(self._ctx_updaters.values())

    # -- the kvstore --------------------------------------------------------------------------
    def _reset_kvstore(self) -> None:
        """Drop the store: its copy of the weights is stale once a Parameter's value was set
        (the Parameter calls this). The next step makes a new one; optimizer states stay."""
        self._kv_initialized = False
        self._kvstore: Any = None
        self._update_on_kvstore: Optional[bool] = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self) -> None:
        """Choose the store and ``update_on_kvstore`` (see :mod:`.trainer_kv`)."""
        config = self._kvstore_params
        ctxs = self._params[0].list_ctx() if self._params else []
        store, update = create_store(config["kvstore"], config["update_on_kvstore"], ctxs,
                                     [p.shape or () for p in self._params])
        if store is not None and update:
            store._set_updater(self._kv_updater)
        self._kvstore, self._update_on_kvstore = store, update
        self._kv_initialized = True

    def _kv_ready(self) -> None:
        """Make the store if needed and give it the values of the parameters it lacks
        (context 0's value, to every context), as MXNet's ``_init_params``."""
        if not self._kv_initialized:
            self._init_kvstore()
        waiting = []
        for p in self._params_to_init if self._kvstore is not None else ():
            try:
                arrays = p.list_data()
            except (DeferredInitializationError, MissingParamError):
                waiting.append(p)
                continue
            self._kvstore.broadcast(self._param2idx[p.name], arrays[0], arrays)
        self._params_to_init = waiting

    # -- the step -----------------------------------------------------------------------------
    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """``allreduce_grads()`` then ``update(batch_size)``: gradients are scaled by
        ``rescale_grad / batch_size``."""
        self._check_batch(batch_size)
        self._optimizer.rescale_grad = self._scale / batch_size
        items = self._gather()
        if not self._kv_initialized or self._params_to_init:
            self._kv_ready()
        if self._steady_update():
            return
        if self._update_on_kvstore:
            self._kv_update(items, ignore_stale_grad)
            return
        self._allreduce(items)
        self._update(items, ignore_stale_grad)

    def _steady_update(self) -> bool:
        """The update of a step on one context where every gradient is fresh (the loop's
        usual step): the gathered arrays are used as they are, without the per-parameter
        checks of :meth:`_update`. False (nothing done) whenever those checks could matter:
        a stale gradient, several contexts, a loss scaler, a gradient buffer replaced."""
        got = self._gathered
        if got is None or got[2] is None or self._amp_loss_scaler is not None \
                or self._kvstore is not None:
            return False
        ctx, indices, weights, grads = got[2]
        for w, g in zip(weights, grads):
            if not w._fresh_grad or w._grad is not g:  # (a replaced buffer: not gathered)
                return False
        self._updater(ctx, weights).update_multi(indices, grads, weights)
        for w in weights:
            w._fresh_grad = False  # stale until the next backward() writes it
        return True

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients over its contexts (a no-op on one context)."""
        self._refuse_on_kvstore("allreduce_grads")
        self._allreduce(self._gather())

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """The update alone (after :meth:`allreduce_grads`)."""
        self._refuse_on_kvstore("update")
        self._check_batch(batch_size)
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(self._gather(), ignore_stale_grad)

    def _refuse_on_kvstore(self, what: str) -> None:
        self._kv_ready()
        if self._update_on_kvstore:
            raise UpdateOnKVStoreError(
                f"Trainer.{what}(): the kvstore updates the parameters (update_on_kvstore); "
                f"create the Trainer with update_on_kvstore=False to call it")

    @staticmethod
    def _check_batch(batch_size: Any) -> None:
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise AttrError(f"Trainer.step: batch_size must be a positive int, got "
                            f"{batch_size!r}")

    def _gather(self) -> list[tuple[int, Parameter, list]]:
        """``(index, parameter, its arrays by context)`` of every trainable parameter (kept
        until a Parameter's arrays or grad_req change)."""
        got = self._gathered
        if got is not None and got[0] == VERSION[0]:
            return got[1]
        items = self._gather_now()
        one = None  # (context, indices, weights, gradients) when there is one context
        if items and len(items[0][2]) == 1:
            weights = [arrays[0] for _, _, arrays in items]
            one = (weights[0]._ctx, [i for i, _, _ in items], weights,
                   [w._grad for w in weights])
        self._gathered = (VERSION[0], items, one)
        return items

    def _gather_now(self) -> list[tuple[int, Parameter, list]]:
        items = [(i, p, p.list_data()) for i, p in enumerate(self._params)
                 if p.grad_req != "null"]
        if not items:  # only constants (grad_req 'null'): a step changes nothing, as MXNet
            return items
        ctxs = [a.context for a in items[0][2]]
        for _, p, arrays in items:
            if len(arrays) != len(ctxs) or [a.context for a in arrays] != ctxs:
                raise ExecutionError(f"Trainer.step: Parameter {p.name!r} lives on "
                                     f"{p.list_ctx()}, the others on {ctxs}")
        return items

    def _allreduce(self, items: Sequence[tuple[int, Parameter, list]]) -> None:
        store = self._kvstore
        for i, _, arrays in items:
            grads = [a.grad for a in arrays]
            if store is not None:
                store.pushpull(i, grads)
                continue
            if len(arrays) < 2:
                continue
            total = sum(g.asnumpy().astype(np.float64) for g in grads)
            for g in grads:
                g[:] = total.astype(g.dtype)

    def _kv_update(self, items: Sequence[tuple[int, Parameter, list]],
                   ignore_stale_grad: bool) -> None:
        """The store sums each gradient, updates its weight and writes it to every context."""
        items = self._fresh_items(items, ignore_stale_grad)
        if not items or self._skip_overflow(items):
            return
        for i, _, arrays in items:
            self._kvstore.pushpull(i, [a.grad for a in arrays], out=arrays)
            for w in arrays:
                w._fresh_grad = False

    def _update(self, items: Sequence[tuple[int, Parameter, list]],
                ignore_stale_grad: bool) -> None:
        items = self._fresh_items(items, ignore_stale_grad)
        if not items or self._skip_overflow(items):
            return
        indices = [i for i, _, _ in items]
        ctxs = [a._ctx for a in items[0][2]]
        first = dict(self._optimizer._index_update_count) if len(ctxs) > 1 else {}
        for k, ctx in enumerate(ctxs):
            if len(ctxs) > 1:
                self._counts.select(self._optimizer, ctx, first)
            weights = [arrays[k] for _, _, arrays in items]
            grads = [w._grad for w in weights]
            self._updater(ctx, weights).update_multi(indices, grads, weights)
            for w in weights:
                w._fresh_grad = False  # stale until the next backward() writes it
        if len(ctxs) > 1:  # context 0's counts are the ones saved and shown
            self._counts.select(self._optimizer, ctxs[0], first)

    def _fresh_items(self, items: Sequence[tuple[int, Parameter, list]],
                     ignore_stale_grad: bool) -> list:
        """The items whose gradients backward() wrote since the last step (an error for a
        stale one unless ``ignore_stale_grad``)."""
        stale = [p.name for _, p, arrays in items if not _all_fresh(arrays)]
        if stale and not ignore_stale_grad:
            if len(stale) == len(items):
                raise ExecutionError(
                    f"Trainer.step: no gradients: none of the {len(items)} Parameters "
                    f"({stale[0]!r}...) got one from backward() since the last step. Call "
                    f"loss.backward() inside autograd.record() first")
            raise ExecutionError(
                f"Trainer.step: gradient of Parameter {stale[0]!r} has not been updated by "
                f"backward since last step ({len(stale)} such Parameters). If you are "
                f"intentionally only using a subset, call step with ignore_stale_grad=True")
        return [it for it in items if it[1].name not in stale] if stale else list(items)

    def _skip_overflow(self, items: Sequence[tuple[int, Parameter, list]]) -> bool:
        """True (and the gradients spent) when the AMP loss scaler finds an overflow."""
        scaler = self._amp_loss_scaler
        if scaler is None or not scaler.has_overflow([p for _, p, _ in items]):
            return False
        for _, _, arrays in items:
            for w in arrays:
                w._fresh_grad = False
        return True

    def _updater(self, ctx: Any, weights: Sequence[Any]) -> Any:
        """The context's updater: fused on the GPU with float32 weights, or float16/bfloat16 ones
        under ``multi_precision`` (through float32 master copies); numpy otherwise."""
        upd = self._ctx_updaters.get(ctx)
        if upd is None:
            upd = None
            one = len({np.dtype(w.dtype) for w in weights}) == 1
            if ctx.device_type == "gpu" and self._optimizer.fused and one and (
                    weights[0].dtype == np.float32 or self._optimizer._master(weights[0])):
                from ..runtime.cuda.optimizer import FusedUpdater
                # stream=None: the legacy default stream, ordered after the backward program's
                # (blocking) stream and before the next step's work, without a host sync.
                upd = FusedUpdater(self._optimizer, ctx.device_id, stream=None)
            self._ctx_updaters[ctx] = upd or _opt.get_updater(self._optimizer)
            upd = self._ctx_updaters[ctx]
        return upd

    # -- states -------------------------------------------------------------------------------
    def save_states(self, fname: str) -> None:
        """Write optimizer states and update counts (``.npz``, no pickle)."""
        from ..training.checkpoint import save_arrays
        self._kv_ready()
        if self._update_on_kvstore:
            save_arrays(fname, self._kv_updater.get_states())
            return
        if not self._ctx_updaters and self._params:  # before the first step: fresh states
            ctx = self._params[0].list_ctx()[0]
            self._updater(ctx, [p.data(ctx) for p in self._params])
        states = self._updaters[0].get_states() if self._ctx_updaters else {}
        save_arrays(fname, states)

    def load_states(self, fname: str) -> None:
        """Restore :meth:`save_states` output into every context's updater."""
        from ..training.checkpoint import load_arrays
        arrays = load_arrays(fname)
        for key in arrays:
            index = key.split(":")[1] if ":" in key else None
            if index is None or not index.isdigit() or int(index) >= len(self._params):
                raise DataError(f"{fname}: entry {key!r} does not belong to this Trainer's "
                                f"{len(self._params)} parameters")
        self._check_state_shapes(fname, arrays)
        self._kv_ready()
        self._counts.forget()
        if self._update_on_kvstore:
            self._kv_updater.set_states(arrays)
            return
        ctxs = self._params[0].list_ctx() if self._params else []
        for ctx in ctxs:
            weights = [p.data(ctx) for p in self._params]
            self._updater(ctx, weights).set_states(arrays)

    def _check_state_shapes(self, fname: str, arrays: Mapping[str, np.ndarray]) -> None:
        """Each saved state must have the shape of a fresh state of its parameter, so that
        another network's file is refused here, naming the parameter, not at the next step."""
        fresh: dict[int, tuple] = {}
        for key, value in arrays.items():
            kind, index, *rest = key.split(":")
            param = self._params[int(index)]
            if kind != "state" or not rest or not rest[0].isdigit() or param.shape is None \
                    or 0 in param.shape:
                continue  # counts, or a parameter whose shape is still unknown
            if int(index) not in fresh:
                weight = np.zeros(param.shape, param.dtype)
                fresh[int(index)] = self._optimizer.create_state(int(index), weight)
            states = fresh[int(index)]
            want = states[int(rest[0])].shape if int(rest[0]) < len(states) else None
            if want != tuple(value.shape):
                raise DataError(f"{fname}: optimizer state {key!r} has shape "
                                f"{tuple(value.shape)}, parameter '{param.name}' needs "
                                f"{want}; is it another network's file?")
