"""Lowering families of MXNet's fused RNN (``ops/rnn.py``): ``rnn`` (the forward) and
``rnn_backward`` (``_backward_RNN``: the forward recomputed, then backpropagation through time).

Built from cuBLAS GEMMs and the gate kernels of ``kernels_rnn``, no cuDNN RNN. Per layer and
direction (the reverse one walks t backwards):

* the input projection of all T steps is one GEMM, ``ZX = X W^T`` ((T*N, in) x (in, G*H));
* per step, one GEMM ``zh = h U^T`` and one gate kernel: biases, the cell's formulas, ``h``
  into the direction's state buffer ``HS`` and into the layer output (concatenated on the last
  axis), ``c`` into ``CS`` (LSTM), and over ``ZX[t]`` (GRU: and ``ZH[t]``) what the backward
  reads. ``HS``/``CS`` hold T + 1 states: the initial one first in the direction's order
  (slot 0 forward, slot T reverse), so the state before step t is always one slot away.
  The forward op's layers share these buffers (two layer outputs alternate); the backward's
  recomputation keeps every layer's.

Backward, per layer from the top and per direction, steps in reverse run order: the gate
kernel turns ``ZX[t]`` into the pre-activation gradients ``dZ[t]`` (adding the output gradient
to the carried ``dh``, which lives in the ``d_state`` output), and one GEMM carries
``dh = dZ_h[t] U`` back (accumulating onto GRU's direct term). Then one GEMM each over all
steps: ``dW = dZ^T X``, ``dU = dZ_h^T HS``, the bias gradients as ``dZ^T 1``, and the layer's
input gradient ``dX = sum over directions of dZ W``. Scratch follows the step's dtype; narrow
types store every intermediate (gates, states, carried gradients) narrow and compute in float.

Dropout (``p`` > 0): the forward, in training, draws each layer boundary's mask into the
hidden ``dropout_mask`` output with ``Dropout``'s Philox kernel and multiplies the layer's
output by it in place, so the next layer (and the backward's ``dW``) reads the dropped values;
in inference it fills the masks with 1 and multiplies nothing. The backward's recomputation
multiplies by the forward's masks, and each layer's input gradient is multiplied by its mask
before the layer below reads it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...core.expr import inp
from .actions import Copy, Fill, Gemm, Kernel, Ref, StepCtx, Switch, family, launch
from .codegen import THREADS, grid_for
from .kernels_random import render_dropout_mask
from .kernels_rnn import BACKWARD_PARAMS, FORWARD_PARAMS, render_rnn_backward, render_rnn_forward
from .lowering_elementwise import elementwise_actions


@dataclass(frozen=True)
class _Dims:
    mode: str
    t: int
    n: int
    h: int
    g: int
    d: int
    layers: int
    i: int  # input features of layer 0

    @property
    def gh(self) -> int:
        return self.g * self.h

    @property
    def nh(self) -> int:
        return self.n * self.h


@dataclass(frozen=True)
class _Direction:
    """What the forward of one layer and direction leaves for the backward."""

    x: Ref  # the layer's input (T*N, width)
    width: int
    offsets: tuple  # of W, U, b, c in the flat parameters
    zx: Ref  # (T, N, G*H): stored gate values (what the gate kernel wrote)
    zh: Ref  # (T, N, G*H) for GRU (its n gate's recurrent part), else one step's GEMM output
    hs: Ref  # (T + 1, N, H)
    cs: Optional[Ref]
    reverse: bool

    def order(self, dm: _Dims) -> range:
        return range(dm.t - 1, -1, -1) if self.reverse else range(dm.t)

    def cur(self, t: int) -> int:
        """Slot of HS/CS holding the state after step t (before it: ``prev``)."""
        return t if self.reverse else t + 1

    def prev(self, t: int) -> int:
        return t + 1 if self.reverse else t


def _dims(ctx: StepCtx, data_shape: tuple) -> _Dims:
    from ...compiler.ops.rnn_cells import GATES
    a = ctx.attrs
    return _Dims(a["mode"], data_shape[0], data_shape[1], a["state_size"], GATES[a["mode"]],
                 2 if a["bidirectional"] else 1, a["num_layers"], data_shape[2])


def _buffers(ctx: StepCtx, dm: _Dims, keep: bool) -> tuple[Ref, Ref, Ref, Optional[Ref]]:
    """Scratch of one layer and direction: ``zx``, ``zh``, ``hs``, ``cs`` (see _Direction);
    ``keep``: for the backward (GRU's ``zh`` of every step)."""
    dt, steps = ctx.storage, keep and dm.mode == "gru"
    return (ctx.new_array(dm.t * dm.n * dm.gh, dt),
            ctx.new_array((dm.t if steps else 1) * dm.n * dm.gh, dt),
            ctx.new_array((dm.t + 1) * dm.nh, dt),
            ctx.new_array((dm.t + 1) * dm.nh, dt) if dm.mode == "lstm" else None)


def _direction(ctx: StepCtx, dm: _Dims, s: int, x: Ref, params: Ref, offsets: tuple,
               state: tuple, y: Ref, bufs: tuple, keep: bool) -> tuple[list, _Direction]:
    """Forward of layer ``s // D``, direction ``s % D``: its actions and buffers. ``state``:
    (h0, c0 or None) of the whole step; ``bufs``: its scratch (:func:`_buffers` with
    ``keep``)."""
    dt, (w, u, b, _, width), (zx, zh, hs, cs) = ctx.storage, offsets, bufs
    tn, nbytes = dm.t * dm.n, dm.nh * ctx.dtype_of(y).itemsize
    steps = keep and dm.mode == "gru"
    run = _Direction(x, width, offsets, zx, zh, hs, cs, s % dm.d == 1)
    first = dm.t if run.reverse else 0
    acts: list = [Gemm(False, True, tn, dm.gh, width, x, ctx.at(params, w), zx, dtype=dt),
                  Copy(ctx.at(hs, first * dm.nh), ctx.at(state[0], s * dm.nh), nbytes)]
    if cs is not None:
        acts.append(Copy(ctx.at(cs, first * dm.nh), ctx.at(state[1], s * dm.nh), nbytes))
    kern = render_rnn_forward(dm.mode, dm.h, dm.d * dm.h, dt)
    for t in run.order(dm):
        zh_t = ctx.at(zh, t * dm.n * dm.gh if steps else 0)
        at = {"zx": ctx.at(zx, t * dm.n * dm.gh), "zh": zh_t, "bias": ctx.at(params, b),
              "h_prev": ctx.at(hs, run.prev(t) * dm.nh), "h": ctx.at(hs, run.cur(t) * dm.nh),
              "y": ctx.at(y, (t * dm.n * dm.d + s % dm.d) * dm.h)}
        if cs is not None:
            at.update(c_prev=ctx.at(cs, run.prev(t) * dm.nh), c=ctx.at(cs, run.cur(t) * dm.nh))
        acts += [Gemm(False, True, dm.n, dm.gh, dm.h, at["h_prev"], ctx.at(params, u), zh_t,
                      dtype=dt),
                 launch(ctx, kern, tuple(at[p] for p, _ in FORWARD_PARAMS[dm.mode]), dm.nh)]
    return acts, run


def _masked(ctx: StepCtx, dm: _Dims, layer: int, y: Ref, masks: Ref, draw: bool) -> list:
    """``y`` (the output of ``layer``, not the last) multiplied in place by its dropout mask
    in ``masks``; ``draw``: the mask is drawn first (the forward, in training)."""
    n = dm.t * dm.n * dm.d * dm.h
    mask, shape = ctx.at(masks, layer * n), (dm.t, dm.n, dm.d * dm.h)
    acts = [Kernel(render_dropout_mask(n, ctx.attrs["p"], ctx.dt(masks)),
                   grid_for(-(-n // 4), ctx.sm_count), THREADS, (mask, ctx.new_key()), n)
            ] if draw else []
    return acts + elementwise_actions(ctx, "rnn_dropout", [inp(0) * inp(1)], [shape, shape],
                                      [y, mask], shape, [y])


def _stack(ctx: StepCtx, dm: _Dims, ins: list, out: Optional[Ref], keep: bool,
           masks: Optional[Ref] = None) -> tuple[list, list[_Direction]]:
    """Forward of every layer: ``ins`` = (data, parameters, state[, state_cell]); the last
    layer writes ``out`` (a scratch buffer when None). ``keep``: every layer's buffers stay
    for the backward; else layers share them (two layer outputs alternate) and the last
    states are copied out as each direction ends (``state_outputs``). ``masks``: the dropout
    masks, drawn in training by the forward (``out`` given), read by the backward."""
    from ...compiler.ops.rnn import param_layout
    layout = param_layout(ctx.attrs, dm.i)
    state = (ins[2], ins[3] if dm.mode == "lstm" else None)
    acts: list = []
    runs: list[_Direction] = []
    ys: dict[int, Ref] = {}  # layer outputs by parity; scratch by direction (shared)
    bufs: dict[int, tuple] = {}
    x = ins[0]
    for layer in range(dm.layers):
        if layer == dm.layers - 1 and out is not None:
            y = out
        elif keep or layer % 2 not in ys:
            y = ys[layer % 2] = ctx.new_array(dm.t * dm.n * dm.d * dm.h, ctx.storage)
        else:
            y = ys[layer % 2]
        for k in range(dm.d):
            s = layer * dm.d + k
            if keep or k not in bufs:
                bufs[k] = _buffers(ctx, dm, keep)
            got, run = _direction(ctx, dm, s, x, ins[1], layout[s], state, y, bufs[k], keep)
            acts += got + (_final_states(ctx, dm, s, run) if out is not None
                           and ctx.attrs["state_outputs"] else [])
            runs.append(run)
        if masks is not None and layer < dm.layers - 1:
            dropped = _masked(ctx, dm, layer, y, masks, out is not None)
            acts += [Switch(tuple(dropped), ())] if out is not None else dropped
        x = y
    return acts, runs


def _final_states(ctx: StepCtx, dm: _Dims, s: int, run: _Direction) -> list:
    """Copies of a direction's last h (and c) into the state outputs."""
    nbytes = dm.nh * ctx.dtype_of(ctx.outs[0]).itemsize
    last = (0 if run.reverse else dm.t) * dm.nh
    acts = [Copy(ctx.at(ctx.outs[1], s * dm.nh), ctx.at(run.hs, last), nbytes)]
    if run.cs is not None:
        acts.append(Copy(ctx.at(ctx.outs[2], s * dm.nh), ctx.at(run.cs, last), nbytes))
    return acts


@family("rnn")
def _rnn(ctx: StepCtx, p: dict) -> list:
    """RNN's forward: every layer and direction, the last states when asked for, and with
    dropout its masks (all 1 in inference)."""
    from ...compiler.ops.rnn import has_dropout
    dm = _dims(ctx, ctx.in_shapes[0])
    masks = ctx.outs[-1] if has_dropout(ctx.attrs) else None
    acts = _stack(ctx, dm, list(ctx.ins), ctx.outs[0], keep=False, masks=masks)[0]
    if masks is None:
        return acts
    count = (dm.layers - 1) * dm.t * dm.n * dm.d * dm.h
    return acts + [Switch((), (Fill(masks, 1.0, count, ctx.dt(masks)),))]


def _direction_backward(ctx: StepCtx, dm: _Dims, s: int, run: _Direction, dout: Ref,
                        params: Ref, ones: Ref) -> list:
    """Backpropagation through time of one layer and direction, then its weight gradients
    (into ``d_parameters``, one GEMM each over all steps). The carried ``dh`` (``dc``) is the
    direction's part of the ``d_state`` (``d_state_cell``) output, holding the output
    gradient of the last state on entry and the initial state's gradient on exit."""
    dt, (w, u, b, c, width) = ctx.storage, run.offsets
    dzh = run.zh if dm.mode == "gru" else run.zx  # where the recurrent side's gradient is
    dh = ctx.at(ctx.outs[2], s * dm.nh)
    kern = render_rnn_backward(dm.mode, dm.h, dm.d * dm.h, dt)
    acts: list = []
    for t in reversed(run.order(dm)):
        at = {"zx": ctx.at(run.zx, t * dm.n * dm.gh), "zh": ctx.at(run.zh, t * dm.n * dm.gh),
              "dh": dh, "dy": ctx.at(dout, (t * dm.n * dm.d + s % dm.d) * dm.h),
              "h_prev": ctx.at(run.hs, run.prev(t) * dm.nh),
              "h": ctx.at(run.hs, run.cur(t) * dm.nh)}
        if run.cs is not None:
            at.update(dc=ctx.at(ctx.outs[3], s * dm.nh), c=ctx.at(run.cs, run.cur(t) * dm.nh),
                      c_prev=ctx.at(run.cs, run.prev(t) * dm.nh))
        acts += [launch(ctx, kern, tuple(at[p] for p, _ in BACKWARD_PARAMS[dm.mode]), dm.nh),
                 Gemm(False, False, dm.n, dm.h, dm.gh, ctx.at(dzh, t * dm.n * dm.gh),
                      ctx.at(params, u), dh, dtype=dt, accumulate=dm.mode == "gru")]
    tn, dp = dm.t * dm.n, ctx.outs[1]
    h_prev = ctx.at(run.hs, (1 if run.reverse else 0) * dm.nh)  # the state before each step
    return acts + [Gemm(True, False, dm.gh, width, tn, run.zx, run.x, ctx.at(dp, w), dtype=dt),
                   Gemm(True, False, dm.gh, dm.h, tn, dzh, h_prev, ctx.at(dp, u), dtype=dt),
                   Gemm(True, False, dm.gh, 1, tn, run.zx, ones, ctx.at(dp, b), dtype=dt),
                   Gemm(True, False, dm.gh, 1, tn, dzh, ones, ctx.at(dp, c), dtype=dt)]


def _carries(ctx: StepCtx, dm: _Dims, grads: list) -> list:
    """``d_state`` (``d_state_cell``) start as the gradients of the last states, or 0."""
    acts: list = []
    for k, out in enumerate(ctx.outs[2:], start=1):
        count = dm.layers * dm.d * dm.nh
        if ctx.attrs["state_outputs"]:
            acts.append(Copy(out, grads[k], count * ctx.dtype_of(out).itemsize))
        else:
            acts.append(Fill(out, 0.0, count, ctx.dt(out)))
    return acts


@family("rnn_backward")
def _rnn_backward(ctx: StepCtx, p: dict) -> list:
    """``_backward_RNN``: the forward again into scratch (every step's gates and states kept),
    then per layer from the top: each direction's backward, and the layer's input gradient
    (the data gradient for layer 0) as one GEMM per direction, the second accumulating."""
    from ...compiler.ops.rnn import has_dropout, param_layout
    masks = ctx.ins[-1] if has_dropout(ctx.attrs) else None
    n_out = len(ctx.ins) - len(ctx.outs) - (masks is not None)
    grads, fwd = list(ctx.ins[:n_out]), list(ctx.ins[n_out:n_out + len(ctx.outs)])
    dm = _dims(ctx, ctx.in_shapes[n_out])
    acts, runs = _stack(ctx, dm, fwd, None, keep=True, masks=masks)
    ones = ctx.new_array(dm.t * dm.n, ctx.storage)
    acts += _carries(ctx, dm, grads) + [Fill(ones, 1.0, dm.t * dm.n, ctx.storage)]
    layout, dout = param_layout(ctx.attrs, dm.i), grads[0]
    dxs: dict[int, Ref] = {}  # the input gradients of layers above 0, by parity (alternating)
    for layer in range(dm.layers - 1, -1, -1):
        width = layout[layer * dm.d][4]
        if layer > 0 and layer % 2 not in dxs:
            dxs[layer % 2] = ctx.new_array(dm.t * dm.n * width, ctx.storage)
        dx = dxs[layer % 2] if layer > 0 else ctx.outs[0]
        for k in range(dm.d):
            s = layer * dm.d + k
            acts += _direction_backward(ctx, dm, s, runs[s], dout, fwd[1], ones)
        acts += [Gemm(False, False, dm.t * dm.n, width, dm.gh, runs[layer * dm.d + k].zx,
                      ctx.at(fwd[1], layout[layer * dm.d + k][0]), dx, dtype=ctx.storage,
                      accumulate=k > 0) for k in range(dm.d)]
        if masks is not None and layer > 0:  # through the dropout below this layer
            acts += _masked(ctx, dm, layer - 1, dx, masks, draw=False)
        dout = dx
    return acts
