"""The fused RNN with dropout between layers, unrolled: one single-layer ``RNN`` (p = 0, its
own flat parameter vector cut from the stacked one) per layer, each layer's output multiplied
by the given mask before the next reads it (MXNet's and cuDNN's placement). A reference for
``tests/ops/test_rnn_dropout.py`` and ``tests/cuda/test_rnn_dropout_lowering.py``, built from
the single-layer op that the registry tests check against float64 numpy and MXNet."""
from __future__ import annotations

from typing import Optional

import numpy as np

from symgraph.compiler.ops.rnn import param_layout
from symgraph.core.attrs import Attrs
from symgraph.core.registry import RunCtx, get_op


def layer_flat(attrs: dict, flat: np.ndarray, input_size: int, layer: int) -> np.ndarray:
    """Layer ``layer``'s part of the stacked flat vector, as a one-layer RNN lays it out:
    ``W``, ``U`` per direction, then ``b``, ``c`` per direction."""
    d = 2 if attrs["bidirectional"] else 1
    gh = {"lstm": 4, "gru": 3}.get(attrs["mode"], 1) * attrs["state_size"]
    rows = param_layout(Attrs(attrs), input_size)[layer * d:(layer + 1) * d]
    mats = [flat[w:u + gh * attrs["state_size"]] for w, u, _, _, _ in rows]
    biases = [flat[b:c + gh] for _, _, b, c, _ in rows]
    return np.concatenate(mats + biases)


def unrolled(attrs: dict, xs: list, masks: Optional[np.ndarray]) -> list:
    """Outputs (output, last states...) of ``RNN(**attrs)`` on ``xs`` with dropout ``masks``
    (L-1, T, N, D*H) applied between layers (None: no dropout)."""
    d, layers = (2 if attrs["bidirectional"] else 1), attrs["num_layers"]
    one = Attrs({**attrs, "num_layers": 1, "p": 0.0, "state_outputs": True})
    op, x, states = get_op("RNN"), xs[0], xs[2:]
    finals: list = []
    for layer in range(layers):
        own = [s[layer * d:(layer + 1) * d] for s in states]
        out = op.compute(one, [x, layer_flat(attrs, xs[1], xs[0].shape[2], layer)] + own,
                         RunCtx(is_train=True))
        x = out[0] * masks[layer] if masks is not None and layer < layers - 1 else out[0]
        finals.append(out[1:])
    states_out = [np.concatenate(s, axis=0) for s in zip(*finals)]
    return [x] + (states_out if attrs.get("state_outputs") else [])
