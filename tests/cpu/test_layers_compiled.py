"""The compiled CPU backend's convolution and max-pooling kernels (symgraph/runtime/cpu/
layers.py, render_window.py) against float64 references written here with plain loops over
the kernel offsets, and the steps of a small CNN against the numpy backend."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.attrs import parse_attrs
from symgraph.core.registry import get_op
from symgraph.runtime.cpu import layers, pool

# (kernel, stride, pad, dilate): the seed CNN's 3x3, a strided dilated one, a 1x1 (no im2col)
CONV_GEOMETRIES = [((3, 3), (1, 1), (1, 1), (1, 1)), ((2, 3), (2, 1), (0, 2), (2, 1)),
                   ((1, 1), (1, 1), (0, 0), (1, 1))]


def _conv_attrs(kernel: tuple, stride: tuple, pad: tuple, dilate: tuple, filters: int
                ) -> object:
    return parse_attrs(get_op("Convolution").params,
                       {"kernel": kernel, "stride": stride, "pad": pad, "dilate": dilate,
                        "num_filter": filters}, "")


def _taps(x: np.ndarray, kernel: tuple, stride: tuple, pad: tuple, dilate: tuple,
          out: tuple) -> Iterator[tuple[tuple[int, int], np.ndarray, tuple]]:
    """For each kernel offset (i, j): the padded float64 input's cells it reads, as an
    ``(N, C, OH, OW)`` view, and the index of those cells in the padded array."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            index = (slice(None), slice(None),
                     slice(i * dilate[0], i * dilate[0] + stride[0] * (out[0] - 1) + 1,
                           stride[0]),
                     slice(j * dilate[1], j * dilate[1] + stride[1] * (out[1] - 1) + 1,
                           stride[1]))
            yield (i, j), xp, index


def _out(x_shape: tuple, kernel: tuple, stride: tuple, pad: tuple, dilate: tuple) -> tuple:
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, st, p, d in zip(x_shape[2:], kernel, stride, pad, dilate))


def _conv_reference(x: np.ndarray, w: np.ndarray, dy: np.ndarray, geometry: tuple
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, dx, dw) in float64: y = conv(x, w), and the gradients of sum(y * dy)."""
    out = _out(x.shape, *geometry)
    w64, dy64 = w.astype(np.float64), dy.astype(np.float64)
    y = np.zeros((x.shape[0], w.shape[0]) + out)
    dw = np.zeros(w.shape)
    dxp = None
    for (i, j), xp, index in _taps(x, *geometry, out):
        tap = xp[index]
        y += np.einsum("oc,ncpq->nopq", w64[:, :, i, j], tap)
        dw[:, :, i, j] = np.einsum("nopq,ncpq->oc", dy64, tap)
        dxp = np.zeros(xp.shape) if dxp is None else dxp
        dxp[index] += np.einsum("oc,nopq->ncpq", w64[:, :, i, j], dy64)
    ph, pw = geometry[2]
    return y, dw, dxp[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]


def check_conv_calls(calls: tuple, x: np.ndarray, w: np.ndarray, b: np.ndarray,
                     dy: np.ndarray, geometry: tuple, tol: float) -> None:
    """The (forward, data, weight) compute functions ``calls`` against the float64 loops,
    their inputs untouched."""
    forward, data, weight = calls
    a = _conv_attrs(*geometry, filters=w.shape[0])
    kept = [v.copy() for v in (x, w, b, dy)]
    y, dw, dx = _conv_reference(x, w, dy, geometry)
    scale = tol * np.sqrt(w[0].size)
    got = forward(a, [x, w, b], None)[0]
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, y + b.reshape(-1, 1, 1), rtol=scale, atol=scale)
    np.testing.assert_allclose(forward(a, [x, w], None)[0], y, rtol=scale, atol=scale)
    np.testing.assert_allclose(data(a, [dy, w, x], None)[0], dx, rtol=scale, atol=scale)
    np.testing.assert_allclose(weight(a, [dy, x], None)[0], dw, rtol=scale * 10,
                               atol=scale * 10)
    for v, k in zip((x, w, b, dy), kept):
        np.testing.assert_array_equal(v, k)  # inputs untouched


@pytest.mark.parametrize("geometry,dtype,tol", [
    (g, "float64", 1e-12) for g in CONV_GEOMETRIES] + [(CONV_GEOMETRIES[0], "float32", 1e-5)])
def test_convolution_and_gradients_match_float64(compiled: Path, rng: np.random.Generator,
                                                 geometry: tuple, dtype: str, tol: float
                                                 ) -> None:
    x = rng.normal(size=(5, 3, 9, 8)).astype(dtype)
    w = rng.normal(size=(4, 3) + geometry[0]).astype(dtype)
    b = rng.normal(size=4).astype(dtype)
    dy = rng.normal(size=(5, 4) + _out(x.shape, *geometry)).astype(dtype)
    check_conv_calls((layers.conv_forward, layers.conv_data, layers.conv_weight), x, w, b, dy,
                     geometry, tol)


def test_batch_chunks_accumulate_the_weight_gradient(compiled: Path, rng: np.random.Generator,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layers, "CHUNK_ELEMENTS", 1)  # one sample per chunk
    geometry = CONV_GEOMETRIES[0]
    x, w = rng.normal(size=(3, 2, 5, 5)), rng.normal(size=(3, 2, 3, 3))
    dy = rng.normal(size=(3, 3, 5, 5))
    y, dw, dx = _conv_reference(x, w, dy, geometry)
    a = _conv_attrs(*geometry, filters=3)
    np.testing.assert_allclose(layers.conv_weight(a, [dy, x], None)[0], dw, rtol=1e-12)
    np.testing.assert_allclose(layers.conv_data(a, [dy, w, x], None)[0], dx, rtol=1e-12)
    np.testing.assert_allclose(layers.conv_forward(a, [x, w], None)[0], y, rtol=1e-12)


def test_an_empty_batch_gives_empty_and_zero_gradients(compiled: Path) -> None:
    a = _conv_attrs(*CONV_GEOMETRIES[0], filters=3)
    x, w, dy = np.zeros((0, 2, 5, 5)), np.ones((3, 2, 3, 3)), np.zeros((0, 3, 5, 5))
    assert layers.conv_forward(a, [x, w], None)[0].shape == (0, 3, 5, 5)
    assert layers.conv_data(a, [dy, w, x], None)[0].shape == (0, 2, 5, 5)
    np.testing.assert_array_equal(layers.conv_weight(a, [dy, x], None)[0], np.zeros(w.shape))


def _pool_reference(x: np.ndarray, dy: np.ndarray, kernel: tuple, stride: tuple
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(y, dx) of valid max pooling in float64, by a loop over the windows: dx takes each
    window's gradient at its first maximum (row-major), NaN windows none."""
    n, c, h, w = x.shape
    oh, ow = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
    y, dx = np.zeros((n, c, oh, ow)), np.zeros(x.shape)
    for idx in np.ndindex(n, c, oh, ow):
        r, q = idx[2] * stride[0], idx[3] * stride[1]
        cells = x[idx[0], idx[1], r:r + kernel[0], q:q + kernel[1]].astype(np.float64)
        if np.isnan(cells).any():
            y[idx] = np.nan
            continue
        first = int(np.argmax(cells))  # numpy's argmax: the first maximum
        y[idx] = cells.flat[first]
        dx[idx[0], idx[1], r + first // kernel[1], q + first % kernel[1]] += dy[idx]
    return y, dx


@pytest.mark.parametrize("shape,kernel,stride", [((2, 3, 8, 6), (2, 2), (2, 2)),  # tiles
                                                 ((2, 3, 7, 9), (2, 2), (2, 2)),  # rest left
                                                 ((1, 2, 9, 8), (3, 3), (2, 2))])  # overlap
def test_max_pooling_matches_float64_loops(compiled: Path, rng: np.random.Generator,
                                           shape: tuple, kernel: tuple, stride: tuple) -> None:
    x = rng.integers(0, 4, size=shape).astype(np.float32)  # ties: the first maximum wins
    x[0, 0, 0, 0] = np.nan
    a = parse_attrs(get_op("Pooling").params, {"kernel": kernel, "stride": stride}, "")
    y = layers.max_pool(a, [x], None)[0]
    dy = rng.normal(size=y.shape).astype(np.float32)
    want_y, want_dx = _pool_reference(x, dy, kernel, stride)
    np.testing.assert_array_equal(y, want_y.astype(np.float32))
    kept = x.copy()
    np.testing.assert_allclose(layers.max_pool_grad(a, [dy, x, y], None)[0], want_dx,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(x, kept)


def _cnn(pool_attrs: dict, num_group: int = 1) -> sg.sym.Symbol:
    x = sg.sym.var("data")
    x = sg.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c1")
    x = sg.sym.Pooling(sg.sym.relu(x), name="p1", **{"pool_type": "max", **pool_attrs})
    x = sg.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=num_group,
                           name="c2")
    return sg.sym.sum(sg.sym.tanh(x) * sg.sym.var("w"))


def _grads(net: sg.sym.Symbol, arrays: dict) -> dict:
    args = {k: sg.nd.array(v) for k, v in arrays.items()}
    exe = net.bind(sg.cpu(), args, args_grad={k: sg.nd.zeros(v.shape) for k, v in
                                              arrays.items()})
    exe.forward(is_train=True)
    exe.backward()
    return {k: exe.grad_dict[k].asnumpy() for k in arrays}


def test_a_cnn_runs_its_layers_compiled_and_matches_numpy(
        compiled: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    net = _cnn({"kernel": (2, 2), "stride": (2, 2)})
    arrays = {"data": rng.normal(size=(3, 2, 10, 10)), "c1_weight": rng.normal(size=(4, 2, 3, 3)),
              "c1_bias": rng.normal(size=4), "c2_weight": rng.normal(size=(4, 4, 3, 3)),
              "c2_bias": rng.normal(size=4), "w": rng.normal(size=(3, 4, 5, 5))}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    exe = net.simple_bind(sg.cpu(), data=(3, 2, 10, 10))
    exe.forward(is_train=True)
    exe.backward()
    # (names as the numpy backend's graph has them: oneDNN's layout pass adds "_nhwc")
    steps = {s.node.replace("_nhwc", "") for s in exe._train.program.compiled_steps()}
    assert {"p1", "c2_backward__backward_convolution_data0",
            "c2_backward__backward_convolution_weight0"} <= steps, steps
    got = _grads(net, arrays)
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want = _grads(net, arrays)
    for k in arrays:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-5, err_msg=k)


@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_narrow_dtypes_compute_in_float32(compiled: Path, rng: np.random.Generator,
                                          monkeypatch: pytest.MonkeyPatch, dtype: str,
                                          tol: float) -> None:
    net = _cnn({"kernel": (2, 2), "stride": (2, 2)})
    shapes = {"data": (2, 3, 8, 8), "c1_weight": (4, 3, 3, 3), "c1_bias": (4,),
              "c2_weight": (4, 4, 3, 3), "c2_bias": (4,), "w": (2, 4, 4, 4)}
    arrays = {k: rng.normal(size=v) * 0.5 for k, v in shapes.items()}

    def grads() -> dict:
        args = {k: sg.nd.array(v, dtype=dtype) for k, v in arrays.items()}
        exe = net.bind(sg.cpu(), args, args_grad={k: sg.nd.zeros(v.shape, dtype=dtype)
                                                  for k, v in arrays.items()})
        exe.forward(is_train=True)
        exe.backward()
        return {k: exe.grad_dict[k].asnumpy().astype(np.float64) for k in arrays}
    got = grads()
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want = grads()
    for k in arrays:
        np.testing.assert_allclose(got[k], want[k], rtol=tol, atol=tol * np.abs(want[k]).max(),
                                   err_msg=k)


@pytest.mark.parametrize("pool_attrs,num_group,why", [
    ({"kernel": (2, 2), "stride": (2, 2), "pad": (1, 1)}, 1, "pad (1, 1)"),
    ({"kernel": (2, 2), "stride": (2, 2), "pool_type": "avg"}, 1, "pool_type='avg'"),
    ({"kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full"}, 1, "'full'"),
    ({"kernel": (2, 2), "stride": (2, 2)}, 2, "num_group=2")])
def test_layers_that_do_not_compile_are_listed_and_correct(
        compiled: Path, rng: np.random.Generator, pool_attrs: dict, num_group: int,
        why: str, no_onednn: None) -> None:
    # (test_onednn.py: the pooling windows oneDNN takes of these)
    net = _cnn(pool_attrs, num_group)
    exe = net.simple_bind(sg.cpu(), data=(2, 2, 10, 10))
    exe.forward(is_train=True)
    exe.backward()
    reasons = " | ".join(s.why for s in exe._train.program.fallbacks())
    assert why in reasons, reasons


def test_threads_split_samples_and_planes(compiled: Path, rng: np.random.Generator,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CPU_THREADS", "3")
    monkeypatch.setattr(pool, "GRAIN", 1)
    calls: list[tuple] = []
    real = pool.run_split
    monkeypatch.setattr(layers, "run_split",
                        lambda k, n, total, args: (calls.append(n), real(k, n, total, args)))
    geometry = CONV_GEOMETRIES[0]
    x, w, dy = rng.normal(size=(5, 2, 6, 6)), rng.normal(size=(3, 2, 3, 3)), \
        rng.normal(size=(5, 3, 6, 6))
    y, dw, dx = _conv_reference(x, w, dy, geometry)
    a = _conv_attrs(*geometry, filters=3)
    np.testing.assert_allclose(layers.conv_forward(a, [x, w], None)[0], y, rtol=1e-12)
    np.testing.assert_allclose(layers.conv_data(a, [dy, w, x], None)[0], dx, rtol=1e-12)
    np.testing.assert_allclose(layers.conv_weight(a, [dy, x], None)[0], dw, rtol=1e-12)
    px = rng.normal(size=(2, 3, 8, 6)).astype(np.float32)
    pa = parse_attrs(get_op("Pooling").params, {"kernel": (2, 2), "stride": (2, 2)}, "")
    py = layers.max_pool(pa, [px], None)[0]
    pdy = rng.normal(size=py.shape).astype(np.float32)
    want_y, want_dx = _pool_reference(px, pdy, (2, 2), (2, 2))
    np.testing.assert_array_equal(py, want_y.astype(np.float32))
    np.testing.assert_allclose(layers.max_pool_grad(pa, [pdy, px, py], None)[0], want_dx,
                               rtol=1e-6)
    assert calls == [5, 5, 5, 6, 6]  # samples, then N*C planes
