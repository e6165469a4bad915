"""MXNet 1.9.1's side of ``benchmarks/cpu_step.py``: the same workloads in MXNet, run by that
script in a subprocess under MXNet's venv (``SYMGRAPH_MXNET_PYTHON``, default
/tmp/mxvenv/bin/python). The venv's recipe is the one ``../shared/mxnet-suite/run_suite.sh``
prints::

    python3.11 -m venv /tmp/mxvenv
    /tmp/mxvenv/bin/pip install numpy==1.23.5 mxnet==1.9.1 'scipy<1.12' pytest

Usage (by cpu_step.py): python cpu_step_mxnet.py --kind cnn --params '{"batch": 64}'
    --repeat 10 --warm 1 [--data FILE.npz]; prints the milliseconds as one JSON list.
MXNet's pip wheel is built with oneDNN (MKLDNN), which its CPU operators use.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cpu_models import (Params, executor_step, gluon_lm, gluon_resnet,  # noqa: E402
                                   step_times)


def seed_cnn(mx: Any) -> Any:
    """symgraph.interop.models.simple_cnn in mx.sym (same layers and names)."""
    S = mx.sym
    x = S.var("data")
    for i, width in ((1, 32), (2, 64)):
        x = S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=width, name=f"conv{i}")
        x = S.Pooling(S.Activation(x, act_type="relu"), pool_type="max", kernel=(2, 2),
                      stride=(2, 2))
    x = S.Activation(S.FullyConnected(S.Flatten(x), num_hidden=128, name="fc1"), act_type="relu")
    return S.SoftmaxOutput(S.FullyConnected(x, num_hidden=10, name="fc2"), name="softmax")


def mx_cnn(mx: Any, p: Params, data: Any) -> Callable[[], None]:
    return executor_step(mx, seed_cnn(mx), p["batch"])


def mx_resnet(mx: Any, p: Params, data: Any) -> Callable[[], None]:
    return gluon_resnet(mx, p)


def mx_lstm(mx: Any, p: Params, data: Any) -> Callable[[], None]:
    return gluon_lm(mx, p)


def mx_mnist(mx: Any, p: Params, data: dict) -> Callable[[], float]:
    """One epoch of Module.fit, bound beforehand (so that binding is not timed)."""
    def epoch() -> float:
        mx.random.seed(0)
        it = mx.io.NDArrayIter(data["x"], data["y"], 64, shuffle=True)
        mod = mx.mod.Module(seed_cnn(mx), context=mx.cpu())
        mod.bind(it.provide_data, it.provide_label)
        mod.init_params(mx.init.Xavier(rnd_type="uniform", factor_type="in", magnitude=1.0))
        mod.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
        t0 = time.perf_counter()
        mod.fit(it, num_epoch=1)
        return (time.perf_counter() - t0) * 1e3
    return epoch


KINDS = {"cnn": mx_cnn, "resnet": mx_resnet, "lstm": mx_lstm, "mnist": mx_mnist}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=sorted(KINDS), required=True)
    ap.add_argument("--params", type=json.loads, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warm", type=int, default=1)
    ap.add_argument("--data", default=None, help="an .npz of x, y (the MNIST rows)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    a = ap.parse_args()
    import mxnet as mx
    data = dict(np.load(a.data)) if a.data else None
    fn = KINDS[a.kind](mx, a.params, data)
    print(json.dumps(step_times(fn, a.repeat, a.warm, clock=a.clock)))


if __name__ == "__main__":
    main()
