"""Connectionist temporal classification loss (``CTCLoss``; MXNet's aliases ``ctc_loss``,
``_contrib_CTCLoss``, ``_contrib_ctc_loss``, the latter two ``sg.sym.contrib.ctc_loss``).

Data ``(T, N, C)`` holds unnormalised activations (softmax is applied inside), label
``(N, L)`` the label sequences; the output is the negative log-likelihood of each sequence,
``(N,)``. The forward-backward recursions run in log space. As in MXNet, the forward also
writes the gradient with respect to the data into a hidden output, and the gradient rule
scales it by the head gradient: ``softmax(data) - posterior occupancy of each class``.
That hidden output is not differentiable again (no second derivative).

Label values: with ``blank_label='first'`` channel 0 is the blank, labels are 1..C-1 and a
0 ends a sequence; with ``'last'`` channel C-1 is the blank, labels are 0..C-2 and a -1 ends
it. ``use_label_lengths`` / ``use_data_lengths`` add the inputs ``label_lengths`` /
``data_lengths`` (per sequence) instead.

GPU: the ``ctc`` lowering family (``cuda/lowering_ctc.py``), one kernel computing both outputs.
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import DataError, ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, alias, register
from ._util import fmt

CTC_PARAMS = {
    "use_data_lengths": Param("bool", False, doc="take data_lengths (N,) as an input"),
    "use_label_lengths": Param("bool", False, doc="take label_lengths (N,) as an input"),
    "blank_label": Param("str", "first", ("first", "last"),
                         doc="blank is channel 0 ('first') or channel C-1 ('last')"),
}


def _inputs(a: Attrs) -> tuple[str, ...]:
    return ("data", "label") + (("data_lengths",) if a["use_data_lengths"] else ()) + \
        (("label_lengths",) if a["use_label_lengths"] else ())


def _ctc_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[0] if ins[0] is not None else outs[1]
    if data is None:
        return ins, outs
    if len(data) != 3:
        raise ShapeError(f"data must be 3-D (sequence, batch, alphabet), got {fmt(data)}")
    t, n, c = data
    label = ins[1]
    if label is not None and (len(label) != 2 or label[0] != n):
        raise ShapeError(f"label has shape {fmt(label)}, expected ({n}, label length) from "
                         f"data {fmt(data)}")
    if label is not None and label[1] > t:
        raise ShapeError(f"label has shape {fmt(label)}: {label[1]} labels exceed the "
                         f"{t} steps of data {fmt(data)}")
    for name, s in zip(_inputs(a)[2:], ins[2:]):
        if s is not None and tuple(s) != (n,):
            raise ShapeError(f"{name} has shape {fmt(s)}, expected ({n},) from data {fmt(data)}")
    return [data] + list(ins[1:2]) + [(n,)] * (len(ins) - 2), [(n,), data]


def _ctc_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Loss and gradient share the data's dtype; labels and lengths may be of any type."""
    t = ins[0] if ins[0] is not None else next((o for o in outs if o is not None), None)
    if t is None:
        return ins, outs
    return [t] + list(ins[1:]), [t, t]


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis."""
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def extended(labels: np.ndarray, blank: int) -> tuple[np.ndarray, np.ndarray]:
    """The label sequence with blanks around every label (length 2L+1), and where a state
    may be reached by skipping the blank before it (a label differing from the one before)."""
    ext = np.full(2 * len(labels) + 1, blank, dtype=np.int64)
    ext[1::2] = labels
    skip = np.zeros(len(ext), dtype=bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    return ext, skip


def _recursions(lp: np.ndarray, ext: np.ndarray, skip: np.ndarray) -> tuple:
    """Log alpha (emissions up to and including t) and log beta (emissions after t) over
    ``lp`` (T, C) log-probabilities, each (T, S)."""
    steps, s = lp.shape[0], len(ext)
    alpha = np.full((steps, s), -np.inf)
    beta = np.full((steps, s), -np.inf)
    alpha[0, :min(2, s)] = lp[0, ext[:2]]
    for t in range(1, steps):
        prev, m = alpha[t - 1], alpha[t - 1].copy()
        m[1:] = np.logaddexp(m[1:], prev[:-1])
        m[2:] = np.where(skip[2:], np.logaddexp(m[2:], prev[:-2]), m[2:])
        alpha[t] = m + lp[t, ext]
    beta[-1, max(0, s - 2):] = 0.0
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1] + lp[t + 1, ext]
        m = nxt.copy()
        m[:-1] = np.logaddexp(m[:-1], nxt[1:])
        m[:-2] = np.where(skip[2:], np.logaddexp(m[:-2], nxt[2:]), m[:-2])
        beta[t] = m
    return alpha, beta


def ctc_one(x: np.ndarray, labels: np.ndarray, blank: int) -> tuple[float, np.ndarray]:
    """Loss and d loss / d x of one sequence: ``x`` (T, C) activations, ``labels`` (L,).
    An impossible alignment (too few steps) has loss inf and gradient 0."""
    lp = log_softmax(x.astype(np.float64))
    ext, skip = extended(labels, blank)
    alpha, beta = _recursions(lp, ext, skip)
    total = np.logaddexp.reduce(alpha[-1, max(0, len(ext) - 2):])
    if not np.isfinite(total):
        return np.inf, np.zeros_like(lp)
    post = np.exp(alpha + beta - total)  # (T, S): occupancy of each state
    occupancy = np.zeros_like(lp)
    for k in np.unique(ext):  # (at most L+1 classes)
        occupancy[:, k] = post[:, ext == k].sum(axis=1)
    return -total, np.exp(lp) - occupancy


def _lengths(a: Attrs, xs: list, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Data and label lengths per sequence (given, or the full T / up to the first pad)."""
    label = xs[1]
    extra = list(xs[2:])
    steps = extra.pop(0).astype(np.int64) if a["use_data_lengths"] else \
        np.full(label.shape[0], n_steps, dtype=np.int64)
    if a["use_label_lengths"]:
        return steps, extra.pop(0).astype(np.int64)
    pad = 0 if a["blank_label"] == "first" else -1
    is_pad = label == pad
    first = np.where(is_pad.any(axis=1), is_pad.argmax(axis=1), label.shape[1])
    return steps, first.astype(np.int64)


def _check_values(a: Attrs, label: np.ndarray, steps: np.ndarray, lens: np.ndarray,
                  shape: tuple) -> None:
    """DataError naming the value when a length or a label is out of range."""
    t, _, c = shape
    for name, v, top in (("data_lengths", steps, t), ("label_lengths", lens, label.shape[1])):
        bad = np.flatnonzero((v < 0) | (v > top))
        if bad.size:
            raise DataError(f"CTCLoss: {name}[{bad[0]}] = {v[bad[0]]} is outside [0, {top}]")
    low, high = (1, c - 1) if a["blank_label"] == "first" else (0, c - 2)
    for b, n in enumerate(lens):
        seq = label[b, :n]
        bad = np.flatnonzero((seq < low) | (seq > high) | (seq != np.round(seq)))
        if bad.size:
            raise DataError(f"CTCLoss: label[{b}, {bad[0]}] = {seq[bad[0]]} is not a label of "
                            f"the alphabet of {c} with blank_label='{a['blank_label']}' "
                            f"(labels {low}..{high})")


def _ctc_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, label = xs[0], np.asarray(xs[1])
    steps, lens = _lengths(a, xs, data.shape[0])
    _check_values(a, label, steps, lens, data.shape)
    blank = 0 if a["blank_label"] == "first" else data.shape[2] - 1
    loss = np.zeros(data.shape[1])
    grad = np.zeros(data.shape)
    for b in range(data.shape[1]):
        if steps[b] == 0:
            loss[b] = 0.0 if lens[b] == 0 else np.inf
            continue
        loss[b], grad[:steps[b], b] = ctc_one(data[:steps[b], b], label[b, :lens[b]]
                                              .astype(np.int64), blank)
    return [loss.astype(data.dtype), grad.astype(data.dtype)]


def _ctc_grad(c) -> list:
    scale = c.sym.reshape(c.ograds[0], shape=(1, -1, 1))
    return [c.sym.broadcast_mul(c.outputs[1], scale)] + [None] * (len(c.inputs) - 1)


register(OpDef(
    "CTCLoss", CTC_PARAMS, _inputs, _ctc_shape, _ctc_compute, _ctc_grad, OPAQUE,
    infer_type=_ctc_type, outputs=("output", "grad"), num_visible=1,
    lowering=("ctc", {}),
    doc="CTC loss of (T, N, C) activations against (N, L) label sequences, per sequence; "
        "softmax inside; forward-backward in log space (Graves et al. 2006)."))
for _alias in ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"):
    alias(_alias, "CTCLoss")
