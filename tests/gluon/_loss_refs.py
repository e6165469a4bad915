"""float64 numpy references of the gluon losses beyond cross-entropy/L1/L2, written from the
formulas in MXNet 1.9.1's documentation (independent of symgraph's ops), and a brute-force
CTC likelihood that enumerates every alignment."""
from __future__ import annotations

import itertools

import numpy as np

from ._refs import log_softmax


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def huber(p, l, rho=1.0):
    d = np.abs(l - p)
    return np.where(d > rho, d - rho / 2, d * d / (2 * rho)).mean(1)


def hinge(p, l, margin=1.0):
    return relu(margin - p * l).mean(1)


def squared_hinge(p, l, margin=1.0):
    return (relu(margin - p * l) ** 2).mean(1)


def logistic(p, l, label_format="signed"):
    sign = l if label_format == "signed" else 2 * l - 1
    return np.log1p(np.exp(-p * sign)).mean(1)


def triplet(p, pos, neg, margin=1.0):
    return relu(((pos - p) ** 2).sum(1) - ((neg - p) ** 2).sum(1) + margin)


def poisson_nll(p, t, from_logits=True, compute_full=False, eps=1e-8):
    loss = np.exp(p) - t * p if from_logits else p - t * np.log(p + eps)
    if compute_full:
        safe = np.maximum(t, 2.0)  # (only counts above 1 take the term)
        stirling = safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe)
        loss = loss + np.where(t > 1, stirling, 0.0)
    return np.array([loss.mean()])


def cosine_embedding(a, b, y, margin=0.0):
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1),
                                      1e-12)
    loss = np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, relu(cos - margin), 0.0)
    return loss[:, None]


def kl_div(p, l, from_logits=True):
    logp = p if from_logits else log_softmax(p, -1)
    return (l * (np.log(l + 1e-12) - logp)).sum(1)


def sdml(x1, x2, s=0.3):
    n = len(x1)
    dist = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(2)
    labels = np.where(np.eye(n) > 0, 1 - s, s / (n - 1))
    return kl_div(log_softmax(-dist, 1), labels)


def collapse(path: tuple, blank: int) -> tuple:
    """A CTC alignment's label sequence: repeats merged, then blanks removed."""
    merged = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
    return tuple(k for k in merged if k != blank)


def ctc_brute(x: np.ndarray, labels, blank: int) -> float:
    """-log of the summed probability of every alignment of ``x`` (T, C) to ``labels``."""
    prob = np.exp(log_softmax(x, -1))
    steps, c = prob.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=steps):
        if collapse(path, blank) == tuple(labels):
            total += np.prod(prob[np.arange(steps), path])
    return -np.log(total)


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of scalar ``f`` at ``x`` (float64)."""
    g = np.zeros_like(x)
    for i in range(x.size):
        hi, lo = x.copy(), x.copy()
        hi.reshape(-1)[i] += eps
        lo.reshape(-1)[i] -= eps
        g.reshape(-1)[i] = (f(hi) - f(lo)) / (2 * eps)
    return g
