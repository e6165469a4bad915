"""Cases for shape, layout, reduction and indexing ops of issue 3 (and more Reshape codes).
Backward helper ops get cases of their own so their gradients (the forward op) are checked.
References are independent numpy."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, integers, normal, uniform

S = sg.sym
x, y, dy, i = S.var("x"), S.var("y"), S.var("dy"), S.var("i")


def _edge_pad_grad(g, shape, widths):
    """Adjoint of np.pad(mode='edge') by brute force over a basis (tiny shapes only)."""
    out = np.zeros(shape)
    for k in range(out.size):
        e = np.zeros(out.size)
        e[k] = 1
        out.reshape(-1)[k] = np.sum(g * np.pad(e.reshape(shape), widths, mode="edge"))
    return out


def _reflect_pad_grad(g, shape, widths):
    out = np.zeros(shape)
    for k in range(out.size):
        e = np.zeros(out.size)
        e[k] = 1
        out.reshape(-1)[k] = np.sum(g * np.pad(e.reshape(shape), widths, mode="reflect"))
    return out


CASES: list[Case] = [
    Case("transpose", lambda: S.transpose(x), {"x": normal(2, 3, 4)}, lambda x: x.T),
    Case("transpose", lambda: S.transpose(x, axes=(1, 2, 0)), {"x": normal(2, 3, 4)},
         lambda x: np.transpose(x, (1, 2, 0)), id="transpose-axes"),
    Case("expand_dims", lambda: S.expand_dims(x, axis=-1), {"x": normal(2, 3)},
         lambda x: x[:, :, None]),
    Case("squeeze", lambda: S.squeeze(x), {"x": normal(2, 1, 3, 1)}, lambda x: x[:, 0, :, 0]),
    Case("squeeze", lambda: S.squeeze(x, axis=(1,)), {"x": normal(2, 1, 3, 1)},
         lambda x: x[:, 0], id="squeeze-axis"),
    Case("Concat", lambda: S.Concat(x, y, dim=1), {"x": normal(2, 3, 2), "y": normal(2, 1, 2)},
         lambda x, y: np.concatenate([x, y], 1), also_covers=("_backward_Concat",)),
    Case("Concat", lambda: S.concat(x, y, i, dim=-1),
         {"x": normal(2, 3), "y": normal(2, 1), "i": normal(2, 2)},
         lambda x, y, i: np.concatenate([x, y, i], -1), id="Concat-three-lastdim"),
    Case("SliceChannel", lambda: S.SliceChannel(x, num_outputs=3), {"x": normal(2, 6, 2)},
         lambda x: np.split(x, 3, axis=1)),
    Case("SliceChannel", lambda: S.split(x, num_outputs=2, axis=-1, squeeze_axis=True),
         {"x": normal(3, 2)}, lambda x: [x[:, 0], x[:, 1]], id="split-squeeze"),
    Case("SliceChannel", lambda: S.SliceChannel(x, num_outputs=3)[1], {"x": normal(2, 6)},
         lambda x: x[:, 2:4], id="SliceChannel-one-output-used"),
    Case("slice", lambda: S.slice(x, begin=(1, None), end=(None, -1), step=(1, 2)),
         {"x": normal(4, 6)}, lambda x: x[1:, :-1:2], also_covers=("_backward_slice",)),
    Case("slice", lambda: S.slice(x, begin=(3,), end=(0,), step=(-2,)), {"x": normal(5, 2)},
         lambda x: x[3:0:-2], id="slice-negative-step"),
    Case("_backward_slice", lambda: S._backward_slice(dy, x, begin=(1, 0), end=(3, 4)),
         {"dy": normal(2, 4), "x": normal(4, 5)},
         lambda dy, x: np.pad(dy, ((1, 1), (0, 1))), grad_nodes=["dy"]),
    Case("slice_axis", lambda: S.slice_axis(x, axis=1, begin=1, end=None), {"x": normal(2, 4)},
         lambda x: x[:, 1:], also_covers=("_backward_slice_axis",)),
    Case("slice_axis", lambda: S.slice_axis(x, axis=-1, begin=-3, end=-1), {"x": normal(2, 4)},
         lambda x: x[:, -3:-1], id="slice_axis-negative"),
    Case("broadcast_to", lambda: S.broadcast_to(x, shape=(0, 3, 4)), {"x": normal(2, 1, 4)},
         lambda x: np.broadcast_to(x, (2, 3, 4))),
    Case("tile", lambda: S.tile(x, reps=(2, 1, 3)), {"x": normal(2, 3)},
         lambda x: np.tile(x, (2, 1, 3))),
    Case("_backward_tile", lambda: S._backward_tile(dy, x, reps=(2, 3)),
         {"dy": normal(4, 6), "x": normal(2, 2)},
         lambda dy, x: dy.reshape(2, 2, 3, 2).sum(axis=(0, 2)), grad_nodes=["dy"]),
    Case("repeat", lambda: S.repeat(x, repeats=2, axis=1), {"x": normal(2, 3)},
         lambda x: np.repeat(x, 2, axis=1)),
    Case("repeat", lambda: S.repeat(x, repeats=3), {"x": normal(2, 2)},
         lambda x: np.repeat(x, 3), id="repeat-flat"),
    Case("_backward_repeat", lambda: S._backward_repeat(dy, x, repeats=2, axis=0),
         {"dy": normal(6, 2), "x": normal(3, 2)},
         lambda dy, x: dy[0::2] + dy[1::2], grad_nodes=["dy"]),
    Case("pad", lambda: S.pad(x, mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 0),
                              constant_value=1.5),
         {"x": normal(1, 2, 3, 3)},
         lambda x: np.pad(x, ((0, 0), (0, 0), (1, 2), (2, 0)), constant_values=1.5)),
    Case("pad", lambda: S.pad(x, mode="edge", pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
         {"x": normal(1, 2, 3, 2)},
         lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 3)), mode="edge"), id="pad-edge"),
    Case("pad", lambda: S.pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 2, 1, 1, 2)),
         {"x": normal(1, 2, 4, 3)},
         lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="reflect"),
         id="pad-reflect"),
    Case("_backward_pad", lambda: S._backward_pad(dy, x, mode="edge",
                                                  pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
         {"dy": normal(1, 2, 6, 6), "x": normal(1, 2, 3, 2)},
         lambda dy, x: _edge_pad_grad(dy, x.shape, ((0, 0), (0, 0), (2, 1), (1, 3))),
         grad_nodes=["dy"]),
    Case("_backward_pad", lambda: S._backward_pad(dy, x, mode="reflect",
                                                  pad_width=(0, 0, 0, 0, 2, 1, 1, 2)),
         {"dy": normal(1, 1, 7, 6), "x": normal(1, 1, 4, 3)},
         lambda dy, x: _reflect_pad_grad(dy, x.shape, ((0, 0), (0, 0), (2, 1), (1, 2))),
         grad_nodes=["dy"], id="_backward_pad-reflect"),
    Case("reverse", lambda: S.reverse(x, axis=(0, 2)), {"x": normal(2, 3, 4)},
         lambda x: x[::-1, :, ::-1]),
    Case("Cast", lambda: S.Cast(x, dtype="float64"), {"x": normal(2, 3)}, lambda x: x,
         also_covers=("_backward_Cast",)),
    Case("Reshape", lambda: S.Reshape(x, shape=(-4, 2, -1, -2)), {"x": normal(6, 2, 3)},
         lambda x: x.reshape(2, 3, 2, 3), id="Reshape-minus4"),
    Case("Reshape", lambda: S.Reshape(x, shape=(-3, -2)), {"x": normal(2, 3, 4, 5)},
         lambda x: x.reshape(6, 4, 5), id="Reshape-minus3"),
    Case("Reshape", lambda: S.Reshape(x, shape=(-1, 0), reverse=True), {"x": normal(2, 3, 4)},
         lambda x: x.reshape(6, 4), id="Reshape-reverse"),
    Case("Reshape", lambda: S.Reshape(x, shape=(0, -2)), {"x": normal(2, 3, 4)},
         lambda x: x, id="Reshape-0-minus2"),
    Case("broadcast_like", lambda: S.broadcast_like(x, y), {"x": normal(2, 1, 1),
                                                            "y": normal(2, 3, 4)},
         lambda x, y: np.broadcast_to(x, (2, 3, 4)), grad_nodes=["x"],
         id="broadcast_like-3d"),
    Case("add_n", lambda: S.ElementWiseSum(x, y), {"x": normal(2, 3), "y": normal(2, 3)},
         lambda x, y: x + y, id="ElementWiseSum-alias"),
    # reductions and indexing
    Case("prod", lambda: S.prod(x, axis=1), {"x": uniform(2, 3, 2, low=0.5, high=1.5)},
         lambda x: x.prod(axis=1)),
    Case("prod", lambda: S.prod(x), {"x": uniform(2, 3, low=0.5, high=1.5)},
         lambda x: np.array(x.prod()), id="prod-all"),
    Case("norm", lambda: S.norm(x), {"x": normal(3, 4)}, lambda x: np.array(np.sqrt((x ** 2).sum()))),
    Case("norm", lambda: S.norm(x, ord=1, axis=(1,), keepdims=True), {"x": uniform(3, 4, low=0.1)},
         lambda x: np.abs(x).sum(axis=1, keepdims=True), id="norm-l1-axis"),
    Case("argmax", lambda: S.argmax(x, axis=1), {"x": normal(3, 4)},
         lambda x: x.argmax(axis=1).astype(float), grad=False),
    Case("argmax", lambda: S.argmax(x), {"x": normal(3, 4)},
         lambda x: np.array(float(x.argmax())), grad=False, id="argmax-flat"),
    Case("argmin", lambda: S.argmin(x, axis=0, keepdims=True), {"x": normal(3, 4)},
         lambda x: x.argmin(axis=0)[None].astype(float), grad=False),
    Case("one_hot", lambda: S.one_hot(i, depth=4, on_value=2.0, off_value=-1.0),
         {"i": integers(-1, 5, 2, 3)},
         lambda i: np.where(np.arange(4) == i[..., None], 2.0, -1.0), grad=False),
    Case("take", lambda: S.take(x, i), {"x": normal(4, 3), "i": integers(-1, 6, 2, 2)},
         lambda x, i: x[np.clip(i.astype(int), 0, 3)], grad_nodes=["x"],
         also_covers=("_backward_take",)),
    Case("take", lambda: S.take(x, i, axis=1, mode="wrap"),
         {"x": normal(2, 3, 2), "i": integers(-4, 7, 5)},
         lambda x, i: x[:, np.mod(i.astype(int), 3)], grad_nodes=["x"], id="take-axis1-wrap"),
    Case("_backward_take", lambda: S._backward_take(dy, i, x, axis=0),
         {"dy": normal(5, 2), "i": integers(0, 3, 5), "x": normal(3, 2)},
         lambda dy, i, x: np.stack([dy[i == k].sum(axis=0) for k in range(3)]),
         grad_nodes=["dy"]),
    Case("Embedding", lambda: S.Embedding(i, input_dim=5, output_dim=3, name="emb"),
         {"i": integers(0, 5, 2, 4), "emb_weight": normal(5, 3)},
         lambda i, emb_weight: emb_weight[i.astype(int)], grad_nodes=["emb_weight"]),
    Case("where", lambda: S.where(i, x, y),
         {"i": integers(0, 2, 3, 4), "x": normal(3, 4), "y": normal(3, 4)},
         lambda i, x, y: np.where(i != 0, x, y), grad_nodes=["x", "y"]),
    Case("batch_dot", lambda: S.batch_dot(x, y), {"x": normal(2, 3, 4), "y": normal(2, 4, 5)},
         lambda x, y: x @ y),
    Case("batch_dot", lambda: S.batch_dot(x, y, transpose_a=True, transpose_b=True),
         {"x": normal(2, 4, 3), "y": normal(2, 5, 4)},
         lambda x, y: x.transpose(0, 2, 1) @ y.transpose(0, 2, 1), id="batch_dot-tt"),
]
