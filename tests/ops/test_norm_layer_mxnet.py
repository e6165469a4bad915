"""LayerNorm, GroupNorm, InstanceNorm, L2Normalization and moments against MXNet 1.9.1 run live
in a subprocess (``SYMGRAPH_MXNET_PYTHON``; marked ``mxnet``, skipped without it): argument
names and shapes, every visible output (MXNet's std, not var, for LayerNorm/GroupNorm) and the
gradients of data, gamma and beta for a random head gradient, in float64 (InstanceNorm, which
MXNet runs in float32 only: within float32 rounding). Stat outputs get zero
head gradients here: MXNet ignores theirs (docs/mxnet_parity.md), symgraph does not."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from ..gluon.test_mxnet_gluon import _mxnet

pytestmark = pytest.mark.mxnet

# (op, attributes, data shape)
CONFIGS = [
    ("LayerNorm", {"output_mean_var": True}, (3, 4, 6)),
    ("LayerNorm", {"axis": 1, "eps": 1e-3, "output_mean_var": True}, (2, 5, 3)),
    ("GroupNorm", {"num_groups": 2, "output_mean_var": True}, (2, 4, 3, 2)),
    ("GroupNorm", {}, (3, 3, 5)),
    ("InstanceNorm", {}, (2, 3, 4, 2)),
    ("InstanceNorm", {"eps": 0.1}, (2, 2, 5)),
    ("L2Normalization", {}, (2, 3, 4, 2)),
    ("L2Normalization", {"mode": "channel"}, (2, 3, 4, 2)),
    ("L2Normalization", {"mode": "spatial", "eps": 1e-3}, (2, 3, 4, 2)),
    ("moments", {"axes": (0, 2)}, (3, 2, 4, 2)),
    ("moments", {"axes": (1,), "keepdims": True}, (3, 4, 2)),
]

CHILD = '''
import json, sys
import numpy as np
import mxnet as mx
spec, data, out = sys.argv[1:]
arrays = np.load(data)
result = {}
for k, (op, attrs, shape) in enumerate(json.load(open(spec))):
    attrs = {a: tuple(v) if isinstance(v, list) else v for a, v in attrs.items()}
    dt = "float32" if op == "InstanceNorm" else "float64"  # MXNet's InstanceNorm: float32 only
    sym = getattr(mx.sym, op)(mx.sym.var("data"), **attrs)
    names = sym.list_arguments()
    arg_shapes, out_shapes, _ = sym.infer_shape(data=tuple(shape))
    args = {n: mx.nd.array(arrays[f"{k}_{n.split('_')[-1]}"], dtype=dt) for n in names}
    grads = {n: mx.nd.zeros(s, dtype=dt) for n, s in zip(names, arg_shapes)}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = exe.forward(is_train=True)
    heads = [mx.nd.array(arrays[f"{k}_head{i}"], dtype=dt) for i in range(len(outs))]
    exe.backward(heads)
    for i, o in enumerate(outs):
        result[f"{k}_out{i}"] = o.asnumpy().astype("float64")
    for n in names:
        result[f"{k}_grad_{n.split('_')[-1]}"] = grads[n].asnumpy().astype("float64")
    result[f"{k}_names"] = np.array([n.split("_")[-1] for n in names])
np.savez(out, **result)
'''


def _inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for k, (op, attrs, shape) in enumerate(CONFIGS):
        sym = getattr(sg.sym, op)(sg.sym.var("data"), **attrs)
        arg_shapes, out_shapes, _ = sym.infer_shape(data=shape)
        for name, s in zip(sym.list_arguments(), arg_shapes):
            arrays[f"{k}_{name.split('_')[-1]}"] = rng.normal(size=s) * 2 + 0.5
        for i, s in enumerate(out_shapes):  # a head gradient on the normalised output only
            arrays[f"{k}_head{i}"] = rng.normal(size=s) if i == 0 or op == "moments" \
                else np.zeros(s)
    return arrays


def _symgraph(k: int, arrays: dict) -> dict[str, np.ndarray]:
    op, attrs, shape = CONFIGS[k]
    sym = getattr(sg.sym, op)(sg.sym.var("data"), **attrs)
    names = sym.list_arguments()
    args = {n: sg.nd.array(arrays[f"{k}_{n.split('_')[-1]}"], dtype=np.float64) for n in names}
    grads = {n: sg.nd.zeros(v.shape, dtype=np.float64) for n, v in args.items()}
    exe = sym.bind(sg.cpu(), args, args_grad=grads)
    outs = exe.forward(is_train=True)
    exe.backward([sg.nd.array(arrays[f"{k}_head{i}"], dtype=np.float64)
                  for i in range(len(outs))])
    got = {f"{k}_out{i}": o.asnumpy() for i, o in enumerate(outs)}
    got.update({f"{k}_grad_{n.split('_')[-1]}": g.asnumpy() for n, g in grads.items()})
    got[f"{k}_names"] = np.array([n.split("_")[-1] for n in names])
    return got


def test_outputs_and_gradients_match_mxnet(tmp_path: Path) -> None:
    exe = _mxnet()
    arrays = _inputs(np.random.default_rng(4))
    np.savez(tmp_path / "in.npz", **arrays)
    (tmp_path / "spec.json").write_text(json.dumps(CONFIGS))
    (tmp_path / "child.py").write_text(CHILD)
    run = subprocess.run([exe, str(tmp_path / "child.py"), str(tmp_path / "spec.json"),
                          str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    want = dict(np.load(tmp_path / "out.npz"))
    for k in range(len(CONFIGS)):
        got = _symgraph(k, arrays)
        tol = 1e-4 if CONFIGS[k][0] == "InstanceNorm" else 1e-6  # MXNet's run in float32
        assert set(got) == {key for key in want if key.startswith(f"{k}_")}, CONFIGS[k]
        for key, w in got.items():
            if key.endswith("names"):
                assert list(w) == list(want[key]), (CONFIGS[k], key)
                continue
            assert w.shape == want[key].shape, (CONFIGS[k], key, w.shape, want[key].shape)
            np.testing.assert_allclose(w, want[key], rtol=tol, atol=tol * 1e-2,
                                       err_msg=f"{CONFIGS[k]} {key}")
