"""Golden data of ``gluon.model_zoo.vision`` written by MXNet 1.9.1, and the seeded weights both
frameworks use. Run under MXNet (from the repository root)::

    /tmp/mxvenv/bin/python tests/data/model_zoo_golden.py

It writes ``tests/data/model_zoo/params.json.gz`` (per model name: every parameter's structural
name, its name without the network's prefix, and its shape at the published input size) and
``outputs.npz`` (a few small models' outputs on a seeded input with seeded weights). No
weights are stored: :func:`draw_params` regenerates them from ``SEED``. This module imports
neither MXNet nor symgraph at the top, so tests import it for the same helpers.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent / "model_zoo"
SEED = 20240611
NAMES = ["resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
         "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2",
         "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn",
         "alexnet", "densenet121", "densenet161", "densenet169", "densenet201",
         "squeezenet1.0", "squeezenet1.1", "inceptionv3", "mobilenet1.0", "mobilenet0.75",
         "mobilenet0.5", "mobilenet0.25", "mobilenetv2_1.0", "mobilenetv2_0.75",
         "mobilenetv2_0.5", "mobilenetv2_0.25"]
GOLDEN_OUTPUTS = ["resnet18_v1", "resnet18_v2", "mobilenet0.25", "mobilenetv2_0.25",
                  "squeezenet1.1", "alexnet"]


def input_shape(name: str, published: bool = False) -> tuple[int, ...]:
    """The smallest convenient input: 299 for Inception, 224 where a fixed pooling needs it
    (DenseNet, SqueezeNet), 64 for AlexNet, else 32 (batch 1 for the big inputs).
    ``published``: the size the published weights were trained at (parameter shapes of
    AlexNet's and VGG's dense layers depend on it)."""
    if name.startswith("inception"):
        return (1, 3, 299, 299)
    if published or name.startswith(("densenet", "squeezenet")):
        return (1, 3, 224, 224)
    return (2, 3, 64, 64) if name == "alexnet" else (2, 3, 32, 32)


def draw_input(shape: tuple[int, ...], seed: int = SEED) -> np.ndarray:
    """A float32 input uniform in [-1, 1) (RandomState: a stream numpy keeps fixed)."""
    return np.random.RandomState(seed + 1).uniform(-1, 1, shape).astype(np.float32)


def draw_params(shapes: dict[str, tuple[int, ...]], seed: int = SEED) -> dict[str, np.ndarray]:
    """Weights for structural names -> shapes, drawn in sorted-name order: He-scaled normal
    weights, gamma and running_var in [0.5, 1.5), beta, bias and running_mean N(0, 0.1)."""
    rs = np.random.RandomState(seed)
    out = {}
    for name in sorted(shapes):
        shape = tuple(shapes[name])
        if name.endswith(("gamma", "running_var")):
            value = rs.uniform(0.5, 1.5, shape)
        elif name.endswith("weight"):
            value = rs.standard_normal(shape) * np.sqrt(2.0 / max(1, int(np.prod(shape[1:]))))
        else:
            value = rs.standard_normal(shape) * 0.1
        out[name] = value.astype(np.float32)
    return out


def mxnet_structure(mx: Any, name: str) -> list:
    """``[structural name, name without the net's prefix, shape]`` of every parameter of
    MXNet's model ``name``, shapes inferred at the published input size."""
    net = mx.gluon.model_zoo.vision.get_model(name)
    sym = net(mx.sym.var("data"))
    args, _, auxs = sym.infer_shape(data=input_shape(name, published=True))
    shapes = dict(zip(sym.list_arguments(), args))
    shapes.update(zip(sym.list_auxiliary_states(), auxs))
    return [[key, p.name[len(net.prefix):], list(shapes[p.name])]
            for key, p in net._collect_params_with_prefix().items()]


def mxnet_outputs(mx: Any, name: str, params_file: str = "", seed: int = SEED) -> np.ndarray:
    """MXNet's model ``name`` with :func:`draw_params` weights on :func:`draw_input`; the
    parameters are saved to ``params_file`` when given."""
    net = mx.gluon.model_zoo.vision.get_model(name)
    net.initialize()
    x = mx.nd.array(draw_input(input_shape(name), seed))
    net(x)  # (settles the deferred shapes)
    params = net._collect_params_with_prefix()
    drawn = draw_params({k: p.shape for k, p in params.items()}, seed)
    for key, p in params.items():
        p.set_data(mx.nd.array(drawn[key]))
    if params_file:
        net.save_parameters(params_file)
    return net(x).asnumpy()


def main() -> None:
    """Write params.json.gz and outputs.npz beside this file (needs MXNet 1.9.1)."""
    import mxnet as mx
    HERE.mkdir(exist_ok=True)
    table = {name: mxnet_structure(mx, name) for name in NAMES}
    text = json.dumps(table, indent=0, separators=(",", ":")) + "\n"
    # gzip without a timestamp, so an unchanged table rewrites the same bytes
    (HERE / "params.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    outputs = {name: mxnet_outputs(mx, name) for name in GOLDEN_OUTPUTS}
    np.savez_compressed(HERE / "outputs.npz", **outputs)
    print(f"wrote {len(table)} models' parameters and {len(outputs)} outputs to {HERE}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
