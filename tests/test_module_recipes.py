"""MXNet's everyday Module idioms, written as users write them: load a checkpoint and predict
with ``label_names=None``, ``label_shapes=mod._label_shapes`` and ``set_params(...,
allow_missing=True)``; the shape properties before and after ``bind``.

The recipe runs as one program text under ``import symgraph as mx`` and, where MXNet 1.9.1 is
installed (``SYMGRAPH_MXNET_PYTHON``), under ``import mxnet as mx`` on the same checkpoint; the
predictions are also checked against a numpy float64 forward pass.
"""
from __future__ import annotations

import json
import string
import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import MissingParamError

from .test_mxnet_interop import mxnet_python

# The recipe as MXNet's tutorials write it; $prefix, $x and $out are filled in by the test.
RECIPE = string.Template('''
import json
import numpy as np
import mxnet as mx
sym, arg_params, aux_params = mx.model.load_checkpoint($prefix, 3)
mod = mx.mod.Module(symbol=sym, context=mx.cpu(), label_names=None)
before = [mod._data_shapes, mod._label_shapes]
mod.bind(for_training=False, data_shapes=[('data', (4, 5))], label_shapes=mod._label_shapes)
mod.set_params(arg_params, aux_params, allow_missing=True)
x = np.load($x)
probs = mod.predict(mx.io.NDArrayIter(x, None, 4)).asnumpy()
arg, _ = mod.get_params()
np.save($out + '.npy', probs)
with open($out + '.json', 'w') as f:
    json.dump({'before': before, 'label_shapes': mod.label_shapes,
               'data_shapes': [(d.name, list(d.shape)) for d in mod.data_shapes],
               'output_shapes': [(n, list(s)) for n, s in mod.output_shapes],
               'params': sorted(arg), 'label_param': arg['softmax_label'].asnumpy().tolist()}, f)
''')


def _mlp() -> sg.sym.Symbol:
    data = sg.sym.var("data")
    net = sg.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = sg.sym.Activation(net, act_type="relu", name="relu1")
    net = sg.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return sg.sym.SoftmaxOutput(net, name="softmax")


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"fc1_weight": rng.normal(size=(8, 5)), "fc1_bias": rng.normal(size=8),
            "fc2_weight": rng.normal(size=(3, 8)), "fc2_bias": rng.normal(size=3)}


def _reference(w: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The network's softmax output in float64."""
    h = np.maximum(x.astype(np.float64) @ w["fc1_weight"].T + w["fc1_bias"], 0.0)
    z = h @ w["fc2_weight"].T + w["fc2_bias"]
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.fixture
def checkpoint(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A checkpoint written by symgraph (epoch 3) and 10 input rows saved beside it."""
    w = {k: v.astype(np.float32) for k, v in _weights().items()}
    sg.model.save_checkpoint(str(tmp_path / "mlp"), 3, _mlp(),
                             {k: sg.nd.array(v) for k, v in w.items()}, {})
    x = np.random.default_rng(8).normal(size=(10, 5)).astype(np.float32)  # 3 batches, 1 padded
    np.save(tmp_path / "x.npy", x)
    return tmp_path, x


def _run_recipe(folder: Path, python: str | None) -> tuple[np.ndarray, dict]:
    """The recipe on ``folder``'s checkpoint: in this process with symgraph, or in ``python``
    (MXNet's interpreter); its predictions and what it recorded."""
    out = folder / ("mxnet" if python else "symgraph")
    code = RECIPE.substitute(prefix=repr(str(folder / "mlp")), x=repr(str(folder / "x.npy")),
                             out=repr(str(out)))
    if python is None:
        exec(compile(code.replace("import mxnet as mx", "import symgraph as mx"),
                     "<recipe>", "exec"), {})
    else:
        subprocess.run([python, "-c", code], check=True, capture_output=True, timeout=300)
    return np.load(str(out) + ".npy"), json.loads(Path(str(out) + ".json").read_text())


def test_load_checkpoint_and_predict(checkpoint) -> None:
    folder, x = checkpoint
    probs, seen = _run_recipe(folder, None)
    np.testing.assert_allclose(probs, _reference(_weights(), x), rtol=1e-5, atol=1e-6)
    assert seen["before"] == [None, None] and seen["label_shapes"] is None
    assert seen["data_shapes"] == [["data", [4, 5]]]
    assert seen["output_shapes"] == [["softmax_output", [4, 3]]]
    # label_names=None makes softmax_label a parameter, which allow_missing left as bound
    assert "softmax_label" in seen["params"] and seen["label_param"] == [0.0] * 4


@pytest.mark.mxnet
def test_recipe_matches_mxnet(checkpoint) -> None:
    python = mxnet_python()
    if python is None:
        pytest.skip("MXNet 1.9.1 not available (set SYMGRAPH_MXNET_PYTHON)")
    folder, _ = checkpoint
    ours, ours_seen = _run_recipe(folder, None)
    theirs, theirs_seen = _run_recipe(folder, python)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert ours_seen == theirs_seen


def test_shape_properties_need_bind() -> None:
    mod = sg.mod.Module(_mlp())
    assert mod._data_shapes is None and mod._label_shapes is None
    for name in ("data_shapes", "label_shapes", "output_shapes"):
        with pytest.raises(sg.BindError, match=f"Module.{name}: .*not bound"):
            getattr(mod, name)
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    assert [(d.name, d.shape) for d in mod.label_shapes] == [("softmax_label", (2,))]
    assert [(d.name, d.shape) for d in mod._data_shapes] == [("data", (2, 5))]
    assert mod.output_shapes == [("softmax_output", (2, 3))]


def test_set_params_missing_name_is_refused_untouched(checkpoint) -> None:
    """Without allow_missing the missing ``softmax_label`` is named, and neither the module's
    parameters nor the caller's arrays change."""
    folder, _ = checkpoint
    sym, arg, aux = sg.model.load_checkpoint(str(folder / "mlp"), 3)
    mod = sg.mod.Module(sym, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (4, 5))])
    mod.set_params(arg, aux, allow_missing=True)
    other = {k: sg.nd.array(v.asnumpy() + 1.0) for k, v in arg.items()}
    given = {k: v.asnumpy().copy() for k, v in other.items()}
    with pytest.raises(MissingParamError, match="softmax_label"):
        mod.set_params(other, aux)
    kept = mod.get_params()[0]
    for k, v in arg.items():
        np.testing.assert_array_equal(kept[k].asnumpy(), v.asnumpy(), k)
        np.testing.assert_array_equal(other[k].asnumpy(), given[k], k)


def test_init_params_without_initializer_or_arrays_is_refused() -> None:
    mod = sg.mod.Module(_mlp())
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(sg.BindError, match="initializer=None and no arg_params.*fc1_weight"):
        mod.init_params(None)
    assert not mod.params_initialized
