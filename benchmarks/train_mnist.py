"""MNIST training epoch time: symgraph ``Module.fit`` beside PyTorch, same recipe, same data,
same process.

    python benchmarks/train_mnist.py --ctx cpu --epochs 1 --data-dir ../shared/data/mnist
    python benchmarks/train_mnist.py --ctx gpu --epochs 3 --model simple_cnn

Recipe (the seed documents'): SGD lr 0.01, momentum 0.9, batch 64, mean cross-entropy, weights
U(+-1/sqrt(fan_in)), shuffled every epoch. Prints one row per framework and epoch, then the
median epoch time and the final test accuracy of each.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import symgraph as sg  # noqa: E402
from symgraph.interop.models.runner import DEFAULTS, make_initializer  # noqa: E402

from benchmarks.common import torch_seed_cnn  # noqa: E402


def run_symgraph(model: str, data: dict, args: argparse.Namespace) -> tuple[list, float]:
    recipe = {**DEFAULTS, **importlib.import_module(f"symgraph.interop.models.{model}").RECIPE}
    sg.random.seed(args.seed)
    train = sg.io.NDArrayIter(data["x"], data["y"], recipe["batch_size"], shuffle=True)
    test = sg.io.NDArrayIter(data["xt"], data["yt"], 1000)
    ctx = sg.gpu() if args.ctx == "gpu" else sg.cpu()
    mod = sg.mod.Module(importlib.import_module(f"symgraph.interop.models.{model}").build(), context=ctx)
    prof = None
    if args.profile:  # host-side profile of the whole fit (per-batch Python overhead)
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    mod.fit(train, num_epoch=args.epochs, optimizer=recipe["optimizer"],
            optimizer_params={"learning_rate": recipe["learning_rate"],
                              "momentum": recipe["momentum"]},
            initializer=make_initializer("pytorch"), progress_bar=False)
    if prof is not None:
        import pstats
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
    return [h["time"] for h in mod.history], dict(mod.score(test, "acc"))["accuracy"]


def torch_net(model: str, torch):
    nn = torch.nn
    if model == "mlp":
        return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                             nn.Linear(64, 10))
    if model == "lenet":
        return nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2),
                             nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))
    return torch_seed_cnn()


def run_torch(model: str, data: dict, args: argparse.Namespace) -> tuple[list, float]:
    import torch
    recipe = {**DEFAULTS, **importlib.import_module(f"symgraph.interop.models.{model}").RECIPE}
    torch.manual_seed(args.seed)
    if os.environ.get("OPENBLAS_NUM_THREADS"):  # same CPU threads as numpy's BLAS
        torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    dev = torch.device("cuda" if args.ctx == "gpu" else "cpu")
    net = torch_net(model, torch).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=recipe["learning_rate"],
                          momentum=recipe["momentum"])
    x, y = torch.tensor(data["x"], device=dev), torch.tensor(data["y"], device=dev).long()
    bs, n, times = recipe["batch_size"], len(data["x"]), []
    for _ in range(args.epochs):
        tic = time.perf_counter()
        perm = torch.randperm(n, device=dev)
        for i in range(0, n, bs):
            idx = perm[i:i + bs]
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - tic)
    with torch.no_grad():
        pred = net(torch.tensor(data["xt"], device=dev)).argmax(1).cpu().numpy()
    return times, float((pred == data["yt"]).mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--model", default="simple_cnn", choices=("simple_cnn", "lenet", "mlp"))
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--num-train", type=int, default=None, help="first N training images only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--profile", type=int, default=0,
                   help="cProfile symgraph's fit and print the N functions with most own time")
    args = p.parse_args()
    d = sg.datasets.mnist.load_data(args.data_dir)
    flat = {**DEFAULTS, **importlib.import_module(f"symgraph.interop.models.{args.model}").RECIPE}["flat"]
    shape = (-1, 784) if flat else (-1, 1, 28, 28)
    n = args.num_train or len(d["train_data"])
    data = {"x": d["train_data"][:n].reshape(shape), "y": d["train_label"][:n],
            "xt": d["test_data"].reshape(shape), "yt": d["test_label"]}
    runs = [("symgraph", run_symgraph)] + ([] if args.no_torch else [("pytorch", run_torch)])
    print(f"MNIST {args.model}, {n} training images, ctx {args.ctx}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print("| framework | epoch | epoch time (s) |")
    print("|---|---|---|")
    summary = []
    for name, fn in runs:
        times, acc = fn(args.model, data, args)
        for i, t in enumerate(times):
            print(f"| {name} | {i + 1} | {t:.2f} |")
        summary.append((name, float(np.median(times)), acc))
    print("\n| framework | median epoch time (s) | test accuracy |")
    print("|---|---|---|")
    for name, t, acc in summary:
        print(f"| {name} | {t:.2f} | {acc * 100:.2f}% |")


if __name__ == "__main__":
    main()
