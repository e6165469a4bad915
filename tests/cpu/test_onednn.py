"""oneDNN's convolutions and pooling in the compiled CPU backend (symgraph/runtime/cpu/onednn.py,
layers_onednn.py): each convolution call against the float64 loops of test_layers_compiled,
the pooling windows against the numpy reference in float64, the choice between oneDNN and the
backend's own kernels with the reasons, and a bad library that leaves the backend on im2col."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.attrs import parse_attrs
from symgraph.core.registry import get_op
from symgraph.runtime.cpu import layers, layers_onednn as dl, onednn
from tests.cpu.test_layers_compiled import (CONV_GEOMETRIES, _cnn, _conv_attrs,
                                            _conv_reference, _out, check_conv_calls)

# the other test file's three, a ResNet-like strided 3x3, a strided 7x7 stem, and a strided
# 2x2 that leaves the last row and column in no window (oneDNN's right padding negative)
GEOMETRIES = CONV_GEOMETRIES + [((3, 3), (2, 2), (1, 1), (1, 1)), ((7, 7), (2, 2), (3, 3),
                                                                  (1, 1)),
                                ((2, 2), (2, 2), (0, 0), (1, 1))]


def _case(rng: np.random.Generator, geometry: tuple, shape: tuple = (5, 3, 9, 8),
          filters: int = 4) -> tuple:
    x = rng.normal(size=shape).astype(np.float32)
    w = rng.normal(size=(filters, shape[1]) + geometry[0]).astype(np.float32)
    b = rng.normal(size=filters).astype(np.float32)
    dy = rng.normal(size=(shape[0], filters) + _out(shape, *geometry)).astype(np.float32)
    return x, w, b, dy


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_each_call_matches_float64(dnnl: None, rng: np.random.Generator,
                                   geometry: tuple) -> None:
    x, w, b, dy = _case(rng, geometry, (5, 3, 15, 14))
    compute, why = layers.layer_compute("convolution", {"call": "forward"},
                                        _conv_attrs(*geometry, filters=4),
                                        [x.shape, w.shape, b.shape], [np.float32] * 3)
    assert compute is dl.dnnl_forward, why
    check_conv_calls((dl.dnnl_forward, dl.dnnl_data, dl.dnnl_weight), x, w, b, dy, geometry,
                     2e-6)


def test_strided_and_non_contiguous_inputs(dnnl: None, rng: np.random.Generator) -> None:
    geometry = CONV_GEOMETRIES[0]
    x, w, _, dy = _case(rng, geometry)
    a = _conv_attrs(*geometry, filters=4)
    y, dw, dx = _conv_reference(x, w, dy, geometry)
    xt = np.asfortranarray(x)  # same values, another memory order
    np.testing.assert_allclose(dl.dnnl_forward(a, [xt, np.asfortranarray(w)], None)[0],
                               y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dl.dnnl_weight(a, [np.asfortranarray(dy), xt], None)[0], dw,
                               rtol=1e-3, atol=1e-3)


def test_what_stays_on_im2col_says_why(dnnl: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def choose(geometry: tuple, shape: tuple, dtype: type) -> tuple:
        a = _conv_attrs(*geometry, filters=4)
        w = (4, shape[1]) + geometry[0]
        return layers.layer_compute("convolution", {"call": "forward"}, a, [shape, w],
                                    [dtype, dtype])
    assert choose(CONV_GEOMETRIES[0], (2, 3, 8, 8), np.float32)[0] is dl.dnnl_forward
    assert choose(CONV_GEOMETRIES[0], (2, 3, 8, 8), np.float64)[0] is layers.conv_forward
    assert "fewer column rows than filters" in dl.why_not_conv(
        _conv_attrs(*CONV_GEOMETRIES[0], filters=32), "filter", [(2, 32, 8, 8), (2, 1, 8, 8)],
        [np.float32] * 2)
    assert "empty" in dl.why_not_conv(_conv_attrs(*CONV_GEOMETRIES[0], filters=4), "forward",
                                      [(0, 3, 8, 8), (4, 3, 3, 3)], [np.float32] * 2)
    monkeypatch.setenv("SYMGRAPH_ONEDNN", "0")
    onednn._load.cache_clear()
    assert choose(CONV_GEOMETRIES[0], (2, 3, 8, 8), np.float32)[0] is layers.conv_forward
    assert onednn.why_not() == "SYMGRAPH_ONEDNN=0"


def test_a_library_that_does_not_load_leaves_im2col(compiled: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     rng: np.random.Generator) -> None:
    bad = tmp_path / "libdnnl.so.3"
    bad.write_bytes(b"not a library")
    monkeypatch.setenv("SYMGRAPH_ONEDNN", str(bad))
    onednn._load.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="did not load"):
            assert onednn.library() is None
        assert str(bad) in onednn.why_not()
        with pytest.raises(onednn.OneDNNError, match="not available"):
            onednn.primitive("forward", (1, 1, 3, 3), (1, 1, 3, 3), (1, 1, 1, 1), (1, 1),
                             (0, 0), (1, 1), False)
        net = _cnn({"kernel": (2, 2), "stride": (2, 2)})
        exe = net.simple_bind(sg.cpu(), data=(2, 2, 10, 10))
        exe.forward(is_train=True)
        exe.backward()
        computes = {getattr(f, "__name__", "") for f in _computes(exe)}
        assert "conv_forward" in computes and "dnnl_forward" not in computes, computes
    finally:
        onednn._load.cache_clear()


def _computes(exe: object) -> list:
    """The compiled steps' compute functions (a group's: its head's) of a bound executor's
    training program."""
    program = exe._train.program  # type: ignore[attr-defined]
    return [getattr(f, "head_compute", f) for f in getattr(program, "_compiled", [])]


def test_a_cnn_trains_through_onednn_like_the_numpy_backend(
        dnnl: None, compiled: Path, rng: np.random.Generator,
        monkeypatch: pytest.MonkeyPatch) -> None:
    net = _cnn({"kernel": (2, 2), "stride": (2, 2)})
    shapes = {"data": (3, 2, 10, 10), "c1_weight": (4, 2, 3, 3), "c1_bias": (4,),
              "c2_weight": (4, 4, 3, 3), "c2_bias": (4,), "w": (3, 4, 5, 5)}
    arrays = {k: rng.normal(size=v).astype(np.float32) for k, v in shapes.items()}

    def grads() -> tuple[dict, set]:
        args = {k: sg.nd.array(v) for k, v in arrays.items()}
        exe = net.bind(sg.cpu(), args, args_grad={k: sg.nd.zeros(v.shape)
                                                  for k, v in arrays.items()})
        exe.forward(is_train=True)
        exe.backward()
        names = {getattr(f, "__name__", "") for f in _computes(exe)}
        return {k: exe.grad_dict[k].asnumpy() for k in arrays}, names
    got, names = grads()
    assert {"dnnl_forward", "dnnl_data", "dnnl_weight"} <= names, names
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want, _ = grads()
    for k in arrays:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-5, err_msg=k)


@pytest.mark.parametrize("attrs", [
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)},  # ResNet's stem
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pooling_convention": "full"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg",
     "count_include_pad": False},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg",
     "count_include_pad": False, "pooling_convention": "full"},
    {"kernel": (2, 2), "global_pool": True, "pool_type": "avg"}], ids=str)
def test_pooling_windows_match_float64(dnnl: None, rng: np.random.Generator,
                                       attrs: dict) -> None:
    from symgraph.compiler.ops.pool import pool_forward
    a = parse_attrs(get_op("Pooling").params, attrs, "")
    x = rng.normal(size=(2, 3, 10, 9)).astype(np.float32)
    compute, why = layers.layer_compute("pooling", {}, a, [x.shape], [np.float32])
    assert compute is dl.dnnl_pool, why
    np.testing.assert_allclose(compute(a, [x], None)[0], pool_forward(x.astype(np.float64), a),
                               rtol=1e-6, atol=1e-6)


def test_pooling_that_oneDNN_counts_otherwise_stays_on_numpy(dnnl: None) -> None:
    # 'full' convention, average counting the padding: the last window reaches past the
    # padding, and MXNet's divisor counts only the padded input's cells
    a = parse_attrs(get_op("Pooling").params, {"kernel": (3, 3), "stride": (2, 2),
                                               "pad": (1, 1), "pool_type": "avg",
                                               "pooling_convention": "full"}, "")
    compute, why = layers.layer_compute("pooling", {}, a, [(2, 3, 10, 10)], [np.float32])
    assert compute is None and "pool_type='avg'" in why
    # unpadded max windows: the unrolled kernels (faster than oneDNN's there)
    a = parse_attrs(get_op("Pooling").params, {"kernel": (2, 2), "stride": (2, 2)}, "")
    assert layers.layer_compute("pooling", {}, a, [(2, 3, 10, 10)], [np.float32])[0] \
        is layers.max_pool


FORK_CHILD = r"""
import os, sys, time
import numpy as np
import symgraph as sg
from tests.cpu.test_layers_compiled import _cnn
net = _cnn({"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)})
exe = net.simple_bind(sg.cpu(), data=(4, 2, 10, 10))
exe.arg_dict["data"][:] = np.random.default_rng(0).normal(size=(4, 2, 10, 10))
for k, v in exe.arg_dict.items():
    if k != "data":
        v[:] = np.random.default_rng(1).normal(size=v.shape) * 0.3
want = exe.forward(is_train=False)[0].asnumpy()  # oneDNN on two OpenMP threads
pid = os.fork()
if pid == 0:
    got = exe.forward(is_train=False)[0].asnumpy()
    os._exit(0 if np.allclose(got, want, rtol=1e-4, atol=1e-4) else 3)
end = time.time() + 60
while time.time() < end:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
sys.exit(4)
"""


def test_a_child_forked_after_threads_runs_without_onednn(dnnl: None, kernel_cache: Path
                                                          ) -> None:
    # GNU OpenMP hangs in a child forked after the parent started its threads (seen with
    # two: the child's first call never returned); such a child takes im2col and numpy
    import os
    import subprocess
    import sys
    env = {**os.environ, "SYMGRAPH_CPU": "compiled", "SYMGRAPH_CPU_THREADS": "2",
           "SYMGRAPH_CACHE_DIR": str(kernel_cache),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                          os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", FORK_CHILD], env=env, timeout=300,
                         capture_output=True, text=True)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
