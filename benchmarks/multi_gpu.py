"""Multi-GPU benchmark: weak scaling, identical replicas, accuracy on 2 GPUs.

    PYTHONPATH=. python3 benchmarks/multi_gpu.py                    # every mode
    PYTHONPATH=. python3 benchmarks/multi_gpu.py --mode scaling     # samples/s, 1 vs 2 GPUs
    PYTHONPATH=. python3 benchmarks/multi_gpu.py --mode identical   # 100 steps, bitwise equal
    PYTHONPATH=. python3 benchmarks/multi_gpu.py --mode accuracy --data-dir /data/mnist
    PYTHONPATH=. python3 benchmarks/multi_gpu.py --profile         # host ms per step phase

Scaling: the seed CNN (symgraph.interop.models.simple_cnn, batch 1024 per GPU) and a ResNet-20-style
CIFAR net (3 stages x 3 basic blocks with BatchNorm, 16/32/64 channels, batch 256 per GPU), on
random data, SGD with momentum, fp32 (TF32 off everywhere). symgraph runs ``fit``'s step
(``forward_backward_update``: batch copy in, forward, backward, all-reduce, update) on 1 GPU,
on 2 GPUs of one process (``Module(context=[gpu(0), gpu(1)])``) and in 2 processes (this
script starts them with torchrun's environment, ``kvstore='nccl'``); PyTorch runs eager on 1
GPU and DDP over NCCL in 2 processes (``torch.multiprocessing``), in the same run. samples/s =
global batch x timed steps / wall time (the processes' slowest), after warm-up.
Needs at least 2 GPUs; fails with a message otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# workers import this checkout first, then whatever the parent could import
PYTHONPATH = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
sys.path.insert(0, str(ROOT))

import symgraph as sg  # noqa: E402

from benchmarks.common import torch_fp32, torch_resnet20, torch_seed_cnn  # noqa: E402

BATCH = {"cnn": 1024, "resnet20": 256}
SHAPE = {"cnn": (1, 28, 28), "resnet20": (3, 32, 32)}
OPT = {"learning_rate": 0.01, "momentum": 0.9}


# -- models ------------------------------------------------------------------------------------
def _conv_bn(x: Any, name: str, channels: int, stride: int, relu: bool) -> Any:
    S = sg.sym
    x = S.Convolution(x, num_filter=channels, kernel=(3, 3), stride=(stride, stride),
                      pad=(1, 1), no_bias=True, name=f"{name}_conv")
    x = S.BatchNorm(x, name=f"{name}_bn", fix_gamma=False)
    return S.Activation(x, act_type="relu", name=f"{name}_relu") if relu else x


def resnet20() -> Any:
    """ResNet-20 for CIFAR (He et al. 2016): conv16, 3 stages x 3 basic blocks, avg pool, fc10."""
    S = sg.sym
    x = _conv_bn(S.var("data"), "stem", 16, 1, True)
    for stage, channels in enumerate((16, 32, 64)):
        for block in range(3):
            stride = 2 if stage > 0 and block == 0 else 1
            name = f"s{stage}b{block}"
            y = _conv_bn(x, f"{name}a", channels, stride, True)
            y = _conv_bn(y, f"{name}b", channels, 1, False)
            if stride != 1:
                x = S.Convolution(x, num_filter=channels, kernel=(1, 1), stride=(2, 2),
                                  no_bias=True, name=f"{name}_proj")
            x = S.Activation(x + y, act_type="relu", name=f"{name}_out")
    x = S.Pooling(x, kernel=(8, 8), pool_type="avg", global_pool=True, name="pool")
    x = S.FullyConnected(S.Flatten(x), num_hidden=10, name="fc")
    return S.SoftmaxOutput(x, name="softmax")


def build(model: str) -> Any:
    from symgraph.interop.models import simple_cnn
    return simple_cnn.build() if model == "cnn" else resnet20()


def torch_net(model: str) -> Any:
    return torch_seed_cnn() if model == "cnn" else torch_resnet20(projection_bn=False)


# -- symgraph ----------------------------------------------------------------------------------
def _batch(model: str, n: int) -> Any:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n,) + SHAPE[model]).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.float32)
    return sg.io.DataBatch([sg.nd.array(x)], [sg.nd.array(y)])


def _sync(mod: Any) -> None:
    from symgraph.runtime.cuda.runtime import activate
    for exe in getattr(mod, "executors", [mod._exec]):
        with activate(exe._ctx.device_id):
            exe.train_program.stream.synchronize()


def sg_module(model: str, ctx: Any, batch: int, kvstore: str = "device") -> Any:
    sg.random.seed(0)
    mod = sg.mod.Module(build(model), context=ctx)
    mod.bind([("data", (batch,) + SHAPE[model])], [("softmax_label", (batch,))])
    mod.init_params(sg.init.Xavier())
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd", optimizer_params=OPT)
    return mod


def sg_rate(model: str, ctx: Any, steps: int, kvstore: str = "device") -> tuple[float, Any]:
    """(samples/s of this process, module) for ``steps`` timed steps after 10 warm-up."""
    per = BATCH[model]
    n = per * (len(ctx) if isinstance(ctx, list) else 1)
    mod, batch = sg_module(model, ctx, n, kvstore), _batch(model, n)
    for _ in range(10):
        mod.forward_backward_update(batch)
    _sync(mod)
    tic = time.perf_counter()
    for _ in range(steps):
        mod.forward_backward_update(batch)
    _sync(mod)
    return n * steps / (time.perf_counter() - tic), mod


def _digest(mod: Any) -> str:
    import hashlib
    h = hashlib.sha256()
    for name, value in sorted(mod.get_params()[0].items()):
        h.update(name.encode() + value.asnumpy().tobytes())
    return h.hexdigest()


def sg_worker(args: argparse.Namespace) -> None:
    """One rank of the multi-process run (environment set by :func:`sg_multiprocess`)."""
    rank = int(os.environ["RANK"])
    rate, mod = sg_rate(args.model, sg.gpu(rank), args.steps, "nccl")
    Path(args.out).write_text(json.dumps({"rate": rate, "digest": _digest(mod)}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sg_multiprocess(model: str, steps: int) -> tuple[float, bool]:
    """(global samples/s, parameters identical on both ranks) of 2 launched processes."""
    port, outs, procs = _free_port(), [], []
    tmp = tempfile.mkdtemp(prefix="sg-mgpu-")
    key = os.urandom(32).hex()  # the job key both ranks prove at the rendezvous
    for rank in (0, 1):
        out = os.path.join(tmp, f"rank{rank}.json")
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "PYTHONPATH": PYTHONPATH,
               "SYMGRAPH_JOB_KEY": key}
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", "--model", model,
                                       "--steps", str(steps), "--out", out], env=env))
        outs.append(out)
    if [p.wait(timeout=400) for p in procs] != [0, 0]:
        raise SystemExit(f"multi-process symgraph run of {model} failed")
    res = [json.loads(Path(o).read_text()) for o in outs]
    rate = min(r["rate"] for r in res) * 2  # the slowest rank sets the pace
    return rate, res[0]["digest"] == res[1]["digest"]


# -- PyTorch -----------------------------------------------------------------------------------
def _torch_loop(model: str, rank: int, world: int, steps: int) -> float:
    import torch.nn.functional as F
    torch = torch_fp32()
    torch.cuda.set_device(rank)
    net = torch_net(model).cuda()
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(net, device_ids=[rank])
    opt = torch.optim.SGD(net.parameters(), lr=OPT["learning_rate"], momentum=OPT["momentum"])
    per = BATCH[model]
    x = torch.randn((per,) + SHAPE[model]).pin_memory()
    y = torch.randint(0, 10, (per,)).pin_memory()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
        loss.backward()
        opt.step()
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    tic = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return per * steps / (time.perf_counter() - tic)


def _ddp_rank(rank: int, model: str, steps: int, port: int, out: str) -> None:
    import torch.distributed as dist
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    rate = _torch_loop(model, rank, 2, steps)
    Path(f"{out}.{rank}").write_text(str(rate))
    dist.destroy_process_group()


def torch_rates(model: str, steps: int) -> tuple[float, float]:
    """(1 GPU eager samples/s, DDP 2 processes global samples/s)."""
    import torch.multiprocessing as mp
    one = _torch_loop(model, 0, 1, steps)
    out = os.path.join(tempfile.mkdtemp(prefix="torch-ddp-"), "rate")
    mp.spawn(_ddp_rank, args=(model, steps, _free_port(), out), nprocs=2, join=True)
    return one, 2 * min(float(Path(f"{out}.{r}").read_text()) for r in (0, 1))


# -- modes -------------------------------------------------------------------------------------
def scaling(args: argparse.Namespace) -> None:
    rows = []
    for model in args.models:
        one, _ = sg_rate(model, sg.gpu(0), args.steps)
        two, _ = sg_rate(model, [sg.gpu(0), sg.gpu(1)], args.steps)
        multi, same = sg_multiprocess(model, args.steps)
        t1 = tddp = float("nan")
        if not args.no_torch:
            try:
                t1, tddp = torch_rates(model, args.steps)
            except ImportError as exc:  # the symgraph figures still stand
                print(f"PyTorch columns left empty: {exc}")
        rows.append((model, BATCH[model], one, two, multi, same, t1, tddp))
    print("\n| model | batch/GPU | symgraph 1 GPU | 2 GPUs 1 proc | x | 2 procs | x | "
          "ranks equal | PyTorch 1 GPU | DDP 2 procs | x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m, b, one, two, multi, same, t1, tddp in rows:
        print(f"| {m} | {b} | {one:,.0f} | {two:,.0f} | {two / one:.2f} | {multi:,.0f} | "
              f"{multi / one:.2f} | {same} | {t1:,.0f} | {tddp:,.0f} | {tddp / t1:.2f} |")


def _profile_run(label: str, mod: Any, batch: Any, steps: int) -> None:
    """Print wall and host ms per step of ``mod`` (and its phases when it times them)."""
    from symgraph.training.parallel.step import PHASES
    for _ in range(10):
        mod.forward_backward_update(batch)
    _sync(mod)
    timed = hasattr(mod, "step_times")
    if timed:
        mod.step_times = {}
    tic = time.perf_counter()
    for _ in range(steps):
        mod.forward_backward_update(batch)
    host = time.perf_counter() - tic
    _sync(mod)
    wall = time.perf_counter() - tic
    n = batch.data[0].shape[0]
    print(f"{label}: wall {wall * 1000 / steps:.3f} ms/step, host {host * 1000 / steps:.3f} "
          f"ms/step, {n * steps / wall:,.0f} samples/s")
    for name in PHASES if timed else ():
        print(f"    {name:10s} {mod.step_times.get(name, 0.0) * 1000 / steps:8.3f} ms/step")


def profile(args: argparse.Namespace) -> None:
    """``--profile``: host milliseconds per step in each phase of the single-process step, for
    2 GPUs in one process, 1 GPU through the same data-parallel path (a rank's path in the
    multi-process run) and the plain 1-GPU Module (no phases: host total only). A host time
    close to the wall time per step means the host, not the GPUs, sets the pace."""
    from symgraph.training.parallel.group import DataParallelModule
    for model in args.models:
        per = BATCH[model]
        _profile_run(f"{model} 1 GPU Module", sg_module(model, sg.gpu(0), per),
                     _batch(model, per), args.steps)
        sg.random.seed(0)
        one = DataParallelModule(build(model), context=[sg.gpu(0)])
        one.bind([("data", (per,) + SHAPE[model])], [("softmax_label", (per,))])
        one.init_params(sg.init.Xavier())
        one.init_optimizer(kvstore="device", optimizer="sgd", optimizer_params=OPT)
        _profile_run(f"{model} 1 GPU data-parallel", one, _batch(model, per), args.steps)
        _profile_run(f"{model} 2 GPUs 1 proc", sg_module(model, [sg.gpu(0), sg.gpu(1)],
                                                         2 * per),
                     _batch(model, 2 * per), args.steps)


def identical(args: argparse.Namespace) -> bool:
    """100 steps on 2 GPUs of one process; parameters compared bitwise across the GPUs."""
    ok = True
    for model in args.models:
        mod = sg_rate(model, [sg.gpu(0), sg.gpu(1)], 90)[1]  # 10 warm-up + 90 = 100 steps
        e0, e1 = mod.executors
        diff = [n for n in e0.arg_dict if n in mod._param_names and
                e0.arg_dict[n].asnumpy().tobytes() != e1.arg_dict[n].asnumpy().tobytes()]
        print(f"{model}: after 100 steps, {len(mod._param_names) - len(diff)}/"
              f"{len(mod._param_names)} parameters bitwise identical on gpu(0) and gpu(1)"
              + (f"; differ: {diff}" if diff else ""))
        ok = ok and not diff
    return ok


def accuracy(args: argparse.Namespace) -> float:
    """3 epochs of the seed CNN: 1 GPU at batch B vs 2 GPUs at global batch B."""
    d = sg.datasets.mnist.load_data(args.data_dir)
    accs = []
    for ctx in (sg.gpu(0), [sg.gpu(0), sg.gpu(1)]):
        sg.random.seed(0)
        train = sg.io.NDArrayIter(d["train_data"], d["train_label"], args.acc_batch,
                                  shuffle=True)
        test = sg.io.NDArrayIter(d["test_data"], d["test_label"], args.acc_batch)
        mod = sg.mod.Module(build("cnn"), context=ctx)
        mod.fit(train, eval_data=test, optimizer="sgd", optimizer_params=OPT,
                initializer=sg.init.Xavier(), num_epoch=args.epochs, kvstore="device",
                progress_bar=False)
        accs.append(mod.history[-1]["val-accuracy"] * 100)
        print(f"seed CNN, {args.epochs} epochs, global batch {args.acc_batch} on {ctx}: "
              f"test accuracy {accs[-1]:.2f}%")
    gap = abs(accs[0] - accs[1])
    print(f"accuracy gap 1 GPU vs 2 GPUs: {gap:.2f} points (target <= 0.2)")
    return gap


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("all", "scaling", "identical", "accuracy"), default="all")
    p.add_argument("--models", nargs="+", choices=tuple(BATCH), default=list(BATCH))
    p.add_argument("--steps", type=int, default=100, help="timed steps (default: 100)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--acc-batch", type=int, default=64, help="global batch of --mode accuracy")
    p.add_argument("--data-dir", default=None, help="MNIST folder (default: $SYMGRAPH_DATA)")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch columns")
    p.add_argument("--profile", action="store_true",
                   help="host time per step in each phase of the single-process step, then "
                        "exit")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", default="cnn", help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return sg_worker(args)
    found = sg.context.num_gpus()
    if found < 2:
        raise SystemExit(f"multi_gpu.py needs at least 2 GPUs, found {found}")
    if args.profile:
        return profile(args)
    if args.mode in ("all", "scaling"):
        scaling(args)
    if args.mode in ("all", "identical") and not identical(args):
        raise SystemExit("replicas differ")
    if args.mode in ("all", "accuracy"):
        accuracy(args)


if __name__ == "__main__":
    main()
