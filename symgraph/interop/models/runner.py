"""One MNIST runner shared by every model: ``python -m symgraph.interop.models.<name>`` and
``symgraph train``.

Loads MNIST (``--data-dir`` or ``SYMGRAPH_DATA``), trains with ``Module.fit`` using the model's
recipe (command-line flags override it), prints progress, the test accuracy and the epoch time,
and optionally writes a checkpoint and a training-curve PNG beside it.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np

import symgraph as sg
from symgraph.interop.cli_args import CurveFlag, Parser, positive_float, positive_int

DEFAULTS = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.01, "momentum": 0.9,
            "wd": 0.0, "initializer": "pytorch", "flat": False}


def make_initializer(name: str) -> sg.init.Initializer:
    """``'pytorch'``: U(+-1/sqrt(fan_in)) like PyTorch's default layers (Xavier with
    factor_type='in', magnitude=1); anything else is looked up by ``sg.init.create``."""
    if name == "pytorch":
        return sg.init.Xavier(rnd_type="uniform", factor_type="in", magnitude=1.0)
    return sg.init.create(name)


def init_name(text: str) -> str:
    """argparse type of ``--init``: ``pytorch`` or a name (or JSON) ``sg.init.create`` takes;
    an unknown name is a usage error listing every choice, ``pytorch`` included."""
    if text == "pytorch" or text.lower() in sg.init.names() or text.lstrip().startswith("["):
        return text
    raise argparse.ArgumentTypeError(f"unknown initializer {text!r}; known: "
                                     f"{['pytorch'] + sg.init.names()}")


# option -> (recipe key, type, help); defaults come from the model's RECIPE over DEFAULTS
RECIPE_OPTIONS = {
    "--batch-size": ("batch_size", positive_int, "samples per batch"),
    "--optimizer": ("optimizer", str, "optimizer name (sg.optimizer.create)"),
    "--lr": ("learning_rate", positive_float, "learning rate"),
    "--momentum": ("momentum", float, "SGD momentum"),
    "--wd": ("wd", float, "weight decay"),
    "--init": ("initializer", init_name, "'pytorch' or an sg.init name"),
}


def add_train_options(p: argparse.ArgumentParser, recipe: Optional[dict]) -> None:
    """The training flags; with ``recipe`` None the recipe-driven ones default to None (filled
    per model by :func:`fill_recipe`, as ``symgraph train MODEL`` knows the model only later)."""
    r = {**DEFAULTS, **recipe} if recipe is not None else None
    p.add_argument("--epochs", type=positive_int, default=1, help="default: 1")
    p.add_argument("--data-dir", default=None, help="MNIST folder (default: $SYMGRAPH_DATA)")
    p.add_argument("--download", action="store_true",
                   help="fetch the MNIST files missing from the data folder first")
    for flag, (key, kind, text) in RECIPE_OPTIONS.items():
        p.add_argument(flag, type=kind, default=r[key] if r else None,
                       help=f"{text} (default: {r[key] if r else 'the model recipe'})")
    p.add_argument("--seed", type=int, default=0, help="default: 0")
    p.add_argument("--num-train", type=positive_int, default=None,
                   help="use the first N training images")
    p.add_argument("--num-test", type=positive_int, default=None,
                   help="use the first N test images")
    p.add_argument("--prefix", default=None, help="checkpoint prefix (saved after each epoch)")
    p.add_argument("--curve", action=CurveFlag,
                   help="write PREFIX-curve.png (needs --prefix and matplotlib)")
    p.add_argument("--log-every", type=positive_int, default=100,
                   help="Speedometer period in batches (default: 100)")
    p.add_argument("--gpus", type=gpu_list, default=None, metavar="0,1",
                   help="train on these GPUs of this process (data parallel; implies --ctx gpu)")
    p.add_argument("--amp", default=None, choices=("fp16", "float16", "bf16", "bfloat16"),
                   help="mixed precision: float16 (dynamic loss scaling) or bfloat16 "
                        "(docs/amp.md)")
    p.add_argument("--kv-store", default=None, metavar="TYPE", choices=sg.kvstore.TYPES,
                   help="local, device, nccl, dist_sync, dist_device_sync (default: device "
                        "with several GPUs, dist_sync under torchrun/mpirun/srun, else local)")


def gpu_list(text: str) -> list[int]:
    """argparse type of ``--gpus``: ``0,1`` -> ``[0, 1]``."""
    try:
        ids = [int(t) for t in text.split(",") if t.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GPU ids like 0,1, got {text!r}") from None
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        raise argparse.ArgumentTypeError(f"expected distinct GPU ids like 0,1, got {text!r}")
    return ids


def contexts(args: argparse.Namespace) -> tuple[Any, str, Any]:
    """``(context or list of contexts, kvstore type, WorldInfo)`` of the train flags: under a
    launcher each process drives ``gpu(LOCAL_RANK)`` unless ``--gpus`` says otherwise."""
    from symgraph.training.parallel import world_from_env
    world = world_from_env()
    gpus = getattr(args, "gpus", None)
    if gpus:
        ctx: Any = [sg.gpu(i) for i in gpus] if len(gpus) > 1 else sg.gpu(gpus[0])
    elif args.ctx == "gpu":
        ctx = sg.gpu(world.local_rank)
    else:
        ctx = sg.cpu()
    default = "dist_sync" if world.size > 1 else ("device" if isinstance(ctx, list) else "local")
    kv = getattr(args, "kv_store", None) or default
    sg.kvstore.check_type(kv)
    return ctx, kv, world


def fill_recipe(args: argparse.Namespace, recipe: dict) -> argparse.Namespace:
    """Recipe values for the flags left at None."""
    r = {**DEFAULTS, **recipe}
    for flag, (key, _, _) in RECIPE_OPTIONS.items():
        dest = flag.lstrip("-").replace("-", "_")
        if getattr(args, dest) is None:
            setattr(args, dest, r[key])
    return args


def parser(model: str, recipe: dict) -> argparse.ArgumentParser:
    """The parser of ``python -m symgraph.interop.models.<model>``."""
    p = Parser(prog=f"python -m symgraph.interop.models.{model}",
               description=f"Train {model} on MNIST with symgraph.")
    p.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    add_train_options(p, recipe)
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
    try:
        mnist = load_mnist(args.data_dir, flat, args.num_train, args.num_test)
    except sg.DataError as exc:
        if "not found in" not in str(exc):  # a damaged file: its own message says what
            raise
        folder = sg.datasets.mnist.data_dir(args.data_dir)
        raise sg.DataError(f"MNIST files not found in {folder}: add --download to fetch them "
                           f"from {sg.datasets.mnist.DEFAULT_URL} (or give --data-dir of a "
                           f"folder holding train-images-idx3-ubyte[.gz] and the others)"
                           ) from None
    ctx, kvstore, world = contexts(args)
    train_iter = sg.io.NDArrayIter(mnist["train_data"], mnist["train_label"], args.batch_size,
                                   shuffle=True, num_parts=world.size, part_index=world.rank)
    test_iter = sg.io.NDArrayIter(mnist["test_data"], mnist["test_label"], args.batch_size)
    mod = sg.mod.Module(symbol, context=ctx)
    opt_params = {"learning_rate": args.lr, "wd": args.wd}
    if args.optimizer == "sgd":
        opt_params["momentum"] = args.momentum
    callbacks = [sg.callback.Speedometer(args.batch_size, args.log_every)]
    epoch_cb = sg.callback.do_checkpoint(args.prefix) if args.prefix else None
    tic = time.time()
    mod.fit(train_iter, eval_data=test_iter, eval_metric="acc", optimizer=args.optimizer,
            kvstore=kvstore,
            optimizer_params=opt_params, initializer=make_initializer(args.init),
            num_epoch=args.epochs, batch_end_callback=callbacks, epoch_end_callback=epoch_cb,
            curve_file=f"{args.prefix}-curve.png" if args.prefix and args.curve else None,
            amp=getattr(args, "amp", None))
    total = time.time() - tic
    acc = mod.history[-1]["val-accuracy"]  # fit scored the test set after the last epoch
    epoch_time = float(np.median([h["time"] for h in mod.history]))
    print(f"{model}: test accuracy {acc * 100:.2f}% after {args.epochs} epoch(s); "
          f"epoch time {epoch_time:.1f} s (median), total {total:.1f} s on {ctx}")
    return {"accuracy": acc, "epoch_time": epoch_time, "module": mod}


def fetch_mnist(data_dir: Optional[str]) -> None:
    """``--download``: fetch the missing MNIST files, or raise DataError saying why not."""
    mnist = sg.datasets.mnist
    folder = mnist.data_dir(data_dir)
    try:
        mnist.download(folder)
    except OSError as exc:  # no network, proxy, disk full...
        reason = getattr(exc, "reason", None) or exc
        raise sg.DataError(f"--download: could not fetch MNIST from {mnist.DEFAULT_URL} into "
                           f"{folder}: {reason}") from None
    print(f"MNIST is in {folder}")


def check_prefix(prefix: Optional[str]) -> None:
    """``--prefix``: its folder must exist before training, not when the first epoch's
    checkpoint is written."""
    if prefix is None:
        return
    folder = os.path.dirname(prefix) or "."
    if not os.path.isdir(folder):
        raise sg.DataError(f"--prefix {prefix}: folder {folder} does not exist (create it "
                           f"first; checkpoints are written as {prefix}-symbol.json and "
                           f"{prefix}-NNNN.params)")


def run_cli(args: argparse.Namespace) -> int:
    """``symgraph train MODEL ...`` after parsing (errors propagate to the CLI's handler)."""
    mod = importlib.import_module(f"symgraph.interop.models.{args.model}")
    fill_recipe(args, mod.RECIPE)
    check_prefix(args.prefix)
    if args.curve and args.prefix is None:
        raise sg.DataError("--curve writes PREFIX-curve.png: give --prefix too")
    if not (args.data_dir or sg.config.get("SYMGRAPH_DATA")):
        raise sg.DataError("no MNIST folder: give --data-dir DIR (or set SYMGRAPH_DATA); "
                           "add --download to fetch MNIST into it")
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout, force=True)
    if args.download:
        fetch_mnist(args.data_dir)
    train(args.model, args, mod.RECIPE, mod.build())
    return 0


def main(model: str, argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m symgraph.interop.models.<model>``."""
    mod = importlib.import_module(f"symgraph.interop.models.{model}")
    args = parser(model, mod.RECIPE).parse_args(argv)
    args.model = model
    try:
        return run_cli(args)
    except sg.SymgraphError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # --ctx gpu without the CUDA backend or pycuda
        print(f"error: context {args.ctx} is not available: {exc}", file=sys.stderr)
        return 2


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


def bench(args: argparse.Namespace) -> int:
    """``symgraph bench MODEL``: median training-step time and samples/s."""
    model = args.model
    mod = importlib.import_module(f"symgraph.interop.models.{model}")
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
