"""Gluon parameters: :class:`Parameter` and :class:`Constant` (``ParameterDict``:
``parameter_dict.py``).

A parameter holds one NDArray per context, with a gradient attached through ``sg.autograd``
(``attach_grad``), so an imperative forward recorded under ``autograd.record()`` writes its
gradient into :meth:`Parameter.grad`. A shape with zeros is partly unknown: ``initialize`` then
defers the allocation until the first forward has inferred the missing sizes (MXNet's deferred
initialisation).
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..training import initializer as _init
from ..runtime import ndarray as nd
from ..core.base import AttrError, BindError, DataError, MissingParamError, ShapeError
from ..core.context import Context, current_context
from ..core.dtypes import as_dtype

GRAD_REQS = ("write", "add", "null")
# Bumped whenever any Parameter's arrays or grad_req change: a Trainer keeps what it gathers
# from its Parameters (arrays, contexts, trainable set) until this moves (a per-step saving).
VERSION = [0]
CtxArg = Union[None, Context, Sequence[Context]]


class DeferredInitializationError(ShapeError):
    """A parameter's data was asked for before its deferred initialisation could run."""


class StorageTypeError(AttrError, AssertionError):
    """A storage type MXNet does not know (an AssertionError there, so here too)."""


STYPES = ("default", "row_sparse", "csr")  # MXNet's; symgraph stores 'default' only


def _ctx_list(ctx: CtxArg) -> list[Context]:
    if ctx is None:
        return [current_context()]
    return [ctx] if isinstance(ctx, Context) else list(ctx)


def _known(shape: Optional[tuple]) -> bool:
    return shape is not None and all(int(d) > 0 for d in shape)


def merge_shape(name: str, old: Optional[tuple], new: Sequence[int]) -> tuple:
    """``old`` with its unknown (0) sizes filled from ``new``; ShapeError on a conflict."""
    new = tuple(int(d) for d in new)
    if old is None:
        return new
    if len(old) != len(new) or any(a and b and a != b for a, b in zip(old, new)):
        raise ShapeError(f"Parameter '{name}': shape {tuple(old)} cannot become {new}")
    return tuple(a or b for a, b in zip(old, new))


class Parameter:
    """A weight of a Block (MXNet's ``gluon.Parameter``; same arguments and defaults).

    Examples
    --------
    >>> w = sg.gluon.Parameter('w', shape=(2,), init='ones')
    >>> w.initialize()
    >>> w.data()
    [1. 1.]
    <NDArray 2 @cpu(0)>
    >>> w.set_data(sg.nd.array([3, 4]))
    >>> w.data()
    [3. 4.]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, name: str, grad_req: str = "write", shape: Any = None,
                 dtype: Any = np.float32, lr_mult: float = 1.0, wd_mult: float = 1.0,
                 init: Any = None, allow_deferred_init: bool = False,
                 differentiable: bool = True, stype: str = "default",
                 grad_stype: str = "default") -> None:
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in STYPES:
                raise StorageTypeError(f"Parameter '{name}': {what}={value!r} is not a "
                                       f"storage type; MXNet's are {STYPES}")
        if stype != "default" or grad_stype != "default":
            raise AttrError(f"Parameter '{name}': only stype='default' is supported, got "
                            f"stype={stype!r}, grad_stype={grad_stype!r}")
        self.name = name
        self._shape = None if shape is None else (
            (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape))
        self.dtype = as_dtype(dtype)
        self.lr_mult, self.wd_mult = lr_mult, wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self._data: Optional[OrderedDict] = None   # Context -> NDArray
        self._deferred: Optional[tuple] = None      # (init, contexts, default_init, data)
        self._grad_req = "null"
        self.grad_req = grad_req if differentiable else "null"
        self._trainer: Any = None  # the last Trainer given this Parameter

    def _set_trainer(self, trainer: Any) -> None:
        """Remember the Trainer that updates this Parameter (MXNet's name)."""
        self._trainer = trainer

    def _value_changed(self) -> None:
        """A value set from outside the Trainer: a kvstore holding a copy of it is stale."""
        trainer = self._trainer
        if trainer is not None and trainer._update_on_kvstore:
            trainer._reset_kvstore()

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self._shape}, dtype={self.dtype.name})"

    # -- attributes --------------------------------------------------------------------------
    @property
    def shape(self) -> Optional[tuple]:
        return self._shape

    @shape.setter
    def shape(self, new: Sequence[int]) -> None:
        self._shape = merge_shape(self.name, self._shape, new)

    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in GRAD_REQS:
            raise AttrError(f"Parameter '{self.name}': grad_req {req!r} is not one of "
                            f"{GRAD_REQS}")
        if not self._differentiable:
            req = "null"
        self._grad_req = req
        VERSION[0] += 1
        for arr in (self._data or {}).values():
            self._attach(arr)

    def _attach(self, arr: nd.NDArray) -> None:
        """Let autograd write this array's gradient (or stop it: grad_req 'null')."""
        if self._grad_req != "null":
            arr.attach_grad(self._grad_req)
        else:
            arr.attach_grad("null")

    # -- initialisation ----------------------------------------------------------------------
    def initialize(self, init: Any = None, ctx: CtxArg = None, default_init: Any = None,
                   force_reinit: bool = False) -> None:
        """Allocate and fill the data on ``ctx``; defer when the shape is not known yet."""
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. "
                          f"Set force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = None
        VERSION[0] += 1
        init = init if init is not None else self.init
        default_init = default_init if default_init is not None else _init.Uniform()
        self._deferred = (init, _ctx_list(ctx), default_init, None)
        if not _known(self._shape):
            if self.allow_deferred_init:
                return
            raise ShapeError(f"Cannot initialize Parameter '{self.name}' because it has "
                             f"invalid shape: {self._shape}")
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        """Run the initialisation that ``initialize`` deferred (the shape is now known)."""
        if self._deferred is None:
            return
        init, ctxs, default_init, data = self._deferred
        if not _known(self._shape):
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has unknown shape {self._shape}: run a forward "
                f"pass first so that it can be inferred")
        if data is None:
            host = np.zeros(self._shape, self.dtype)
            desc = _init.InitDesc(self.name)
            if init is not None:  # the parameter's own init wins whatever its name (MXNet)
                _init.create(init)._init_weight(desc, host)
            else:  # the name's rule (a bias is zero...); any other name gets the default's
                default = _init.create(default_init)  # weight rule, as in MXNet's Gluon
                if any(desc.endswith(suffix) for suffix, _ in default._by_suffix()):
                    default(desc, host)
                else:
                    default._init_weight(desc, host)
        else:
            host = data
        self._deferred = None
        self._set_arrays(host, ctxs)

    def _set_arrays(self, host: np.ndarray, ctxs: Sequence[Context]) -> None:
        arrays: OrderedDict = OrderedDict()
        for c in ctxs:
            arr = nd.array(host, c, self.dtype)
            self._attach(arr)
            arrays[c] = arr
        self._data = arrays
        VERSION[0] += 1
        self._value_changed()

    def reset_ctx(self, ctx: CtxArg) -> None:
        """Move the data (and a pending initialisation) to other contexts."""
        ctxs = _ctx_list(ctx)
        if self._data is not None:
            self._set_arrays(self._reduce(), ctxs)
        elif self._deferred is not None:
            init, _, default_init, data = self._deferred
            self._deferred = (init, ctxs, default_init, data)
        else:
            raise BindError(f"Cannot reset context for Parameter '{self.name}' because it "
                            f"has not been initialized")

    def _load_init(self, value: Any, ctx: CtxArg, where: str, saved_dtype: bool = False) -> None:
        """Set from a loaded array (checks the shape against what is known). The value is
        cast to the parameter's dtype, or with ``saved_dtype`` the parameter takes the value's
        dtype (MXNet's ``dtype_source='saved'``)."""
        host = value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)
        if self._shape is not None:
            try:
                self._shape = merge_shape(self.name, self._shape, host.shape)
            except ShapeError:
                raise DataError(f"Parameter '{self.name}' in {where} has shape {host.shape}, "
                                f"the network needs {self._shape}") from None
        else:
            self._shape = host.shape
        if saved_dtype and host.dtype != self.dtype:
            self.dtype = as_dtype(host.dtype)
            if self._data is not None:  # the arrays change dtype: rebuild them
                self._set_arrays(host, list(self._data))
                return
        host = host.astype(self.dtype, copy=False)
        if self._data is not None:
            self._value_changed()
            for arr in self._data.values():
                arr[:] = host
            return
        ctxs = _ctx_list(ctx) if ctx is not None or self._deferred is None else \
            self._deferred[1]
        self._deferred = None
        self._set_arrays(host, ctxs)

    # -- data and gradients ------------------------------------------------------------------
    def _check(self, ctx: Optional[Context]) -> OrderedDict:
        if self._data is None:
            if self._deferred is not None:
                raise DeferredInitializationError(
                    f"Parameter '{self.name}' has not been initialized yet because "
                    f"initialization was deferred: its shape {self._shape} is only known "
                    f"after the first forward pass")
            raise MissingParamError(f"Parameter '{self.name}' has not been initialized. "
                                    f"Call initialize() on it or on the Block that owns it")
        if ctx is not None and ctx not in self._data:
            raise BindError(f"Parameter '{self.name}' was not initialized on context {ctx}; "
                            f"it lives on {list(self._data)}")
        return self._data

    def data(self, ctx: Optional[Context] = None) -> nd.NDArray:
        """The value on ``ctx`` (default: the only or the first context)."""
        arrays = self._data
        if arrays is not None and ctx is not None:  # every forward asks: one lookup
            got = arrays.get(ctx)
            if got is not None:
                return got
        arrays = self._check(ctx)
        if ctx is None:
            return next(iter(arrays.values()))
        return arrays[ctx]

    def list_data(self) -> list[nd.NDArray]:
        """The value on every context, in context order."""
        return list(self._check(None).values())

    def grad(self, ctx: Optional[Context] = None) -> nd.NDArray:
        """The gradient buffer on ``ctx``."""
        if self._grad_req == "null":
            raise BindError(f"Cannot get gradient array for Parameter '{self.name}' "
                            f"because grad_req='null'")
        return self.data(ctx).grad

    def list_grad(self) -> list[nd.NDArray]:
        """The gradient buffer on every context."""
        if self._grad_req == "null":
            raise BindError(f"Cannot get gradient arrays for Parameter '{self.name}' "
                            f"because grad_req='null'")
        return [a.grad for a in self.list_data()]

    @property
    def _grad(self) -> Optional[list]:
        """MXNet's private view of the gradient buffers, which its tests and older user code
        read: None without data or with ``grad_req='null'``, else :meth:`list_grad`."""
        if self._data is None or self._grad_req == "null":
            return None
        return self.list_grad()

    def list_ctx(self) -> list[Context]:
        """The contexts the data lives on (or will, once initialised)."""
        if self._data is None:
            if self._deferred is not None:
                return list(self._deferred[1])
            raise MissingParamError(f"Parameter '{self.name}' has not been initialized")
        return list(self._data)

    def set_data(self, data: Any) -> None:
        """Write ``data`` into every copy (or into the pending deferred initialisation)."""
        host = data.asnumpy() if hasattr(data, "asnumpy") else np.asarray(data)
        self.shape = host.shape
        if self._data is None:
            if self._deferred is None:
                raise BindError(f"Parameter '{self.name}' has not been initialized")
            init, ctxs, default_init, _ = self._deferred
            self._deferred = (init, ctxs, default_init, host.astype(self.dtype))
            return
        self._value_changed()
        for arr in self._data.values():
            arr[:] = host

    def zero_grad(self) -> None:
        """Set the gradient buffers to zero."""
        if self._data is None or self._grad_req == "null":
            return
        for arr in self._data.values():
            g = arr.grad
            if g is not None:
                g[:] = 0

    def _reduce(self) -> np.ndarray:
        """The value as one host array (the mean over contexts, as MXNet saves it)."""
        arrays = [a.asnumpy() for a in self._check(None).values()]
        if len(arrays) == 1:
            return arrays[0]
        return (sum(a.astype(np.float64) for a in arrays) / len(arrays)).astype(self.dtype)

    def var(self) -> Any:
        """The symbol variable of this parameter (shape, dtype, multipliers, init). One
        variable while those stay the same, so a graph that reads the parameter several times
        (a recurrent cell unrolled, a shared block) has one argument of its name."""
        from ..frontend import symbol as sym
        init = None if self.init is None or isinstance(self.init, _ValueInit) else \
            _dumps(self.init)
        key = (self._shape, self.dtype, self.lr_mult, self.wd_mult, init)
        got = self.__dict__.get("_var")
        if got is None or got[0] != key:
            got = self._var = (key, sym.var(self.name, shape=self._shape, dtype=self.dtype,
                                            lr_mult=self.lr_mult, wd_mult=self.wd_mult,
                                            init=init))
        return got[1]

    def cast(self, dtype: Any) -> None:
        """Change the dtype, converting the data."""
        self.dtype = as_dtype(dtype)
        if self._data is not None:
            self._set_arrays(self._reduce().astype(self.dtype), list(self._data))


def _dumps(init: Any) -> str:
    return init if isinstance(init, str) else _init.create(init).dumps()


class Constant(Parameter):
    """A parameter that never changes (``grad_req='null'``), initialised to ``value``.

    Examples
    --------
    >>> c = sg.gluon.Constant('c', sg.nd.array([1, 2]))
    >>> c.initialize()
    >>> c.data().asnumpy().tolist(), c.grad_req  # a constant gets no gradient
    ([1.0, 2.0], 'null')
    """

    def __init__(self, name: str, value: Any) -> None:
        # a value that is no NDArray becomes one as MXNet's nd.array makes it: float32
        host = value.asnumpy() if hasattr(value, "asnumpy") else \
            np.asarray(value, dtype=np.float32)
        self.value = host
        super().__init__(name, grad_req="null", shape=host.shape, dtype=host.dtype,
                         init=_ValueInit(host), differentiable=False)

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self._shape}, dtype={self.dtype.name})"


class _ValueInit(_init.Initializer):
    """Fills with a fixed array (a Constant's value); not creatable by name."""

    def __init__(self, value: np.ndarray) -> None:
        super().__init__()
        self.value = value

    def __call__(self, desc: Any, arr: Any) -> None:
        arr[...] = self.value

    def _init_weight(self, name: str, arr: Any) -> None:
        arr[...] = self.value
