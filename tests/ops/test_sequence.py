"""The sequence ops beyond the registry cases: errors naming node, op and values; lengths out
of range (clipped, as documented in ``ops/sequence.py``); and outputs and data gradients
against MXNet 1.9.1 run live (marked ``mxnet``)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, ShapeError
from tests.test_mxnet_interop import mxnet_python

S, nd = sg.sym, sg.nd


def test_axis_out_of_range_names_node_and_value() -> None:
    y = S.SequenceMask(S.var("x"), axis=2, name="m")  # past the input's rank, as every op's
    with pytest.raises(ShapeError, match=r"m \(SequenceMask\).*axis=2 out of range"):
        y.infer_shape(x=(4, 3))
    with pytest.raises(AttrError, match=r"m \(SequenceMask\).*axis=2.*sequence axis"):
        y.infer_shape(x=(4, 3, 2))  # in range, but MXNet's sequence axis is 0 or 1
    with pytest.raises(AttrError, match=r"r \(SequenceReverse\).*axis=1"):
        S.SequenceReverse(S.var("x"), axis=1, name="r").infer_shape(x=(4, 3))


def test_length_shape_mismatch_is_a_shape_error() -> None:
    y = S.SequenceLast(S.var("x"), S.var("n"), use_sequence_length=True, axis=1, name="last")
    with pytest.raises(ShapeError, match=r"last \(SequenceLast\).*\(4,\).*\(3,\).*\(3, 4, 2\)"):
        y.infer_shape(x=(3, 4, 2), n=(4,))
    with pytest.raises(ShapeError, match=r"last \(SequenceLast\).*sequence and a batch axis"):
        y.infer_shape(x=(3,))


def test_bad_input_leaves_user_data_untouched() -> None:
    x = nd.array(np.arange(6.0).reshape(3, 2))
    with pytest.raises(ShapeError):
        nd.SequenceMask(x, nd.array([1.0, 2.0, 3.0]), use_sequence_length=True).asnumpy()
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6.0).reshape(3, 2))


def test_lengths_are_truncated_and_clipped() -> None:
    x = np.arange(8.0).reshape(4, 2) + 1
    n = nd.array([2.7, 9.0])  # 2.7 -> 2 (MXNet's cast); 9 > T keeps everything
    got = nd.SequenceMask(nd.array(x), n, use_sequence_length=True).asnumpy()
    np.testing.assert_array_equal(got, np.where(np.arange(4)[:, None] < [[2, 4]], x, 0))
    last = nd.SequenceLast(nd.array(x), nd.array([0.0, 9.0]), use_sequence_length=True)
    np.testing.assert_array_equal(last.asnumpy(), [x[0, 0], x[3, 1]])  # clipped to [1, T]


def test_integer_lengths() -> None:
    x = np.random.default_rng(0).normal(size=(4, 3))
    n = nd.array([1, 4, 2], dtype=np.int32)
    got = nd.SequenceReverse(nd.array(x), n, use_sequence_length=True).asnumpy()
    np.testing.assert_allclose(got[:2, 2], x[:2, 2][::-1], rtol=1e-6)
    np.testing.assert_allclose(got[:, 0], x[:, 0], rtol=1e-6)


MX_CHILD = '''
import json, sys
import numpy as np
import mxnet as mx
cases = json.load(open(sys.argv[1]))
out = {}
for key, (op, kw, x, n, dy) in cases.items():
    xa, na = mx.nd.array(x, dtype="float64"), mx.nd.array(n, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(xa, na, **kw)
    y.backward(mx.nd.array(dy, dtype="float64"))
    out[key] = [y.asnumpy().tolist(), xa.grad.asnumpy().tolist()]
json.dump(out, open(sys.argv[2], "w"))
'''


@pytest.mark.mxnet
def test_against_mxnet(tmp_path: Path) -> None:
    exe = mxnet_python()
    if exe is None:
        pytest.skip("MXNet 1.9.1 not available (set SYMGRAPH_MXNET_PYTHON)")
    rng = np.random.default_rng(3)
    x0, x1, n = rng.normal(size=(5, 3, 2)), rng.normal(size=(3, 5, 2)), [2.0, 5.0, 1.0]
    specs = {"mask0": ("SequenceMask", {"value": -3.0, "axis": 0}, x0),
             "mask1": ("SequenceMask", {"axis": 1}, x1),
             "rev": ("SequenceReverse", {}, x0),
             "last0": ("SequenceLast", {"axis": 0}, x0),
             "last1": ("SequenceLast", {"axis": 1}, x1)}
    cases = {}
    for key, (op, kw, x) in specs.items():
        kw = {**kw, "use_sequence_length": True}
        y = getattr(nd, op)(nd.array(x, dtype=np.float64), nd.array(n, dtype=np.float64), **kw)
        cases[key] = (op, kw, x.tolist(), n, rng.normal(size=y.shape).tolist())
    (tmp_path / "in.json").write_text(json.dumps(cases))
    (tmp_path / "child.py").write_text(MX_CHILD)
    run = subprocess.run([exe, str(tmp_path / "child.py"), str(tmp_path / "in.json"),
                          str(tmp_path / "out.json")], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = json.loads((tmp_path / "out.json").read_text())
    for key, (op, kw, x, n_, dy) in cases.items():
        xa = nd.array(x, dtype=np.float64)
        xa.attach_grad()
        with sg.autograd.record():
            y = getattr(nd, op)(xa, nd.array(n_, dtype=np.float64), **kw)
        y.backward(nd.array(dy, dtype=np.float64))
        np.testing.assert_allclose(y.asnumpy(), theirs[key][0], rtol=1e-12, err_msg=key)
        np.testing.assert_allclose(xa.grad.asnumpy(), theirs[key][1], rtol=1e-12, err_msg=key)
