"""What a :class:`~symgraph.training.module.Module` holds besides its executors' runs: its
parameters (``init_params``, ``set_params``, ``get_params``, with name and shape checks before
anything is written) and its states (MXNet's ``state_names``: inputs that are neither data nor
parameters, such as an RNN's begin states, kept between forwards, set with ``set_states`` and
read with ``get_states``; they get no gradient and no initializer), and their files
(``save_checkpoint``, optimizer states, ``Module.load``).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from . import initializer as _init
from ..core.base import BindError, MissingParamError
from ..core.context import cpu
from ..runtime.ndarray import NDArray, array

__all__ = ["ModuleParams"]


class ModuleParams:
    """Parameters, states and checkpoints of a module bound to ``self._execs`` (``self._exec``
    the first); the module supplies the optimizer (``_init_optimizer``, ``_updater``)."""

    _param_names: list[str]
    _aux_names: list[str]
    _state_names: list[str]
    _execs: list[Any]
    _exec: Any
    _symbol: Any
    binded: bool
    params_initialized: bool
    _arg_params: Optional[dict]
    _aux_params: Optional[dict]
    _updater: Any
    optimizer_initialized: bool


    def init_params(self, initializer: Any = _init.Uniform(0.01),
                    arg_params: Optional[Mapping] = None, aux_params: Optional[Mapping] = None,
                    allow_missing: bool = False, force_init: bool = False,
                    allow_extra: bool = False) -> None:
        """Fill parameters: given arrays first, the initializer for the rest; with
        ``initializer=None`` (MXNet's ``set_params(allow_missing=True)``) the rest keep
        their values, e.g. a ``softmax_label`` that ``label_names=None`` made a parameter."""
        if self.params_initialized and not force_init:
            return
        if not self.binded:
            raise BindError("init_params: call bind() first")
        if initializer is None and arg_params is None:
            raise BindError("init_params: initializer=None and no arg_params: nothing would "
                            f"fill the parameters {self._param_names}")
        initializer = _init.create(initializer) if initializer is not None else None
        self._check_params(arg_params, aux_params, allow_missing, allow_extra)
        attrs = self._symbol.attr_dict()
        for names, given, target in ((self._param_names, arg_params, self._exec.arg_dict),
                                     (self._aux_names, aux_params, self._exec.aux_dict)):
            for name in names:
                if given is not None and name in given:
                    target[name][:] = given[name]
                elif initializer is not None:
                    initializer(_init.InitDesc(name, attrs.get(name, {})), target[name])
        self.params_initialized = True
        self._arg_params, self._aux_params = self.get_params()

    def _check_params(self, arg_params: Optional[Mapping], aux_params: Optional[Mapping],
                      allow_missing: bool, allow_extra: bool) -> None:
        """Refuse names or shapes that do not belong to this network, before writing."""
        for kind, names, given, target in (
                ("argument", self._param_names, arg_params, self._exec.arg_dict),
                ("aux state", self._aux_names, aux_params, self._exec.aux_dict)):
            if given is None:
                continue
            missing = [n for n in names if n not in given]
            if missing and not allow_missing:
                raise MissingParamError(f"set_params: {kind}s {missing} are missing")
            extra = sorted(set(given) - set(names))
            if extra and not allow_extra:
                raise BindError(f"set_params: {extra} are not {kind}s of this network; its "
                                f"{kind}s are {names}")
            for n in names:
                if n in given and tuple(given[n].shape) != target[n].shape:
                    raise BindError(f"set_params: {kind} {n} has shape "
                                    f"{tuple(given[n].shape)}, the network needs "
                                    f"{target[n].shape}")

    def set_params(self, arg_params: Mapping, aux_params: Optional[Mapping] = None,
                   allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Copy parameters in; mismatched names or shapes raise ``BindError``."""
        if not self.binded:
            self._arg_params, self._aux_params = dict(arg_params), dict(aux_params or {})
            self.params_initialized = True
            return
        self._check_params(arg_params, aux_params or {}, allow_missing, allow_extra)
        self.init_params(None, arg_params, aux_params or {}, allow_missing, force_init,
                         allow_extra)

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """Copies of ``(arg_params, aux_params)`` on the CPU."""
        if not self.binded:
            return dict(self._arg_params or {}), dict(self._aux_params or {})
        arg = {n: array(self._exec.arg_dict[n], cpu()) for n in self._param_names}
        aux = {n: array(self._exec.aux_dict[n], cpu()) for n in self._aux_names}
        return arg, aux

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False) -> None:
        """``prefix-symbol.json``, ``prefix-%04d.params`` and, if asked, ``prefix-%04d.states``."""
        from .checkpoint import save_checkpoint
        if save_optimizer_states and not self.optimizer_initialized:
            raise BindError("save_checkpoint: no optimizer states before init_optimizer()")
        save_checkpoint(prefix, epoch, self._symbol, *self.get_params())
        if save_optimizer_states:
            self.save_optimizer_states("%s-%04d.states" % (prefix, epoch))

    def save_optimizer_states(self, fname: str) -> None:
        """Write optimizer states and update counts: named arrays in the ``.params`` format."""
        from .checkpoint import save_arrays
        if not self.optimizer_initialized:
            raise BindError("save_optimizer_states: call init_optimizer() first")
        save_arrays(fname, self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Restore states written by :meth:`save_optimizer_states`; DataError names a bad file."""
        from .checkpoint import load_optimizer_states
        if not self.optimizer_initialized:
            raise BindError("load_optimizer_states: call init_optimizer() first")
        load_optimizer_states(fname, self._updater)

    def init_optimizer(self, *args: Any, **kwargs: Any) -> None:
        """As :meth:`_init_optimizer`, then restore states from :meth:`load` if it was asked to."""
        self._init_optimizer(*args, **kwargs)
        pending = getattr(self, "_pending_states", None)
        if pending:
            self.load_optimizer_states(pending)
            self._pending_states = None

    @classmethod
    def load(cls, prefix: str, epoch: int, load_optimizer_states: bool = False,
             **kwargs: Any) -> Any:
        """A module over a saved symbol whose parameters are set on ``bind`` (and optimizer
        states on ``init_optimizer`` with ``load_optimizer_states``)."""
        from .checkpoint import load_checkpoint
        sym, arg, aux = load_checkpoint(prefix, epoch)
        mod = cls(sym, **kwargs)
        mod.set_params(arg, aux)
        if load_optimizer_states:
            mod._pending_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    @property
    def _total_exec_bytes(self) -> int:
        """Bytes of the arrays the bound executors hold (arguments, gradients, aux states,
        outputs), each counted once: MXNet's measure of what a bind allocated."""
        seen: dict[int, int] = {}
        for exe in self._execs:
            for group in (exe.arg_dict, exe.grad_dict, exe.aux_dict):
                for a in group.values():
                    seen[id(a)] = a.size * a.dtype.itemsize
            for a in exe.outputs:
                seen[id(a)] = a.size * a.dtype.itemsize
        return sum(seen.values())

    # -- states ------------------------------------------------------------------------------
    def get_states(self, merge_multi_context: bool = True) -> list:
        """The state arrays, in ``state_names`` order; with ``merge_multi_context=False``
        each as the list of its per-device parts.

        >>> mod.get_states()[0].shape    # doctest: +SKIP
        (5, 20)
        """
        self._check_states("get_states")
        parts = [[exe.arg_dict[n] for exe in self._execs] for n in self._state_names]
        if not merge_multi_context:
            return parts
        return [p[0] if len(p) == 1 else array(np.concatenate([a.asnumpy() for a in p]),
                                                 cpu(), p[0].dtype) for p in parts]

    def set_states(self, states: Optional[Sequence[Any]] = None,
                   value: Optional[float] = None) -> None:
        """Set every state to ``value``, or each to ``states[i]``: one array for the whole
        batch (cut along axis 0 across the devices) or a list of per-device parts, as
        ``get_states(merge_multi_context=False)`` returns.

        >>> mod.set_states(value=0)    # doctest: +SKIP
        """
        self._check_states("set_states")
        if (states is None) == (value is None):
            raise BindError("set_states: give exactly one of states and value")
        if value is not None:
            for exe in self._execs:
                for n in self._state_names:
                    exe.arg_dict[n][:] = value
            return
        if len(states) != len(self._state_names):
            raise BindError(f"set_states: {len(states)} states for state names "
                            f"{self._state_names}")
        pairs = []  # every (target, part) checked before any is written
        for name, given in zip(self._state_names, states):
            targets = [exe.arg_dict[name] for exe in self._execs]
            if not isinstance(given, (list, tuple)):
                host = given.asnumpy() if isinstance(given, NDArray) else np.asarray(given)
                cuts = np.cumsum([t.shape[0] for t in targets])[:-1]
                given = np.split(host, cuts, axis=0)
            if len(given) != len(targets):
                raise BindError(f"set_states: state {name}: {len(given)} parts for "
                                f"{len(targets)} devices")
            for target, part in zip(targets, given):
                if tuple(part.shape) != target.shape:
                    raise BindError(f"set_states: state {name} has shape "
                                    f"{tuple(part.shape)}, the bound state {target.shape}")
                pairs.append((target, part))
        for target, part in pairs:
            target[:] = part

    def _check_states(self, what: str) -> None:
        if not self.binded:
            raise BindError(f"{what}: call bind() first")
