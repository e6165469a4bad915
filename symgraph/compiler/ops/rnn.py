"""MXNet's fused ``RNN`` op (``mode`` lstm, gru, rnn_tanh, rnn_relu; stacked layers, optionally
bidirectional) and its backward op ``_backward_RNN``.

Inputs as MXNet's: ``data`` (T, N, I), ``parameters`` (one flat vector), ``state`` (L*D, N, H)
and, for LSTM, ``state_cell``. The flat vector holds, as cuDNN lays it out, every weight
first — per layer, per direction: ``W`` (G*H, in) then ``U`` (G*H, H) — then every bias —
per layer, per direction: ``b`` (G*H) then ``c`` (G*H); ``in`` is I for layer 0 and D*H after.
Outputs: ``output`` (T, N, D*H), and with ``state_outputs`` the last ``state`` (and
``state_cell``). In training the forward keeps its tape (gates and states of every step) in
the run context's state, and the backward op takes it from there when its inputs are the same
buffers, else recomputes the forward; it runs backpropagation through time in numpy and has
no gradient itself (second derivatives raise). The compiled CPU backend runs the same
functions with its own per-direction layers (``computes``, ``runtime/cpu/rnn.py``).

GPU: the ``rnn`` and ``rnn_backward`` families (``cuda/lowering_rnn.py``): cuBLAS GEMMs (the
input projection of all steps in one, then one per step for the recurrent side) and one gate
kernel per step printing the cell formulas of ``rnn_cells.CELLS``, which the numpy reference
evaluates too; the backward recomputes the forward on the device as here. No cuDNN RNN. Not
implemented (refused by name): ``projection_size``, LSTM state clipping,
``use_sequence_length``.

Dropout (``p`` > 0, two layers or more): in training, as MXNet (and cuDNN), the output of
every layer but the last is multiplied by a mask (0 with probability p, else 1/(1-p)) before
the next layer reads it; in inference it is not. The masks, one per layer boundary, are a
hidden output ``dropout_mask`` (L-1, T, N, D*H), drawn as ``Dropout`` draws its mask (from
``RunCtx.rng``; on the GPU with its Philox kernel); the backward op reads them, so its
recomputed forward and its gradients see the same masks.
"""
from __future__ import annotations

from functools import partial
from types import ModuleType
from typing import Callable, Optional

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NO_GRADIENT, OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt
from .activation import dropout_mask
from . import rnn_cells
from .rnn_cells import GATES

RNN_PARAMS = {
    "state_size": Param("int", doc="hidden units H"),
    "num_layers": Param("int", doc="stacked layers L"),
    "bidirectional": Param("bool", False, doc="a second, reversed direction per layer"),
    "mode": Param("str", choices=tuple(GATES), doc="the cell"),
    "p": Param("float", 0.0, doc="dropout on the outputs of every layer but the last "
                                 "(training only)"),
    "state_outputs": Param("bool", False, doc="also output the last state (and cell)"),
    "projection_size": Param("int?", None, doc="LSTM projection (not implemented)"),
    "lstm_state_clip_min": Param("float?", None, doc="not implemented"),
    "lstm_state_clip_max": Param("float?", None, doc="not implemented"),
    "lstm_state_clip_nan": Param("bool", False, doc="not implemented"),
    "use_sequence_length": Param("bool", False, doc="not implemented"),
}


def _check(a: Attrs) -> None:
    check_attr(a["state_size"] >= 1, "state_size", a["state_size"], "must be >= 1")
    check_attr(a["num_layers"] >= 1, "num_layers", a["num_layers"], "must be >= 1")
    check_attr(0.0 <= a["p"] <= 1.0, "p", a["p"], "must lie in [0, 1]")
    for key in ("projection_size", "lstm_state_clip_min", "lstm_state_clip_max"):
        check_attr(a[key] is None, key, a[key], "is not implemented")
    for key in ("lstm_state_clip_nan", "use_sequence_length"):
        check_attr(not a[key], key, a[key], "is not implemented")


def _inputs(a: Attrs) -> tuple[str, ...]:
    return ("data", "parameters", "state") + (("state_cell",) if a["mode"] == "lstm" else ())


def has_dropout(a: Attrs) -> bool:
    """Whether the op drops between layers (then it has the hidden ``dropout_mask`` output)."""
    return a["p"] > 0.0 and a["num_layers"] > 1


def _visible(a: Attrs) -> tuple[str, ...]:
    if not a["state_outputs"]:
        return ("output",)
    return ("output", "state") + (("state_cell",) if a["mode"] == "lstm" else ())


def _outputs(a: Attrs) -> tuple[str, ...]:
    return _visible(a) + (("dropout_mask",) if has_dropout(a) else ())


def mask_shape(a: Attrs, data: tuple) -> tuple:
    """Shape of the hidden ``dropout_mask`` output for data of shape ``data`` (T, N, I)."""
    d = 2 if a["bidirectional"] else 1
    return (a["num_layers"] - 1, data[0], data[1], d * a["state_size"])


def param_size(a: Attrs, input_size: int) -> int:
    """Length of the flat parameter vector for data of ``input_size`` features."""
    h, g, d = a["state_size"], GATES[a["mode"]], 2 if a["bidirectional"] else 1
    size = 0
    for layer in range(a["num_layers"]):
        width = input_size if layer == 0 else d * h
        size += d * (g * h * (width + h) + 2 * g * h)
    return size


def _rnn_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    _check(a)
    data = ins[0]
    if data is None:
        return ins, outs
    if len(data) != 3:
        raise ShapeError(f"data must be (sequence, batch, features), got {fmt(data)}")
    t, n, i = data
    h, d, layers = a["state_size"], 2 if a["bidirectional"] else 1, a["num_layers"]
    state = (layers * d, n, h)
    ins = [data, (param_size(a, i),), state] + ([state] if a["mode"] == "lstm" else [])
    masks = [mask_shape(a, data)] if has_dropout(a) else []
    return ins, [(t, n, d * h)] + [state] * (len(_visible(a)) - 1) + masks


def param_layout(a: Attrs, input_size: int) -> list[tuple[int, int, int, int, int]]:
    """Per (layer, direction), in that order: the element offsets of ``W``, ``U``, ``b`` and
    ``c`` in the flat parameter vector, and the layer's input width (the layout above)."""
    h, g, d = a["state_size"], GATES[a["mode"]], 2 if a["bidirectional"] else 1
    mats, pos = [], 0
    for layer in range(a["num_layers"]):
        width = input_size if layer == 0 else d * h
        for _ in range(d):
            mats.append((pos, pos + g * h * width, width))
            pos += g * h * (width + h)
    return [(w, u, pos + 2 * g * h * k, pos + 2 * g * h * k + g * h, width)
            for k, (w, u, width) in enumerate(mats)]


def _weights(a: Attrs, flat: np.ndarray, input_size: int) -> list[tuple]:
    """(W, U, b, c) per (layer, direction), in that order, as views of ``flat``."""
    gh = a["state_size"] * GATES[a["mode"]]
    return [(flat[w:u].reshape(gh, width), flat[u:u + gh * a["state_size"]].reshape(gh, -1),
             flat[b:b + gh], flat[c:c + gh])
            for w, u, b, c, width in param_layout(a, input_size)]


def _forward(a: Attrs, xs: list, masks: Optional[np.ndarray],
             layers: ModuleType = rnn_cells) -> tuple[list, list]:
    """Outputs, and per (layer, direction) what the backward pass needs; ``masks``: the
    dropout masks applied to the outputs of the layers but the last (None: none);
    ``layers``: the module whose ``run`` and ``run_back`` run one direction of a layer
    (``rnn_cells``, the numpy reference, or the compiled CPU backend's ``cpu/rnn.py``; a
    backward reads the tape of its own module's forward)."""
    x, flat, h0 = xs[0], xs[1], xs[2]
    c0 = xs[3] if a["mode"] == "lstm" else None
    d = 2 if a["bidirectional"] else 1
    ws = _weights(a, flat, x.shape[2])
    hy, cy, tape = np.empty_like(h0), None if c0 is None else np.empty_like(c0), []
    for layer in range(a["num_layers"]):
        parts = []
        for k in range(d):
            s = layer * d + k
            out, hy[s], c_last, caches = layers.run(a["mode"], x, h0[s],
                                                    None if c0 is None else c0[s], ws[s],
                                                    k == 1)
            if cy is not None:
                cy[s] = c_last
            parts.append(out)
            tape.append((x, caches))
        x = np.concatenate(parts, axis=2) if d == 2 else parts[0]
        if masks is not None and layer < a["num_layers"] - 1:
            x = x * masks[layer]
    outs = [x] + ([hy] + ([cy] if cy is not None else []) if a["state_outputs"] else [])
    return outs, tape


TAPES_KEPT = 8
"""Training forwards whose tapes a run context keeps for their backward (the oldest goes
first): a forward never followed by a backward must not hold its tape for ever."""


def _tape_key(a: Attrs, xs: list) -> tuple:
    """The forward's attributes and where and how its inputs lie: the backward op reads the
    same buffers (the memory plan keeps them until it runs), so an equal key is the same
    forward."""
    where = tuple((x.__array_interface__["data"][0], x.shape, x.strides, x.dtype.str)
                  for x in xs)
    return (tuple(sorted((k, repr(v)) for k, v in a.items())),) + where


def _keep_tape(a: Attrs, xs: list, tape: list, ctx: RunCtx) -> None:
    """In training, keep the forward's tape in the run context's state for the backward op
    (MXNet and cuDNN keep a reserve space the same way), so it does not run the forward
    again (a third of the LSTM model's RNN time)."""
    if not ctx.is_train or ctx.state is None:
        return
    tapes = ctx.state.setdefault("RNN tapes", {})
    tapes[_tape_key(a, xs)] = tape  # (the masks are an output: the backward reads the same)
    while len(tapes) > TAPES_KEPT:
        tapes.pop(next(iter(tapes)))


def _rnn(a: Attrs, xs: list, ctx: RunCtx, layers: ModuleType = rnn_cells) -> list:
    masks = None
    if has_dropout(a):
        shape = mask_shape(a, xs[0].shape)
        masks = (dropout_mask(a["p"], shape, xs[0].dtype, ctx) if ctx.is_train
                 else np.ones(shape, xs[0].dtype))
    outs, tape = _forward(a, xs, masks if ctx.is_train else None, layers)
    _keep_tape(a, xs, tape, ctx)
    return outs + ([masks] if masks is not None else [])


def _backward(a: Attrs, xs: list, ctx: RunCtx, layers: ModuleType = rnn_cells) -> list:
    """Inputs: the output gradients (one per visible forward output), the forward inputs,
    then (with dropout) the forward's masks."""
    n_out, n_in = len(_visible(a)), len(_inputs(a))
    grads, fwd = xs[:n_out], xs[n_out:n_out + n_in]
    masks = xs[-1] if has_dropout(a) else None
    kept = None if ctx.state is None else ctx.state.get("RNN tapes", {}).pop(
        _tape_key(a, fwd), None)
    tape = kept if kept is not None else _forward(a, fwd, masks, layers)[1]
    lstm, d, hsz = a["mode"] == "lstm", 2 if a["bidirectional"] else 1, a["state_size"]
    flat = fwd[1]
    ws = _weights(a, flat, fwd[0].shape[2])
    dflat = np.zeros_like(flat)
    gws = _weights(a, dflat, fwd[0].shape[2])  # views: gradients land in dflat
    dh0 = grads[1].copy() if n_out > 1 else np.zeros_like(fwd[2])
    dc0 = (grads[2].copy() if n_out > 2 else np.zeros_like(fwd[3])) if lstm else None
    dout = grads[0]
    for layer in range(a["num_layers"] - 1, -1, -1):
        x_in = tape[layer * d][0]
        dx = np.zeros_like(x_in)
        for k in range(d):
            s = layer * d + k
            gw = [np.zeros_like(m) for m in gws[s]]
            dh, dc = layers.run_back(a["mode"], dout[:, :, k * hsz:(k + 1) * hsz], dh0[s],
                                     None if dc0 is None else dc0[s], tape[s][1], ws[s], gw,
                                     x_in, dx)
            for view, g in zip(gws[s], gw):
                view += g
            dh0[s] = dh
            if dc0 is not None:
                dc0[s] = dc
        dout = dx * masks[layer - 1] if masks is not None and layer > 0 else dx
    return [dout, dflat, dh0] + ([dc0] if lstm else [])


def computes(layers: ModuleType) -> tuple[Callable, Callable]:
    """The computes of ``RNN`` and ``_backward_RNN`` with each direction's layer run by the
    module ``layers`` (see ``_forward``): the same dropout, weight layout and tape keeping."""
    return partial(_rnn, layers=layers), partial(_backward, layers=layers)


def _rnn_grad(c) -> list:
    n_in, n_vis = len(c.inputs), len(_visible(c.attrs))
    masks = [c.outputs[n_vis]] if has_dropout(c.attrs) else []
    back = c.sym._backward_RNN(*c.ograds[:n_vis], *c.inputs, *masks, **c.attrs)
    return [back[i] for i in range(n_in)]


def _backward_inputs(a: Attrs) -> tuple[str, ...]:
    return (tuple(f"d_{n}" for n in _visible(a)) + _inputs(a)
            + (("dropout_mask",) if has_dropout(a) else ()))


def _backward_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    n_vis = len(_visible(a))
    return ins, list(ins[n_vis:n_vis + len(_inputs(a))])


register(OpDef(
    "RNN", RNN_PARAMS, _inputs, _rnn_shape, _rnn, _rnn_grad, OPAQUE, outputs=_outputs,
    # train_dependent: with p > 0 its result is not a function of its inputs (no CSE, no
    # constant folding); without, nothing is lost but merging two identical RNN nodes
    num_visible=lambda a: len(_visible(a)), train_dependent=True, lowering=("rnn", {}),
    doc="MXNet's fused recurrent layers (lstm, gru, rnn_tanh, rnn_relu) over (T, N, I) data "
        "with one flat parameter vector (cuDNN's layout)."))
register(OpDef(
    "_backward_RNN", RNN_PARAMS, _backward_inputs, _backward_shape, _backward, NO_GRADIENT,
    OPAQUE, outputs=lambda a: tuple(f"d_{n}" for n in _inputs(a)),
    lowering=("rnn_backward", {}),
    doc="Gradient of RNN w.r.t. its inputs (backpropagation through time, recomputing the "
        "forward)."))
