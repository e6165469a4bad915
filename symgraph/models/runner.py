"""One MNIST runner shared by every model: ``python -m symgraph.models.<name>`` and
``symgraph train``.

Loads MNIST (``--data-dir`` or ``SYMGRAPH_DATA``), trains with ``Module.fit`` using the model's
recipe (command-line flags override it), prints progress, the test accuracy and the epoch time,
and optionally writes a checkpoint and a training-curve PNG beside it.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np

import symgraph as sg

DEFAULTS = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.01, "momentum": 0.9,
            "wd": 0.0, "initializer": "pytorch", "flat": False}


def make_initializer(name: str) -> sg.init.Initializer:
    """``'pytorch'``: U(+-1/sqrt(fan_in)) like PyTorch's default layers (Xavier with
    factor_type='in', magnitude=1); anything else is looked up by ``sg.init.create``."""
    if name == "pytorch":
        return sg.init.Xavier(rnd_type="uniform", factor_type="in", magnitude=1.0)
    return sg.init.create(name)


def parser(model: str, recipe: dict) -> argparse.ArgumentParser:
    r = {**DEFAULTS, **recipe}
    p = argparse.ArgumentParser(prog=f"python -m symgraph.models.{model}",
                                description=f"Train {model} on MNIST with symgraph.")
    p.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--data-dir", default=None, help="MNIST folder (default: $SYMGRAPH_DATA)")
    p.add_argument("--batch-size", type=int, default=r["batch_size"])
    p.add_argument("--optimizer", default=r["optimizer"])
    p.add_argument("--lr", type=float, default=r["learning_rate"])
    p.add_argument("--momentum", type=float, default=r["momentum"])
    p.add_argument("--wd", type=float, default=r["wd"])
    p.add_argument("--init", default=r["initializer"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-train", type=int, default=None, help="use the first N training images")
    p.add_argument("--num-test", type=int, default=None, help="use the first N test images")
    p.add_argument("--prefix", default=None, help="checkpoint prefix (saved after each epoch)")
    p.add_argument("--curve", action="store_true", help="write PREFIX-curve.png (matplotlib)")
    p.add_argument("--log-every", type=int, default=100, help="Speedometer period in batches")
    return p


def load_mnist(data_dir: Optional[str], flat: bool, num_train: Optional[int],
               num_test: Optional[int] = None) -> dict:
    d = sg.datasets.mnist.load_data(data_dir)
    if flat:
        d["train_data"] = d["train_data"].reshape(-1, 784)
        d["test_data"] = d["test_data"].reshape(-1, 784)
    if num_train:
        d["train_data"] = d["train_data"][:num_train]
        d["train_label"] = d["train_label"][:num_train]
    if num_test:
        d["test_data"] = d["test_data"][:num_test]
        d["test_label"] = d["test_label"][:num_test]
    return d


def train(model: str, args: argparse.Namespace, recipe: dict, symbol: Any) -> dict:
    """Train ``symbol`` and return ``{'accuracy', 'epoch_time', 'module'}``."""
    sg.random.seed(args.seed)
    flat = {**DEFAULTS, **recipe}["flat"]
    mnist = load_mnist(args.data_dir, flat, args.num_train, args.num_test)
    train_iter = sg.io.NDArrayIter(mnist["train_data"], mnist["train_label"], args.batch_size,
                                   shuffle=True)
    test_iter = sg.io.NDArrayIter(mnist["test_data"], mnist["test_label"], args.batch_size)
    ctx = sg.gpu() if args.ctx == "gpu" else sg.cpu()
    mod = sg.mod.Module(symbol, context=ctx)
    opt_params = {"learning_rate": args.lr, "wd": args.wd}
    if args.optimizer == "sgd":
        opt_params["momentum"] = args.momentum
    callbacks = [sg.callback.Speedometer(args.batch_size, args.log_every)]
    epoch_cb = sg.callback.do_checkpoint(args.prefix) if args.prefix else None
    tic = time.time()
    mod.fit(train_iter, eval_data=test_iter, eval_metric="acc", optimizer=args.optimizer,
            optimizer_params=opt_params, initializer=make_initializer(args.init),
            num_epoch=args.epochs, batch_end_callback=callbacks, epoch_end_callback=epoch_cb,
            curve_file=f"{args.prefix}-curve.png" if args.prefix and args.curve else None)
    total = time.time() - tic
    acc = dict(mod.score(test_iter, "acc"))["accuracy"]
    epoch_time = float(np.median([h["time"] for h in mod.history]))
    print(f"{model}: test accuracy {acc * 100:.2f}% after {args.epochs} epoch(s); "
          f"epoch time {epoch_time:.1f} s (median), total {total:.1f} s on {ctx}")
    return {"accuracy": acc, "epoch_time": epoch_time, "module": mod}


def main(model: str, argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m symgraph.models.<model>`` and ``symgraph train <model>``."""
    mod = importlib.import_module(f"symgraph.models.{model}")
    args = parser(model, mod.RECIPE).parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout, force=True)
    try:
        train(model, args, mod.RECIPE, mod.build())
    except sg.SymgraphError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # --ctx gpu without the CUDA backend or pycuda
        print(f"error: context {args.ctx} is not available: {exc}", file=sys.stderr)
        return 2
    return 0


def time_steps(symbol: Any, ctx: Any, data_shape: tuple, steps: int, warmup: int = 2) -> list:
    """Seconds per training step (forward, backward, SGD update) on random data."""
    rng = np.random.default_rng(0)
    mod = sg.mod.Module(symbol, context=ctx)
    bs = data_shape[0]
    mod.bind([("data", data_shape)], [("softmax_label", (bs,))])
    mod.init_params(make_initializer("pytorch"))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    batch = sg.io.DataBatch([sg.nd.array(rng.random(data_shape, np.float32))],
                            [sg.nd.array(rng.integers(0, 10, bs).astype(np.float32))])
    times = []
    for i in range(warmup + steps):
        tic = time.perf_counter()
        mod.forward_backward(batch)
        mod.update()
        mod.get_outputs()[0].asnumpy()  # wait for the device
        if i >= warmup:
            times.append(time.perf_counter() - tic)
    return times


def bench_main(model: str, argv: Optional[Sequence[str]] = None) -> int:
    """``symgraph bench MODEL``: median training-step time and samples/s."""
    p = argparse.ArgumentParser(prog=f"symgraph bench {model}")
    p.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args(argv)
    mod = importlib.import_module(f"symgraph.models.{model}")
    flat = {**DEFAULTS, **mod.RECIPE}["flat"]
    shape = (args.batch_size, 784) if flat else (args.batch_size, 1, 28, 28)
    ctx = sg.gpu() if args.ctx == "gpu" else sg.cpu()
    times = time_steps(mod.build(), ctx, shape, args.steps)
    med = float(np.median(times))
    print("| model | ctx | batch | steps | median step (ms) | samples/s |")
    print("|---|---|---|---|---|---|")
    print(f"| {model} | {ctx} | {args.batch_size} | {args.steps} | {med * 1e3:.2f} | "
          f"{args.batch_size / med:.0f} |")
    return 0
