"""``ParameterDict`` (parameters by full name, MXNet's ``get``/``select``/``initialize``/
``save``/``load``) and the checked loading shared with ``Block.load_parameters``: every name
and shape is checked before anything is written."""
from __future__ import annotations

import os
import re
from collections import OrderedDict
from typing import Any, Iterator, Optional

import numpy as np

from .. import initializer as _init
from .. import ndarray as nd
from ..base import AttrError, DataError
from ..context import Context
from .parameter import Constant, CtxArg, Parameter

_ATTRS = ("shape", "dtype", "grad_req", "lr_mult", "wd_mult", "init", "allow_deferred_init")


class ParameterDict:
    """Parameters by full name, with a ``prefix`` that :meth:`get` prepends."""

    def __init__(self, prefix: str = "", shared: Optional["ParameterDict"] = None) -> None:
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        body = "\n".join(f"  {p!r}" for p in self.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __contains__(self, key: str) -> bool:
        return key in self._params

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def items(self) -> Any:
        return self._params.items()

    def keys(self) -> Any:
        return self._params.keys()

    def values(self) -> Any:
        return self._params.values()

    @property
    def prefix(self) -> str:
        return self._prefix

    def _lookup(self, name: str) -> Optional[Parameter]:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs: Any) -> Parameter:
        """The parameter ``prefix + name``, created with ``kwargs`` if it does not exist."""
        full = self._prefix + name
        param = self._lookup(full)
        if param is None:
            param = Parameter(full, **kwargs)
            self._params[full] = param
            return param
        for k, v in kwargs.items():
            if k == "shape" and v is not None:
                param.shape = v
            elif k == "dtype" and v is not None and np.dtype(v) != param.dtype:
                raise AttrError(f"Parameter '{full}': dtype {np.dtype(v)} requested, "
                                f"stored {param.dtype}")
        return param

    def get_constant(self, name: str, value: Any = None) -> Constant:
        """The constant ``prefix + name``, created from ``value`` if it does not exist."""
        full = self._prefix + name
        param = self._lookup(full)
        if param is None:
            if value is None:
                raise AttrError(f"No constant named '{full}': give its value")
            param = Constant(full, value)
            self._params[full] = param
        return param

    def update(self, other: "ParameterDict") -> None:
        """Add ``other``'s parameters; a name bound to a different Parameter is an error."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise AttrError(f"Cannot update self with other because they have different "
                                f"Parameters with the same name '{k}'")
            self._params[k] = v

    def select(self, pattern: Optional[str]) -> "ParameterDict":
        """The parameters whose full name matches the regular expression (MXNet's select)."""
        out = ParameterDict(self._prefix)
        regex = re.compile(pattern) if pattern else None
        for k, v in self._params.items():
            if regex is None or regex.match(k):
                out._params[k] = v
        return out

    def initialize(self, init: Any = None, ctx: CtxArg = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialise every parameter; ``init`` is the default for those without their own."""
        default = _init.create(init) if init is not None else _init.Uniform()
        for p in self.values():
            p.initialize(None, ctx, default, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Set every gradient to zero."""
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx: CtxArg) -> None:
        """Move every parameter to ``ctx``."""
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self) -> list[Context]:
        """The contexts of all parameters."""
        out: list[Context] = []
        for p in self.values():
            out += [c for c in p.list_ctx() if c not in out]
        return out

    def setattr(self, name: str, value: Any) -> None:
        """Set attribute ``name`` (e.g. ``grad_req``, ``lr_mult``) of every parameter."""
        if name not in _ATTRS:
            raise AttrError(f"ParameterDict.setattr: unknown attribute {name!r}; "
                            f"known: {list(_ATTRS)}")
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename: str, strip_prefix: str = "") -> None:
        """Write every parameter to ``filename`` (names without ``strip_prefix``)."""
        arrays = {}
        for p in self.values():
            if not p.name.startswith(strip_prefix):
                raise AttrError(f"Prefix '{strip_prefix}' is to be stripped before saving, "
                                f"but Parameter's name '{p.name}' does not start with it")
            arrays[p.name[len(strip_prefix):]] = nd.array(p._reduce(), dtype=p.dtype)
        nd.save(filename, arrays)

    def load(self, filename: str, ctx: CtxArg = None, allow_missing: bool = False,
             ignore_extra: bool = False, restore_prefix: str = "", cast_dtype: bool = False,
             dtype_source: str = "current") -> None:
        """Read parameters saved by :meth:`save` (or MXNet-style ``arg:``/``aux:`` names)."""
        loaded = load_file(filename)
        named = {restore_prefix + _strip_kind(k): v for k, v in loaded.items()}
        load_named(self._params, named, f"file {filename}", ctx, allow_missing, ignore_extra,
                   dtype_rule(cast_dtype, dtype_source))

    def load_dict(self, param_dict: dict, ctx: CtxArg = None, allow_missing: bool = False,
                  ignore_extra: bool = False, restore_prefix: str = "",
                  cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Set parameters from ``{name: array}`` (names as :meth:`save` writes them, or with
        ``arg:``/``aux:``), e.g. ``pd.load_dict(sg.nd.load(f))``; values are cast to each
        parameter's dtype (``cast_dtype=True, dtype_source='saved'``: each parameter takes
        its value's dtype)."""
        named = {restore_prefix + _strip_kind(k): v for k, v in param_dict.items()}
        load_named(self._params, named, "the given dict", ctx, allow_missing, ignore_extra,
                   dtype_rule(cast_dtype, dtype_source))


def _strip_kind(key: str) -> str:
    return key[4:] if key.startswith(("arg:", "aux:")) else key


def load_file(filename: str) -> dict:
    """Arrays by name from a parameter file; DataError naming the file when unreadable."""
    if not os.path.isfile(filename):
        raise DataError(f"parameter file {filename} not found")
    try:
        return dict(nd.load(filename))
    except (OSError, ValueError, KeyError) as exc:
        raise DataError(f"{filename}: cannot read parameters ({exc})") from None


def _brief(names: Any, limit: int = 6) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}] ({len(names)} in all)"


def dtype_rule(cast_dtype: bool, dtype_source: str) -> bool:
    """Whether loaded values set the parameters' dtype (MXNet's ``cast_dtype=True,
    dtype_source='saved'``) rather than being cast to it; AttrError for another source."""
    if dtype_source not in ("current", "saved"):
        raise AttrError(f"dtype_source={dtype_source!r}: must be 'current' or 'saved'")
    return cast_dtype and dtype_source == "saved"


def load_named(params: dict, named: dict, where: str, ctx: CtxArg, allow_missing: bool,
               ignore_extra: bool, saved_dtype: bool = False) -> None:
    """Check every name first (nothing is written on an error), then load; ``saved_dtype``:
    a parameter takes its loaded value's dtype."""
    if not allow_missing:
        missing = [k for k in params if k not in named]
        if missing:
            raise DataError(f"Parameter '{missing[0]}' is missing in {where}, which contains "
                            f"parameters: {_brief(named)}. Is it another network's file?")
    if not ignore_extra:
        extra = [k for k in named if k not in params]
        if extra:
            raise DataError(f"Parameter '{extra[0]}' loaded from {where} is not present in "
                            f"the network, whose parameters are {_brief(params)}. Set "
                            f"ignore_extra=True to ignore it")
    for k, v in named.items():
        p = params.get(k)
        if p is not None and p.shape is not None and not _fits(p.shape, v.shape):
            raise DataError(f"Parameter '{k}' in {where} has shape {tuple(v.shape)}, the "
                            f"network needs {p.shape}")
    for k, v in named.items():
        if k in params:
            if saved_dtype and params[k].dtype != v.dtype:
                params[k].cast(v.dtype)
            params[k]._load_init(v, ctx, where)


def _fits(want: tuple, got: tuple) -> bool:
    return len(want) == len(got) and all(a in (0, b) for a, b in zip(want, got))
