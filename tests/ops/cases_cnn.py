"""Cases for the window ops: Convolution (+ its two gradient ops), Deconvolution,
Pooling (+ backward ops). References are the naive loops of ``tests/ops/naive.py``."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from . import naive
from .case import Case, normal

S = sg.sym
x, w, b, dy = S.var("x"), S.var("w"), S.var("b"), S.var("dy")


def _spatial(n, k, s, p, d):
    return tuple((ni + 2 * pi - di * (ki - 1) - 1) // si + 1 for ni, ki, si, pi, di in
                 zip(n, k, s, p, d))


# (data shape, num_filter, kernel, stride, pad, dilate, groups, no_bias)
CONV_GEOMETRIES = {
    "2d-pad": ((2, 3, 5, 6), 4, (3, 3), (1, 1), (1, 1), (1, 1), 1, False),
    "2d-stride-dilate-group": ((2, 4, 7, 8), 6, (3, 2), (2, 1), (1, 0), (1, 2), 2, False),
    "1d-stride-nobias": ((2, 3, 9), 2, (3,), (2,), (1,), (1,), 1, True),
    "3d": ((1, 2, 4, 5, 4), 3, (2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 1), 1, False),
    "depthwise-odd": ((2, 3, 5, 5), 3, (3, 3), (2, 2), (0, 0), (1, 1), 3, True),
}

CASES: list[Case] = []
for cid, (shape, nf, k, s, p, d, g, nb) in CONV_GEOMETRIES.items():
    attrs = dict(kernel=k, stride=s, pad=p, dilate=d, num_filter=nf, num_group=g, no_bias=nb)
    wshape = (nf, shape[1] // g) + k
    inputs = {"x": normal(*shape), "w": normal(*wshape)}
    if not nb:
        inputs["b"] = normal(nf)
    CASES.append(Case(
        "Convolution",
        lambda a=attrs, nb=nb: S.Convolution(x, w, *(() if nb else (b,)), **a),
        inputs,
        lambda x, w, b=None, a=attrs: naive.conv(x, w, b, a["stride"], a["pad"], a["dilate"],
                                                 a["num_group"]),
        id=f"Convolution-{cid}"))
    out = (shape[0], nf) + _spatial(shape[2:], k, s, p, d)
    CASES.append(Case(
        "_backward_Convolution_data",
        lambda a=attrs: S._backward_Convolution_data(dy, w, x, **a),
        {"dy": normal(*out), "w": normal(*wshape), "x": normal(*shape)},
        lambda dy, w, x, a=attrs, n=shape[2:]: _conv_data_grad_ref(dy, w, n, a),
        grad_nodes=["dy", "w"], id=f"_backward_Convolution_data-{cid}"))
    CASES.append(Case(
        "_backward_Convolution_weight",
        lambda a=attrs: S._backward_Convolution_weight(dy, x, **a),
        {"dy": normal(*out), "x": normal(*shape)},
        lambda dy, x, a=attrs: naive.conv_weight_grad(dy, x, a["kernel"], a["stride"], a["pad"],
                                                      a["dilate"], a["num_group"]),
        id=f"_backward_Convolution_weight-{cid}"))


def _conv_data_grad_ref(dy, w, spatial, a):
    """The data gradient of conv is a transposed conv; cells no window read get zero."""
    y = naive.deconv(dy, w, None, a["stride"], a["pad"], a["dilate"], a["num_group"])
    widths = [(0, n - m) for n, m in zip(spatial, y.shape[2:])]
    return np.pad(y, [(0, 0), (0, 0)] + widths)


# (data shape, kernel, pool_type, stride, pad, full, count_include_pad)
POOL_GEOMETRIES = {
    "max-2x2": ((2, 3, 6, 6), (2, 2), "max", (2, 2), (0, 0), False, True),
    "max-overlap-pad": ((2, 2, 7, 7), (3, 3), "max", (2, 2), (1, 1), False, True),
    "avg-exclude-pad": ((2, 2, 5, 6), (3, 2), "avg", (2, 1), (1, 1), False, False),
    "avg-full": ((2, 2, 7, 6), (3, 3), "avg", (2, 2), (0, 0), True, True),
    "avg-full-pad": ((1, 2, 6, 5), (3, 2), "avg", (2, 2), (1, 1), True, True),
    "max-full": ((2, 2, 7, 6), (3, 3), "max", (2, 2), (1, 0), True, True),
    "sum-1d": ((2, 3, 9), (3,), "sum", (2,), (1,), False, True),
    "max-3d": ((1, 2, 4, 4, 5), (2, 2, 2), "max", (2, 2, 2), (0, 0, 0), False, True),
    # Disjoint windows leaving cells no window covers (remainder, gaps): the GPU's tile kernel.
    "max-3x3-remainder": ((2, 2, 8, 7), (3, 3), "max", (3, 3), (0, 0), False, True),
    "avg-gap-pad": ((2, 2, 7, 9), (2, 2), "avg", (3, 3), (1, 1), False, False),
    "sum-1d-gap": ((2, 3, 10), (2,), "sum", (3,), (0,), False, True),
}
for cid, (shape, k, pt, s, p, full, inc) in POOL_GEOMETRIES.items():
    attrs = dict(kernel=k, pool_type=pt, stride=s, pad=p, count_include_pad=inc,
                 pooling_convention="full" if full else "valid")
    ref_args = dict(kernel=k, pool_type=pt, stride=s, pad=p, full=full, include_pad=inc)
    CASES.append(Case("Pooling", lambda a=attrs: S.Pooling(x, **a), {"x": normal(*shape)},
                      lambda x, r=ref_args: naive.pool(x, **r), id=f"Pooling-{cid}"))
    out = naive.pool(np.zeros(shape), **ref_args).shape
    CASES.append(Case(
        "_backward_Pooling",
        lambda a=attrs: S._backward_Pooling(dy, x, S.Pooling(x, **a), **a),
        {"dy": normal(*out), "x": normal(*shape)},
        lambda dy, x, r=ref_args: naive.pool_grad(x, dy, **r), grad_nodes=["dy"],
        also_covers=("_pooling_gather",), id=f"_backward_Pooling-{cid}"))
# Channels last (NWC, NHWC, NDHWC): the same windows over data with the channels moved last,
# against the reference on the channels-first transpose.
LAST = {3: "NWC", 4: "NHWC", 5: "NDHWC"}


def _first(v: np.ndarray) -> np.ndarray:
    return np.moveaxis(v, -1, 1)


def _last(v: np.ndarray) -> np.ndarray:
    return np.moveaxis(v, 1, -1)


for cid in ("max-2x2", "max-overlap-pad", "avg-exclude-pad", "max-full", "sum-1d", "max-3d",
            "max-3x3-remainder"):
    shape, k, pt, s, p, full, inc = POOL_GEOMETRIES[cid]
    attrs = dict(kernel=k, pool_type=pt, stride=s, pad=p, count_include_pad=inc,
                 pooling_convention="full" if full else "valid", layout=LAST[len(shape)])
    ref_args = dict(kernel=k, pool_type=pt, stride=s, pad=p, full=full, include_pad=inc)
    last_shape = (shape[0],) + shape[2:] + (shape[1],)
    CASES.append(Case("Pooling", lambda a=attrs: S.Pooling(x, **a), {"x": normal(*last_shape)},
                      lambda x, r=ref_args: _last(naive.pool(_first(x), **r)),
                      id=f"Pooling-last-{cid}"))
    out = _last(naive.pool(np.zeros(shape), **ref_args)).shape
    CASES.append(Case(
        "_backward_Pooling",
        lambda a=attrs: S._backward_Pooling(dy, x, S.Pooling(x, **a), **a),
        {"dy": normal(*out), "x": normal(*last_shape)},
        lambda dy, x, r=ref_args: _last(naive.pool_grad(_first(x), _first(dy), **r)),
        grad_nodes=["dy"], also_covers=("_pooling_gather",), id=f"_backward_Pooling-last-{cid}"))
for pt in ("max", "avg", "sum"):
    CASES.append(Case("Pooling", lambda t=pt: S.Pooling(x, pool_type=t, global_pool=True),
                      {"x": normal(2, 3, 4, 5)},
                      lambda x, t=pt: naive.pool(x, None, t, global_pool=True),
                      id=f"Pooling-global-{pt}"))

# (data shape, num_filter, kernel, stride, pad, dilate, groups, adj, target_shape)
DECONV_GEOMETRIES = {
    "2d-adj": ((2, 3, 3, 4), 4, (3, 3), (2, 2), (1, 1), (1, 1), 1, (1, 0), ()),
    "2d-group-dilate": ((2, 4, 3, 3), 2, (2, 3), (1, 2), (0, 1), (2, 1), 2, (0, 1), ()),
    "2d-target": ((1, 2, 3, 3), 3, (3, 3), (2, 2), (0, 0), (1, 1), 1, (), (6, 5)),
    "1d": ((2, 2, 4), 3, (3,), (2,), (0,), (1,), 1, (), ()),
}


def _target_pad(shape, k, s, d, target):
    """MXNet's padding for target_shape, derived here independently of symgraph."""
    pads, adjs = [], []
    for n, kk, ss, dd, t in zip(shape[2:], k, s, d, target):
        total = ss * (n - 1) + dd * (kk - 1) + 1 - t
        pads.append(-(-total // 2))
        adjs.append(total % 2)
    return tuple(pads), tuple(adjs)


for cid, (shape, nf, k, s, p, d, g, adj, target) in DECONV_GEOMETRIES.items():
    attrs = dict(kernel=k, stride=s, pad=p, dilate=d, num_filter=nf, num_group=g, adj=adj,
                 target_shape=target, no_bias=False)
    rp, radj = _target_pad(shape, k, s, d, target) if target else (p, adj or None)
    wshape = (shape[1], nf // g) + k
    CASES.append(Case(
        "Deconvolution", lambda a=attrs: S.Deconvolution(x, w, b, **a),
        {"x": normal(*shape), "w": normal(*wshape), "b": normal(nf)},
        lambda x, w, b, a=attrs, rp=rp, ra=radj: naive.deconv(x, w, b, a["stride"], rp,
                                                              a["dilate"], a["num_group"], ra),
        also_covers=("_backward_Deconvolution_data", "_backward_Deconvolution_weight"),
        id=f"Deconvolution-{cid}"))
CASES.append(Case(
    "Deconvolution",
    lambda: S.Group([S.Deconvolution(x, w, kernel=(3, 3), num_filter=2, stride=(2, 2),
                                     name="d")]),
    {"x": normal(1, 2, 2, 3), "w": normal(2, 2, 3, 3)},
    lambda x, w: naive.deconv(x, w, None, (2, 2)), id="Deconvolution-nobias"))


def _second_order(op: str, out: str):
    """d/d(x, w) of <v, d(sum of op's output * u)/dx>: differentiates the gradient ops."""
    def build():
        y = getattr(S, op)(x, w, kernel=(3, 2), stride=(2, 1), pad=(1, 1), num_filter=3,
                           no_bias=True, name="c")
        gx, gw = (y * S.var("u")).gradient(["x", "w"])
        return S.sum(gx * S.var("v")) + S.sum(gw * S.var("t"))
    return build


for op, shapes in (("Convolution", ((1, 2, 4, 3), (3, 2, 3, 2), (1, 3, 2, 4))),
                   ("Deconvolution", ((1, 2, 2, 3), (2, 3, 3, 2), (1, 3, 3, 2)))):
    xs, ws, ys = shapes
    CASES.append(Case(
        op, _second_order(op, "y"),
        {"x": normal(*xs), "w": normal(*ws), "u": normal(*ys), "v": normal(*xs),
         "t": normal(*ws)},
        lambda x, w, u, v, t, op=op: _second_order_ref(op, x, w, u, v, t),
        grad_nodes=["x", "w", "u"], id=f"{op}-second-order"))


def _second_order_ref(op, x, w, u, v, t):
    """The objective is bilinear in (x, w) pairs with u: sum(u * y(v, w)) + sum(u * y(x, t))
    (the gradient of <u, y(x, w)> is linear in the other factor)."""
    f = (lambda a, b: naive.conv(a, b, None, (2, 1), (1, 1))) if op == "Convolution" else \
        (lambda a, b: naive.deconv(a, b, None, (2, 1), (1, 1)))
    return np.array(np.sum(u * f(v, w)) + np.sum(u * f(x, t)))


# _conv_act_pool (made by the fuse_conv_pool pass): conv + activation + max pool, references
# composed from the naive loops. (data, num_filter, kernel, stride, pad, act, pool window, no_bias)
ACTS = {None: (lambda z: z, lambda y: np.ones_like(y)),
        "relu": (lambda z: np.maximum(z, 0), lambda y: (y > 0).astype(y.dtype)),
        "tanh": (np.tanh, lambda y: 1 - y * y),
        "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda y: y * (1 - y))}
CAP_GEOMETRIES = {
    "relu-pad": ((2, 1, 6, 7), 3, (3, 3), (1, 1), (1, 1), "relu", (2, 2), False),
    "tanh-stride-nobias": ((2, 2, 9, 8), 2, (3, 2), (2, 1), (0, 1), "tanh", (2, 3), True),
    "sigmoid": ((1, 3, 5, 5), 2, (3, 3), (1, 1), (1, 1), "sigmoid", (2, 2), False),
    "linear-5x5": ((2, 1, 8, 8), 2, (5, 5), (1, 1), (0, 0), None, (2, 2), False),
}


def _cap_maps(x, w, b, a):
    y = ACTS[a["act_type"]][0](naive.conv(x, w, b, a["stride"], a["pad"]))
    return y, naive.pool(y, a["pool_kernel"], "max", a["pool_kernel"])


def _cap_param_grads(dy, x, w, b, a):
    y, _ = _cap_maps(x, w, b, a)
    dz = naive.pool_grad(y, dy, a["pool_kernel"], "max", a["pool_kernel"])
    dz = dz * ACTS[a["act_type"]][1](y)
    return [naive.conv_weight_grad(dz, x, a["kernel"], a["stride"], a["pad"]),
            dz.sum(axis=(0, 2, 3))]


for cid, (shape, nf, k, s, p, act, win, nb) in CAP_GEOMETRIES.items():
    attrs = dict(kernel=k, stride=s, pad=p, num_filter=nf, no_bias=nb, act_type=act,
                 pool_kernel=win)
    args = {"x": normal(*shape), "w": normal(*(nf, shape[1]) + k, scale=0.5)}
    if not nb:
        args["b"] = normal(nf)
    out = _cap_maps(np.zeros(shape), np.zeros((nf, shape[1]) + k), None, attrs)[1].shape
    CASES.append(Case(
        "_conv_act_pool", lambda a=attrs, nb=nb: S._conv_act_pool(x, w, *(() if nb else (b,)), **a),
        args, lambda x, w, b=None, a=attrs: _cap_maps(x, w, b, a)[1], id=f"_conv_act_pool-{cid}"))
    CASES.append(Case(
        "_backward_conv_act_pool",
        lambda a=attrs, nb=nb: S._backward_conv_act_pool(dy, x, w, *(() if nb else (b,)), **a),
        {"dy": normal(*out), **args},
        lambda dy, x, w, b=None, a=attrs: _cap_param_grads(dy, x, w, b, a), grad=False,
        id=f"_backward_conv_act_pool-{cid}"))
