"""Float64 numpy references of MXNet 1.9.1's optimizer update kernels, written from MXNet's
``optimizer_op-inl.h`` independently of ``symgraph.optimizer``. Each returns the new weight and
the new states, in the op's input order (MXNet's); ``mp_`` forms step the master weight."""
from __future__ import annotations

import numpy as np


def clip(g: np.ndarray, c: float) -> np.ndarray:
    return np.clip(g, -c, c) if c >= 0 else g


def sgd(w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, **_):
    return [(1 - lr * wd) * w - lr * clip(rescale_grad * g, clip_gradient)]


def sgd_mom(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, **_):
    mom = momentum * mom - lr * wd * w - lr * clip(rescale_grad * g, clip_gradient)
    return [w + mom, mom]


def nag_mom(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, **_):
    gr = clip(rescale_grad * g, clip_gradient) + wd * w
    mom = momentum * mom - lr * gr
    return [w + momentum * mom - lr * gr, mom]


def adam(w, g, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
         clip_gradient=-1.0, **_):
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * gr
    var = beta2 * var + (1 - beta2) * gr ** 2
    return [w - lr * mean / (np.sqrt(var) + epsilon), mean, var]


def rmsprop(w, g, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
            clip_gradient=-1.0, clip_weights=-1.0, **_):
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    n = (1 - gamma1) * gr ** 2 + gamma1 * n
    w = w - lr * gr / np.sqrt(n + epsilon)
    return [clip(w, clip_weights), n]


def rmspropalex(w, g, n, gm, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0, **_):
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    n = (1 - gamma1) * gr ** 2 + gamma1 * n
    gm = (1 - gamma1) * gr + gamma1 * gm
    delta = gamma2 * delta - lr * gr / np.sqrt(n - gm ** 2 + epsilon)
    return [clip(w + delta, clip_weights), n, gm, delta]


def ftrl(w, g, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
         **_):
    gr = clip(rescale_grad * g, clip_gradient)
    z = z + gr - (np.sqrt(n + gr ** 2) - np.sqrt(n)) * w / lr
    n = n + gr ** 2
    w = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > lamda1)
    return [w, z, n]


def ftml(w, g, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
         clip_grad=-1.0, **_):
    gr = clip(rescale_grad * g + wd * w, clip_grad)
    v = beta2 * v + (1 - beta2) * gr ** 2
    d_t = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z = beta1 * z + (1 - beta1) * gr - (d_t - beta1 * d) * w
    return [-z / d_t, d_t, v, z]


def signsgd(w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, **_):
    return [(1 - lr * wd) * w - lr * np.sign(clip(rescale_grad * g, clip_gradient))]


def signum(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
           wd_lh=0.0, **_):
    mom = momentum * mom - (1 - momentum) * (wd * w + clip(rescale_grad * g, clip_gradient))
    return [(1 - lr * wd_lh) * w + lr * np.sign(mom), mom]


def lamb1(w, g, mean, var, t, wd, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True,
          rescale_grad=1.0, clip_gradient=-1.0, **_):
    gr = clip(rescale_grad * g, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * gr
    var = beta2 * var + (1 - beta2) * gr ** 2
    m, v = (mean / (1 - beta1 ** t), var / (1 - beta2 ** t)) if bias_correction else (mean, var)
    return [m / (np.sqrt(v) + epsilon) + wd * w, mean, var]


def lamb2(w, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0, **_):
    r1 = float(r1.reshape(-1)[0])
    r2 = float(r2.reshape(-1)[0])
    if lower_bound >= 0:
        r1 = max(r1, lower_bound)
    if upper_bound >= 0:
        r1 = min(r1, upper_bound)
    ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
    return [w - lr * ratio * g]


def master(ref):
    """The ``mp_`` form of ``ref``: reads the master weight (last input) for the weight;
    returns the new weight, the new states and the new master weight."""
    def mp(w, g, *rest, **kw):
        *states, w32 = rest
        new = ref(w32, g, *states, **kw)
        return [new[0], *new[1:], new[0]]
    return mp
