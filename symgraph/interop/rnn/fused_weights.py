"""The flat ``parameters`` vector of a fused ``RNN`` op, named per layer, direction and gate
as MXNet's ``FusedRNNCell.unpack_weights`` names them (``lstm_l0_i2h_f_weight``...): every
weight matrix first (per layer, per direction: i2h gates then h2h gates), then every bias in
the same order."""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

GATES = {"lstm": ("_i", "_f", "_c", "_o"), "gru": ("_r", "_z", "_o"), "rnn_relu": ("",),
         "rnn_tanh": ("",)}


def _pieces(prefix: str, mode: str, layers: int, dirs: list, n_in: int, h: int
            ) -> Iterator[tuple[str, tuple]]:
    """``(name, shape)`` of each piece, in the vector's order."""
    for layer in range(layers):
        width = n_in if layer == 0 else len(dirs) * h
        for d in dirs:
            for group, cols in (("i2h", width), ("h2h", h)):
                for gate in GATES[mode]:
                    yield f"{prefix}{d}{layer}_{group}{gate}_weight", (h, cols)
    for layer in range(layers):
        for d in dirs:
            for group in ("i2h", "h2h"):
                for gate in GATES[mode]:
                    yield f"{prefix}{d}{layer}_{group}{gate}_bias", (h,)


def input_size(total: int, mode: str, layers: int, dirs: int, h: int) -> int:
    """The input width a vector of ``total`` values implies."""
    g = len(GATES[mode])
    rest = total // (dirs * g * h) - (layers - 1) * (h + dirs * h + 2) - h - 2
    return rest


def unpack(flat: np.ndarray, prefix: str, mode: str, layers: int, dirs: list, h: int
           ) -> dict[str, np.ndarray]:
    """Named copies of the pieces of ``flat``."""
    n_in = input_size(flat.size, mode, layers, len(dirs), h)
    out, p = {}, 0
    for name, shape in _pieces(prefix, mode, layers, dirs, n_in, h):
        size = int(np.prod(shape))
        out[name] = flat[p:p + size].reshape(shape).copy()
        p += size
    return out


def pack(args: dict, prefix: str, mode: str, layers: int, dirs: list, h: int
         ) -> tuple[np.ndarray, list[str]]:
    """``(flat vector, names used)`` from the named pieces in ``args`` (numpy arrays)."""
    n_in = np.asarray(args[f"{prefix}l0_i2h{GATES[mode][0]}_weight"]).shape[1]
    names, parts = [], []
    for name, shape in _pieces(prefix, mode, layers, dirs, n_in, h):
        parts.append(np.asarray(args[name]).reshape(-1))
        names.append(name)
    return np.concatenate(parts), names


def as_numpy(x: Any) -> np.ndarray:
    return x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x)
