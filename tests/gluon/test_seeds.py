"""Seeds 000 and 002 run as written, with ``import symgraph as mx`` and a dataset ``root``.

CI runs them shortened on the CPU (``SHORT_SAMPLES`` images, learning rate 0.1 so that a few
hundred batches leave the recipe's initial plateau, which at 0.01 lasts about 450 batches in
MXNet 1.9.1 as well), asserting that the test loss falls and the accuracy is far above chance;
the same network written as a HybridBlock and hybridized trains the same way. The ``slow`` test
runs the unchanged recipe for one epoch and compares its test accuracy with ``Module`` on the
same recipe.
"""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

from .seed_programs import (HYBRID_MODEL, SEED_000, seed_000_text_matches, seed_002,
                            to_symgraph)

SHORT_SAMPLES = 64 * 200
N_TEST = 2000


@pytest.fixture(scope="module")
def test_set(mnist_dir) -> tuple[np.ndarray, np.ndarray]:
    images, labels = sg.datasets.mnist.load(mnist_dir, "test")
    return images.reshape(-1, 1, 28, 28).astype(np.float32) / 255.0, labels.astype(np.int64)


def evaluate(net, images: np.ndarray, labels: np.ndarray, n: int = N_TEST) -> tuple:
    """(mean cross-entropy, accuracy) of ``net`` on the first ``n`` test images."""
    losses, hits = [], 0
    for lo in range(0, n, 500):
        logits = net(sg.nd.array(images[lo:lo + 500])).asnumpy().astype(np.float64)
        m = logits.max(1, keepdims=True)
        logp = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
        y = labels[lo:lo + 500]
        losses.append(-logp[np.arange(len(y)), y])
        hits += int((logits.argmax(1) == y).sum())
    return float(np.concatenate(losses).mean()), hits / n


def run(parts, mnist_dir, test_set, **edits) -> tuple:
    """Exec the model part, evaluate, exec the training part, evaluate; also the number of
    programs compiled by the training part."""
    ns: dict = {}
    exec(compile(to_symgraph(parts[0], str(mnist_dir), **edits), "<seed model>", "exec"), ns)
    before = evaluate(ns["net"], *test_set)
    compiles = sg.imperative.compile_count()
    exec(compile(to_symgraph(parts[1], str(mnist_dir), **edits), "<seed train>", "exec"), ns)
    compiles = sg.imperative.compile_count() - compiles
    return before, evaluate(ns["net"], *test_set), compiles, ns


def test_seed_000_is_seed_002s_program() -> None:
    assert seed_000_text_matches()
    squash = lambda s: "".join(s.split()).replace("#", "")  # noqa: E731
    code_002 = [squash("\n".join(l.split("#")[0] for l in p.splitlines())) for p in seed_002()]
    code_000 = [squash("\n".join(l.split("#")[0] for l in p.splitlines())) for p in SEED_000]
    assert code_000 == code_002


def test_seed_002_trains_shortened(mnist_dir, test_set) -> None:
    sg.random.seed(0)
    (loss0, acc0), (loss1, acc1), compiles, ns = run(
        seed_002(), mnist_dir, test_set, n_samples=SHORT_SAMPLES, learning_rate=0.1)
    assert loss1 < 0.5 * loss0 and acc1 > 0.85, (loss0, acc0, loss1, acc1)
    assert compiles <= 2  # the training step compiles once (plus the evaluation's program)
    names = list(ns["net"].collect_params().keys())
    assert names[0].endswith("_conv0_weight") and names[-1].endswith("_dense1_bias")


def test_hybridized_seed_network_trains_shortened(mnist_dir, test_set) -> None:
    sg.random.seed(0)
    (loss0, acc0), (loss1, acc1), compiles, ns = run(
        (HYBRID_MODEL, seed_002()[1]), mnist_dir, test_set, n_samples=SHORT_SAMPLES,
        learning_rate=0.1)
    assert loss1 < 0.5 * loss0 and acc1 > 0.85, (loss0, acc0, loss1, acc1)
    assert compiles <= 2
    assert ns["net"]._cached  # it ran through the traced program


@pytest.mark.slow
def test_seed_002_one_epoch_matches_module(mnist_dir, test_set) -> None:
    """The unchanged recipe (SGD lr 0.01, batch 64, default init) for one epoch; Module on the
    same recipe (same initial weights, same batch order) reaches the same test accuracy."""
    sg.random.seed(0)
    _, (_, acc_gluon), _, ns = run(seed_002(), mnist_dir, test_set)
    acc_module = _module_accuracy(mnist_dir, test_set)
    assert abs(acc_gluon - acc_module) <= 0.003, (acc_gluon, acc_module)


def _module_accuracy(mnist_dir, test_set) -> float:
    from models.simple_cnn import build
    images, labels = sg.datasets.mnist.load(mnist_dir, "train")
    x = images.reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
    sg.random.seed(0)
    it = sg.io.NDArrayIter(x, labels.astype(np.float32), 64, shuffle=True)
    mod = sg.mod.Module(build(), context=sg.cpu())
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params={"learning_rate": 0.01},
            initializer=sg.init.Uniform(0.07))
    images_t, labels_t = test_set
    out = mod.predict(sg.io.NDArrayIter(images_t[:N_TEST], None, 500)).asnumpy()
    return float((out.argmax(1) == labels_t[:N_TEST]).mean())
