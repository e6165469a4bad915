"""``sg.model``: checkpoints as in MXNet 1.x.

``save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)`` writes ``prefix-symbol.json``
and ``prefix-%04d.params``; the parameter file is a numpy ``.npz`` archive whose keys carry
MXNet's ``arg:``/``aux:`` prefixes. Both files are written to a temporary file first and renamed,
so a crash never leaves a half-written checkpoint.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Mapping

import numpy as np

from .base import DataError
from .ndarray import NDArray, array
from .context import cpu


def _atomic_write(fname: str, write: Any) -> None:
    folder = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".symgraph-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _host(v: Any) -> np.ndarray:
    return v.asnumpy() if isinstance(v, NDArray) else np.asarray(v)


def save_arrays(fname: str, arrays: Mapping[str, Any]) -> None:
    """Write named arrays to an ``.npz`` file atomically."""
    payload = {k: _host(v) for k, v in arrays.items()}
    _atomic_write(fname, lambda f: np.savez(f, **payload))


def load_arrays(fname: str) -> dict[str, np.ndarray]:
    """Read :func:`save_arrays` output (no pickle)."""
    if not os.path.isfile(fname):
        raise DataError(f"file {fname} not found")
    try:
        with np.load(fname, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise DataError(f"{fname}: not an .npz array file ({exc})") from None


def save_params(fname: str, arg_params: Mapping[str, Any], aux_params: Mapping[str, Any]) -> None:
    """Write parameters as ``.npz`` with ``arg:``/``aux:`` key prefixes (atomically)."""
    payload = {f"arg:{k}": v for k, v in arg_params.items()}
    payload.update({f"aux:{k}": v for k, v in aux_params.items()})
    save_arrays(fname, payload)


def load_params(fname: str) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """Read :func:`save_params` output: ``(arg_params, aux_params)`` as CPU NDArrays."""
    if not os.path.isfile(fname):
        raise DataError(f"parameter file {fname} not found")
    arg, aux = {}, {}
    for key, value in load_arrays(fname).items():
        kind, _, name = key.partition(":")
        if kind not in ("arg", "aux") or not name:
            raise DataError(f"{fname}: key {key!r} lacks an 'arg:' or 'aux:' prefix")
        (arg if kind == "arg" else aux)[name] = array(value, cpu(), value.dtype)
    return arg, aux


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
    from . import symbol as sym
    sym_file, param_file = checkpoint_names(prefix, epoch)
    if not os.path.isfile(sym_file):
        raise DataError(f"symbol file {sym_file} not found")
    arg, aux = load_params(param_file)
    return sym.load(sym_file), arg, aux
