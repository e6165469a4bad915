"""Write the golden files of tests/test_params_format.py with MXNet 1.9.1 itself.

Run with the MXNet venv (numpy 1.23.5 + mxnet 1.9.1), from anywhere:

    /tmp/mxvenv/bin/python tests/data/mxnet/make_golden.py [MNIST folder]

Everything here is MXNet's own code path (``mx.sym``, ``mx.model.save_checkpoint``,
``mx.nd.save``, an MXNet executor's forward), so the files are independent of symgraph:

* ``cnn-symbol.json`` / ``cnn-0001.params``: the seed MNIST CNN (models/simple_cnn.py written
  in mx.sym), parameters from a fixed numpy seed; ``cnn-io.params``: 8 MNIST test images
  (``data``) and MXNet's softmax output for them (``output``).
* ``bn-*``: a small BatchNorm network with aux states (moving mean/var), same layout; outputs
  from an inference forward, so they depend on the aux states.
* ``dtype-<name>.params``: ``mx.nd.save`` of a one-element list holding a (2, 3) array of each
  dtype; ``named.params``: a dict of several dtypes and shapes (names kept);
  ``np-shape.params``: a 0-d and a zero-size array, saved under NumPy shape semantics (V3).
"""
from __future__ import annotations

import gzip
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = ("float32", "float16", "float64", "uint8", "int8", "int32", "int64")


def mnist_batch(folder: str, n: int = 8) -> np.ndarray:
    """The first ``n`` MNIST test images as float32 (n, 1, 28, 28) in [0, 1]."""
    path = os.path.join(folder, "t10k-images-idx3-ubyte.gz")
    with gzip.open(path, "rb") as f:
        raw = f.read(16 + n * 784)
    return (np.frombuffer(raw[16:], np.uint8).reshape(n, 1, 28, 28) / 255.0).astype(np.float32)


def cnn() -> mx.sym.Symbol:
    """models/simple_cnn.py: conv3x3x32-relu-pool, conv3x3x64-relu-pool, fc128-relu, fc10."""
    x = mx.sym.var("data")
    for i, width in ((1, 32), (2, 64)):
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=width, name=f"conv{i}")
        x = mx.sym.Activation(x, act_type="relu", name=f"relu{i}")
        x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{i}")
    x = mx.sym.Flatten(x, name="flatten")
    x = mx.sym.FullyConnected(x, num_hidden=128, name="fc1")
    x = mx.sym.Activation(x, act_type="relu", name="relu3")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def bn_net() -> mx.sym.Symbol:
    """conv - BatchNorm (aux: moving_mean, moving_var) - relu - pool - fc10 - softmax."""
    x = mx.sym.var("data")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=8, name="conv1")
    x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-3, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name="fc1")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def params_for(sym: mx.sym.Symbol, data_shape: tuple, seed: int) -> tuple[dict, dict]:
    """Parameters of a fixed seed: scaled normals; moving variances positive."""
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=data_shape)
    arg, aux = {}, {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name in ("data", "softmax_label"):
            continue
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        arg[name] = mx.nd.array(rng.normal(0, 1 / np.sqrt(fan_in), shape), dtype="float32")
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
        value = rng.uniform(0.5, 2.0, shape) if "var" in name else rng.normal(0, 0.3, shape)
        aux[name] = mx.nd.array(value, dtype="float32")
    return arg, aux


def write_model(prefix: str, sym: mx.sym.Symbol, data: np.ndarray, seed: int) -> None:
    arg, aux = params_for(sym, data.shape, seed)
    mx.model.save_checkpoint(os.path.join(HERE, prefix), 1, sym, arg, aux)
    args = dict(arg, data=mx.nd.array(data),
                softmax_label=mx.nd.zeros((data.shape[0],)))
    exe = sym.bind(mx.cpu(), args=args, aux_states=dict(aux), grad_req="null")
    out = exe.forward(is_train=False)[0]
    mx.nd.save(os.path.join(HERE, f"{prefix}-io.params"),
               {"data": mx.nd.array(data), "output": out})


def dtype_values(name: str) -> np.ndarray:
    """The (2, 3) array saved for dtype ``name`` (tests rebuild it the same way)."""
    if name.startswith("float"):
        return np.array([[0, 0.5, -1.5], [3.25, -4, 127]], name)
    return np.array([[0, 1, 2], [3, 4 if name.startswith("u") else -4, 127]], name)


def write_dtypes() -> None:
    for name in DTYPES:
        arr = mx.nd.array(dtype_values(name), dtype=name)
        mx.nd.save(os.path.join(HERE, f"dtype-{name}.params"), [arr])
    named = {"weight": mx.nd.array(np.arange(12).reshape(3, 4) / 7.0, dtype="float32"),
             "half": mx.nd.array([[1.5, -2.25]], dtype="float16"),
             "index": mx.nd.array([5, 6, 7], dtype="int64"),
             "pixels": mx.nd.array(np.arange(24).reshape(2, 3, 4), dtype="uint8")}
    mx.nd.save(os.path.join(HERE, "named.params"), named)
    with mx.util.np_shape(True):  # 0-d and zero-size arrays exist only with NumPy shapes
        mx.nd.save(os.path.join(HERE, "np-shape.params"),
                   {"scalar": mx.nd.array(np.array(2.5), dtype="float32"),
                    "empty": mx.nd.zeros((0, 3), dtype="int32")})


def main(argv: list[str]) -> None:
    folder = argv[1] if len(argv) > 1 else os.path.join(HERE, *[".."] * 4, "shared", "data",
                                                       "mnist")
    images = mnist_batch(folder)
    write_model("cnn", cnn(), images, seed=0)
    write_model("bn", bn_net(), images, seed=1)
    write_dtypes()
    print(f"mxnet {mx.__version__}: golden files written to {HERE}")


if __name__ == "__main__":
    main(sys.argv)
