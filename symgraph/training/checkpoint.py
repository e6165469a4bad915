"""Checkpoints as in MXNet 1.x (``sg.model``'s functions; ``Module`` and Gluon save through them).

``save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)`` writes ``prefix-symbol.json``
and ``prefix-%04d.params``; the parameter file is MXNet's NDArray-list format (``symgraph.ndfile``)
whose names carry MXNet's ``arg:``/``aux:`` prefixes, so checkpoints move both ways between
MXNet 1.x and symgraph; symgraph's older ``.npz`` parameter files still load. Both files are
written through ``fileio.atomic_write``, so a crash never leaves a half-written checkpoint.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional

import numpy as np

from ..runtime import ndfile
from ..core.base import DataError
from ..runtime.ndarray import NDArray
from ..core.context import cpu

__all__ = ["save_checkpoint", "load_checkpoint", "save_params", "load_params", "save_arrays",
           "load_arrays", "load_optimizer_states", "checkpoint_names"]


def save_arrays(fname: str, arrays: Mapping[str, Any]) -> None:
    """Write named arrays in MXNet's NDArray-list format, atomically."""
    ndfile.save_dict(fname, dict(arrays))


def load_arrays(fname: str, what: str = "array file") -> dict[str, np.ndarray]:
    """Read named arrays (NDArray-list format or symgraph's older ``.npz``; no pickle)."""
    return ndfile.load_dict(fname, what)


def save_params(fname: str, arg_params: Mapping[str, Any], aux_params: Mapping[str, Any]) -> None:
    """Write parameters with MXNet's ``arg:``/``aux:`` name prefixes, args first (atomically)."""
    payload = {f"arg:{k}": v for k, v in arg_params.items()}
    payload.update({f"aux:{k}": v for k, v in aux_params.items()})
    save_arrays(fname, payload)


def load_params(fname: str, epoch: Optional[int] = None
                ) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """Read :func:`save_params` output (or MXNet's): ``(arg_params, aux_params)`` as CPU
    NDArrays. With ``epoch``, ``fname`` is a checkpoint prefix (MXNet's
    ``load_params(prefix, epoch)`` reads ``prefix-%04d.params``). MXNet's loader skips names
    without a prefix; symgraph refuses them."""
    if epoch is not None:
        fname = checkpoint_names(fname, epoch)[1]
    arg, aux = {}, {}
    for key, value in load_arrays(fname, "parameter file").items():
        kind, _, name = key.partition(":")
        if kind not in ("arg", "aux") or not name:
            raise DataError(f"{fname}: key {key!r} lacks an 'arg:' or 'aux:' prefix")
        (arg if kind == "arg" else aux)[name] = NDArray(value, cpu())
    return arg, aux


def load_optimizer_states(fname: str, updater: Any) -> None:
    """Restore ``updater``'s states from a ``.states`` file; any problem, including states
    that do not fit the optimizer, is a DataError naming the file (the updater is unchanged)."""
    states = load_arrays(fname, "optimizer state file")
    try:
        updater.set_states(states)
    except (ValueError, TypeError, IndexError, KeyError) as exc:  # AttrError too
        raise DataError(f"optimizer state file {fname}: {exc}") from None


def checkpoint_names(prefix: str, epoch: int) -> tuple[str, str]:
    """``(prefix-symbol.json, prefix-%04d.params)``."""
    return f"{prefix}-symbol.json", "%s-%04d.params" % (prefix, epoch)


def save_checkpoint(prefix: str, epoch: int, symbol: Any, arg_params: Mapping[str, Any],
                    aux_params: Mapping[str, Any], remove_amp_cast: bool = True) -> None:
    """Write the symbol JSON and the parameters of ``epoch``."""
    sym_file, param_file = checkpoint_names(prefix, epoch)
    if symbol is not None:
        symbol.save(sym_file)
    save_params(param_file, arg_params, aux_params)


def load_checkpoint(prefix: str, epoch: int) -> tuple[Any, dict, dict]:
    """``(symbol, arg_params, aux_params)`` saved by :func:`save_checkpoint`."""
    from ..frontend import symbol as sym
    sym_file, param_file = checkpoint_names(prefix, epoch)
    if not os.path.isfile(sym_file):
        raise DataError(f"symbol file {sym_file} not found")
    arg, aux = load_params(param_file)
    return sym.load(sym_file), arg, aux
