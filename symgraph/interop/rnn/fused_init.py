"""MXNet's ``FusedRNN`` initializer: the flat ``parameters`` vector of a fused ``RNN`` op
filled piece by piece, as if each per-layer, per-gate array were its own variable.

Weights get ``init`` (or, when it is None, the initializer the module was given: MXNet's
``global_init``), biases zero, and with ``mode='lstm'`` every forget-gate bias (``*_f_bias``,
i2h and h2h) ``forget_bias``. ``FusedRNNCell`` puts one on its ``parameters`` variable, so
``Module.init_params()`` can initialise it (it has no name-based rule).

Example::

    >>> init = FusedRNN(None, num_hidden=4, num_layers=1, mode="lstm")
    >>> v = sg.sym.var("parameters", init=init)
"""
from __future__ import annotations

import json
from typing import Any, Optional

import numpy as np

from ...core.base import AttrError
from ...training.initializer import InitDesc, Initializer, create, register
from . import fused_weights as FW


class FusedRNN(Initializer):
    """Initialise a fused RNN's flat parameter vector per piece (MXNet's ``mx.init.FusedRNN``)."""

    def __init__(self, init: Any, num_hidden: int, num_layers: int, mode: str,
                 bidirectional: bool = False, forget_bias: float = 1.0) -> None:
        inner: Optional[Initializer] = None if init is None else create(
            init if not isinstance(init, list) else json.dumps(init))
        super().__init__(init=None if inner is None else inner.dumps(), num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)
        if mode not in FW.GATES:
            raise AttrError(f"FusedRNN: mode={mode!r}; one of {sorted(FW.GATES)}")
        self._init, self._mode, self._forget_bias = inner, mode, forget_bias
        self._shape = (num_layers, ["l", "r"] if bidirectional else ["l"], num_hidden)

    def _init_weight(self, desc: Any, arr: Any) -> None:
        layers, dirs, hidden = self._shape
        pieces = FW.unpack(np.asarray(FW.as_numpy(arr), np.float64).reshape(-1), "",
                           self._mode, layers, dirs, hidden)
        fill = self._init or getattr(desc, "global_init", None)
        if fill is None:
            raise AttrError(f"{desc}: FusedRNN(init=None) needs the module's initializer")
        for name, value in pieces.items():
            if self._mode == "lstm" and name.endswith("_f_bias"):
                value[...] = self._forget_bias
            else:
                fill(InitDesc(name, global_init=getattr(desc, "global_init", None)), value)
        flat, _ = FW.pack(pieces, "", self._mode, layers, dirs, hidden)
        arr[:] = flat.reshape(arr.shape).astype(np.dtype(arr.dtype))


register(FusedRNN)
