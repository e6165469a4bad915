"""The workloads of ``benchmarks/cpu_step.py`` in symgraph and in PyTorch, each a function of
the row's sizes returning a callable that runs one timed unit (a step, an inference, an epoch).

symgraph and PyTorch are imported inside the functions only: ``cpu_step_mxnet.py`` imports
:func:`step_times` from here under MXNet's venv (numpy 1.23, no symgraph, no torch).
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Optional

import numpy as np

Params = dict[str, Any]


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""``--clock``: wall clock, or the process's CPU time (all its threads; steadier on a shared
machine for one-thread runs)."""


def step_times(fn: Callable[[], Optional[float]], repeat: int, warm: int,
               between: Optional[Callable[[], Any]] = None, clock: str = "wall"
               ) -> list[float]:
    """Milliseconds (on ``CLOCKS[clock]``) of ``repeat`` calls of ``fn`` after ``warm``
    untimed calls, or what ``fn`` returns where it times itself (an epoch, without binding);
    ``between`` (untimed) runs before each call (another library's work in the same
    process)."""
    now = CLOCKS[clock]
    for _ in range(warm):
        fn()
    out = []
    for _ in range(repeat):
        if between is not None:
            between()
        t0 = now()
        own = fn()
        out.append(own if isinstance(own, float) else (now() - t0) * 1e3)
    return out


def cnn_inputs(batch: int) -> dict[str, np.ndarray]:
    """Random float32 data and labels of the seed CNN (weights are the frameworks' own)."""
    rng = np.random.default_rng(0)
    return {"data": rng.random((batch, 1, 28, 28), dtype=np.float32),
            "label": rng.integers(0, 10, batch).astype(np.float32)}


def tokens(p: Params) -> tuple[np.ndarray, np.ndarray]:
    """Random (bptt, batch) token ids and next-token labels of the language model."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, p["vocab"], (p["bptt"] + 1, p["batch"]))
    return x[:-1].astype(np.float32), x[1:].astype(np.float32)


# ---- symgraph and MXNet: one code path, the library (``sg`` or ``mx``) an argument -------

def executor_step(lib: Any, sym: Any, batch: int) -> Callable[[], None]:
    """Forward + backward of the seed CNN ``sym`` through ``lib``'s executor (no gradient
    for the data), weights N(0, 0.05)."""
    exe = bind_cnn(lib, sym, batch)

    def step() -> None:
        exe.forward(is_train=True)
        exe.backward()
        exe.grad_dict["fc2_weight"].wait_to_read()
    return step


def bind_cnn(lib: Any, sym: Any, batch: int) -> Any:
    """The training executor of :func:`executor_step`, its inputs and weights set."""
    arrays = cnn_inputs(batch)
    req = {n: "null" if n in ("data", "softmax_label") else "write" for n in sym.list_arguments()}
    exe = sym.simple_bind(lib.cpu(), grad_req=req, data=arrays["data"].shape)
    exe.arg_dict["data"][:] = arrays["data"]
    exe.arg_dict["softmax_label"][:] = arrays["label"]
    rng = np.random.default_rng(1)
    for name, r in req.items():
        if r == "write":
            exe.arg_dict[name][:] = rng.normal(size=exe.arg_dict[name].shape) * 0.05
    return exe


def gluon_resnet(lib: Any, p: Params) -> Callable[[], None]:
    """Inference of Gluon's model-zoo ``resnet18_v1``, hybridized."""
    net = lib.gluon.model_zoo.vision.resnet18_v1()
    net.initialize(lib.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = lib.nd.array(np.random.default_rng(0).random(
        (p["batch"], 3, p["size"], p["size"]), dtype=np.float32))
    return lambda: net(x).wait_to_read()


def gluon_lm(lib: Any, p: Params) -> Callable[[], None]:
    """One SGD step of an Embedding - ``gluon.rnn.LSTM`` - Dense language model (mean
    softmax cross-entropy over the bptt x batch tokens), hybridized."""
    gluon, nn = lib.gluon, lib.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Embedding(p["vocab"], p["hidden"]),
                gluon.rnn.LSTM(p["hidden"], num_layers=p["layers"], input_size=p["hidden"]),
                nn.Dense(p["vocab"], flatten=False, in_units=p["hidden"]))
    net.initialize(lib.init.Xavier())
    net.hybridize(static_alloc=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, y = (lib.nd.array(a) for a in tokens(p))

    def step() -> None:
        with lib.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(p["batch"])
        loss.wait_to_read()
    return step


def sg_cnn(p: Params, data: Any = None) -> Callable[[], None]:
    """The seed CNN's step on symgraph (``symgraph.interop.models.simple_cnn``)."""
    import symgraph as sg
    from symgraph.interop.models.simple_cnn import build
    return executor_step(sg, build(), p["batch"])


def sg_resnet(p: Params, data: Any = None) -> Callable[[], None]:
    import symgraph as sg
    return gluon_resnet(sg, p)


def sg_lstm(p: Params, data: Any = None) -> Callable[[], None]:
    import symgraph as sg
    return gluon_lm(sg, p)


def mnist_args() -> argparse.Namespace:
    """The options ``benchmarks/train_mnist.py``'s runners read: one CPU epoch, seed 0."""
    return argparse.Namespace(ctx="cpu", epochs=1, seed=0, profile=0)


def sg_mnist(p: Params, data: dict) -> Callable[[], float]:
    """One epoch of ``Module.fit`` (train_mnist's recipe); returns the epoch's milliseconds
    as ``fit`` measured them (binding excluded)."""
    from benchmarks.train_mnist import run_symgraph
    return lambda: run_symgraph("simple_cnn", data, mnist_args())[0][0] * 1e3


# ---- PyTorch -------------------------------------------------------------------------------

def torch_cnn(p: Params, data: Any = None) -> Callable[[], None]:
    """The seed CNN's forward + backward, summed cross entropy (SoftmaxOutput's gradient)."""
    import torch
    from benchmarks.common import torch_seed_cnn
    arrays = cnn_inputs(p["batch"])
    net = torch_seed_cnn()
    x, y = torch.tensor(arrays["data"]), torch.tensor(arrays["label"]).long()

    def step() -> None:
        net.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(x), y, reduction="sum").backward()
    return step


def torch_resnet18() -> Any:
    """ResNet-18 v1 (He et al. 2015, as Gluon's ``resnet18_v1``), without torchvision."""
    from torch import nn

    from benchmarks.common import torch_residual, torch_resnet_stem

    def basic(cin: int, cout: int, stride: int) -> Any:
        return torch_residual(nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)), cin, cout, stride)

    layers = torch_resnet_stem()
    for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
        layers += [basic(cin, cout, stride), basic(cout, cout, 1)]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers).eval()


def torch_resnet(p: Params, data: Any = None) -> Callable[[], None]:
    """ResNet-18 inference under ``torch.inference_mode``."""
    import torch
    net = torch_resnet18()
    x = torch.tensor(np.random.default_rng(0).random(
        (p["batch"], 3, p["size"], p["size"]), dtype=np.float32))

    def run() -> None:
        with torch.inference_mode():
            net(x)
    return run


def torch_lstm(p: Params, data: Any = None) -> Callable[[], None]:
    """The language model's SGD step in PyTorch (same layers, sizes and loss)."""
    import torch
    from torch import nn

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(p["vocab"], p["hidden"])
            self.rnn = nn.LSTM(p["hidden"], p["hidden"], p["layers"])
            self.dec = nn.Linear(p["hidden"], p["vocab"])

        def forward(self, x: Any) -> Any:
            return self.dec(self.rnn(self.embed(x))[0])

    net = LM()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = (torch.tensor(a).long() for a in tokens(p))

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        out = net(x)
        torch.nn.functional.cross_entropy(out.reshape(-1, p["vocab"]), y.reshape(-1)).backward()
        opt.step()
    return step


def torch_mnist(p: Params, data: dict) -> Callable[[], float]:
    """One epoch of train_mnist's PyTorch loop; returns its milliseconds."""
    from benchmarks.train_mnist import run_torch
    return lambda: run_torch("simple_cnn", data, mnist_args())[0][0] * 1e3


SYMGRAPH = {"cnn": sg_cnn, "resnet": sg_resnet, "lstm": sg_lstm, "mnist": sg_mnist}
TORCH = {"cnn": torch_cnn, "resnet": torch_resnet, "lstm": torch_lstm, "mnist": torch_mnist}
