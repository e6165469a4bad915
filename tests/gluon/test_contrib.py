"""gluon.contrib.nn and the new samplers: PixelShuffle against an index-by-index numpy
rearrangement, Concurrent against its children run one by one, SparseEmbedding against row
lookup (its gradient dense), imperatively and hybridized; samplers against MXNet's
documented sequences; bad arguments raise AttrError."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError
from symgraph.gluon import data, nn
from symgraph.gluon.contrib import nn as cnn


def _shuffle_ref(x: np.ndarray, f: tuple) -> np.ndarray:
    """out[n, c, s1*f1 + i1, ...] = x[n, c*prod(f) + (i1*f2 + i2)*f3 + ..., s1, ...]."""
    n, cf = x.shape[:2]
    c, space = cf // int(np.prod(f)), x.shape[2:]
    out = np.zeros((n, c) + tuple(s * k for s, k in zip(space, f)))
    for ch, offs, pos in itertools.product(range(c), itertools.product(*map(range, f)),
                                           itertools.product(*map(range, space))):
        src = ch * int(np.prod(f)) + int(np.ravel_multi_index(offs, f))
        dst = tuple(p * k + o for p, k, o in zip(pos, f, offs))
        out[(slice(None), ch) + dst] = x[(slice(None), src) + pos]
    return out


SHUFFLES = [(cnn.PixelShuffle1D, 3, (3,), (2, 6, 4)),
            (cnn.PixelShuffle2D, (2, 3), (2, 3), (2, 12, 3, 2)),
            (cnn.PixelShuffle2D, 2, (2, 2), (1, 8, 2, 3)),
            (cnn.PixelShuffle3D, (2, 1, 2), (2, 1, 2), (1, 8, 2, 3, 2))]


@pytest.mark.parametrize("cls,factor,factors,shape", SHUFFLES)
def test_pixel_shuffle_matches_index_reference(cls, factor, factors, shape) -> None:
    x = np.random.default_rng(0).normal(size=shape)
    want = _shuffle_ref(x, factors)
    block = cls(factor)
    for hybrid in (False, True):
        block.hybridize(hybrid)
        xs = sg.nd.array(x, dtype=np.float64)
        xs.attach_grad()
        head = np.random.default_rng(1).normal(size=want.shape)
        with sg.autograd.record():
            out = block(xs)
        out.backward(sg.nd.array(head, dtype=np.float64))
        np.testing.assert_array_equal(out.asnumpy(), want)
        # a permutation: each input element receives the head gradient of where it went
        where = _shuffle_ref(np.arange(x.size, dtype=np.float64).reshape(shape), factors)
        grad = np.zeros(x.size)
        grad[where.reshape(-1).astype(int)] = head.reshape(-1)
        np.testing.assert_array_equal(xs.grad.asnumpy(), grad.reshape(shape))


def test_pixel_shuffle_bad_factor() -> None:
    with pytest.raises(AttrError, match=r"PixelShuffle2D: factor .* got \(2, 0\)"):
        cnn.PixelShuffle2D((2, 0))
    with pytest.raises(AttrError, match="PixelShuffle3D: factor .* got \\(2, 2\\)"):
        cnn.PixelShuffle3D((2, 2))


@pytest.mark.parametrize("hybrid", [False, True])
def test_hybrid_concurrent_concatenates_children(hybrid: bool) -> None:
    net = cnn.HybridConcurrent(axis=1)
    with net.name_scope():
        net.add(nn.Dense(3), nn.Dense(2, activation="relu"), cnn.Identity())
    net.initialize(sg.init.Normal(1.0))
    net.hybridize(hybrid)
    x = np.random.default_rng(2).normal(size=(4, 5))
    out = net(sg.nd.array(x)).asnumpy()
    (w0, b0), (w1, b1) = [(d.weight.data().asnumpy(), d.bias.data().asnumpy())
                          for d in (net[0], net[1])]
    want = np.concatenate([x @ w0.T + b0, np.maximum(x @ w1.T + b1, 0), x], axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert sorted(net.collect_params()) == [
        f"{net.prefix}dense{i}_{p}" for i in (0, 1) for p in ("bias", "weight")]


def test_concurrent_of_plain_blocks_on_axis() -> None:
    net = cnn.Concurrent(axis=0)
    net.add(nn.Lambda(lambda x: x * 2), cnn.Identity())
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(net(sg.nd.array(x)).asnumpy(), np.concatenate([2 * x, x]))


def test_sparse_embedding_rows_and_dense_gradient() -> None:
    emb = cnn.SparseEmbedding(6, 3)
    emb.initialize(sg.init.Normal(1.0))
    idx = np.array([[1, 4], [1, 0]], dtype=np.float64)
    w = emb.weight.data().asnumpy()
    head = np.random.default_rng(3).normal(size=(2, 2, 3))
    with sg.autograd.record():
        out = emb(sg.nd.array(idx))
    out.backward(sg.nd.array(head))
    np.testing.assert_array_equal(out.asnumpy(), w[idx.astype(int)])
    grad = np.zeros((6, 3))
    np.add.at(grad, idx.astype(int).reshape(-1), head.reshape(-1, 3))
    np.testing.assert_allclose(emb.weight.grad().asnumpy(), grad, rtol=1e-6, atol=1e-6)
    assert repr(emb) == "SparseEmbedding(6 -> 3, float32)"


def test_interval_sampler_as_mxnet_documents() -> None:
    assert list(data.IntervalSampler(13, 3)) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert list(data.IntervalSampler(13, 3, rollover=False)) == [0, 3, 6, 9, 12]
    assert len(data.IntervalSampler(13, 3)) == 13
    assert sg.gluon.contrib.data.IntervalSampler is data.IntervalSampler
    with pytest.raises(AttrError, match=r"interval must be in \[1, length=4\], got 5"):
        data.IntervalSampler(4, 5)


def test_filter_sampler_keeps_matching_indices() -> None:
    dataset = data.SimpleDataset([5, 2, 8, 3, 6])
    sampler = data.FilterSampler(lambda v: v > 4, dataset)
    assert list(sampler) == [0, 2, 4] and len(sampler) == 3
    loader = data.DataLoader(data.ArrayDataset(np.arange(5.0)), batch_size=2,
                             sampler=sampler)
    assert [b.asnumpy().tolist() for b in loader] == [[0.0, 2.0], [4.0]]
