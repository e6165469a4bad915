"""Gluon training steps of a model-zoo ResNet-50 and an LSTM language model, beside the same
networks trained by ``Module`` and by PyTorch (eager, CUDA graph, ``torch.compile``), in one
process and one table.

    PYTHONPATH=. python3 benchmarks/gluon_models.py [--ctx gpu|cpu] [--quick] [--repeats 30]
        [--only resnet|lstm] [--no-bf16] [--no-compile] [--no-torch]

* ``resnet50_v1`` from ``gluon.model_zoo.vision``, batch 64, 224x224, 1000 classes: the Gluon
  loop body (``hybridize(static_alloc, static_shape)``, ``autograd.record()`` around the net
  and ``SoftmaxCrossEntropyLoss``, ``backward``, ``Trainer.step``; SGD, momentum 0.9), in
  float32 and in bfloat16 (``net.cast('bfloat16')``, bfloat16 data, ``multi_precision=True``:
  float32 master weights, docs/amp.md). ``Module``: the hybridized block's exported symbol with
  a ``SoftmaxOutput`` head, its exported parameters, ``forward_backward_update``; bfloat16 by
  ``Module.use_amp('bfloat16')`` (the graph converted by AMP's lists).
* A language model: ``Embedding(10000, 650)`` -> 2-layer ``gluon.rnn.LSTM(650)`` ->
  ``Dense(10000)``, 35 steps of batch 32 (TNC), trained the same ways, float32.
* "host steps": on the GPU, the steps of symgraph's compiled imperative programs that run on
  the host (``Host``/``Callback`` actions: an op without a device lowering, allowed only by
  ``SYMGRAPH_ALLOW_HOST=1``, or a custom op); it should be 0. "n/a" on the CPU.

``--quick``: tiny sizes (batch 2, 32x32 images, 10 classes; a 50-word, 16-wide LM over 5
steps of 4) and few repeats, for a check on the CPU. Times are medians of ``--repeats`` steps
after ``--warm`` steps, by CUDA events on the GPU (PyTorch's legacy stream, which orders after
symgraph's) and ``perf_counter`` on the CPU. TF32 is off in PyTorch (symgraph's float32 is full
precision); cudnn.benchmark on. ``torch.compile`` takes a minute or more per model: skip it
with ``--no-compile``.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as mx  # noqa: E402  (MXNet users' spelling)
from symgraph import gluon, nd  # noqa: E402
from symgraph.gluon.model_zoo import vision  # noqa: E402

from benchmarks.common import cuda_median_ms, host_median_ms, torch_fp32  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    """The workloads' sizes."""

    batch: int = 64
    image: int = 224
    classes: int = 1000
    vocab: int = 10000
    hidden: int = 650
    layers: int = 2
    seq: int = 35
    lm_batch: int = 32


QUICK = Sizes(batch=2, image=32, classes=10, vocab=50, hidden=16, seq=5, lm_batch=4)
Step = Callable[[], None]


def _sync(ctx: mx.Context) -> None:
    nd.waitall()  # computes pending arrays (and synchronises every device symgraph used)


def median_ms(fn: Optional[Step], ctx: mx.Context, a: argparse.Namespace) -> float:
    """Median ms of ``fn`` (nan when there is none): CUDA events on the GPU, else wall time."""
    if fn is None:
        return float("nan")
    timer = cuda_median_ms if ctx.device_type == "gpu" and _has_torch() else host_median_ms
    return timer(fn, a.repeats, a.warm, lambda: _sync(ctx))


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def host_steps(seen: set) -> Optional[int]:
    """Host-run actions (``Host``, ``Callback``) that a training run executes (each
    Switch's train branch, each Choice's library branch) in the GPU programs symgraph's
    imperative engine has compiled, but those of the keys ``seen``; None when none is a GPU
    program."""
    from symgraph.frontend.imperative.engine import ENGINE
    found, count = False, 0
    for key in [k for k in ENGINE.programs.keys() if k not in seen]:
        prog = ENGINE.programs.get(key)
        actions = getattr(getattr(getattr(prog, "stage", None), "program", None), "actions",
                          None)
        if actions is None:
            continue
        from symgraph.runtime.cuda.actions import Callback, Host, flat_actions
        found = True
        count += sum(isinstance(act, (Host, Callback))
                     for acts in actions for act in flat_actions(acts, "primary"))
    return count if found else None


def gluon_step(net: gluon.HybridBlock, x: nd.NDArray, y: nd.NDArray, bf16: bool) -> Step:
    """The Gluon loop body on ``net`` (initialised on ``x``'s context), run once."""
    if bf16:
        net.cast("bfloat16")
        x = x.astype("bfloat16")
        x.wait_to_read()  # else the first step's program also holds this cast: one more compile
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {
        "learning_rate": 0.01, "momentum": 0.9, "multi_precision": bf16})
    batch = x.shape[0] if x.ndim == 4 else x.shape[1]

    def step() -> None:
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
    step()
    return step


def module_step(net: gluon.HybridBlock, x: nd.NDArray, y: nd.NDArray, bf16: bool,
                workdir: str) -> Step:
    """``Module`` training ``net``'s exported symbol (hybridized and run once) and
    parameters, with a SoftmaxOutput head over the last axis (labels of ``y``'s shape)."""
    net.hybridize()
    net(x)
    prefix = f"{workdir}/{net.name}"
    net.export(prefix, 0)
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    head = mx.sym.SoftmaxOutput(sym, name="softmax", preserve_shape=True)
    mod = mx.mod.Module(head, context=x.context)
    if bf16:
        mod.use_amp("bfloat16")
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)])
    mod.init_params(arg_params=args, aux_params=auxs, allow_missing=False)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01,
                                                          "momentum": 0.9})
    batch = mx.io.DataBatch([x], [y])
    return lambda: mod.forward_backward_update(batch)


class LanguageModel(gluon.HybridBlock):
    """Embedding -> stacked ``gluon.rnn.LSTM`` (TNC) -> Dense over the vocabulary, per step."""

    def __init__(self, vocab: int, hidden: int, layers: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = gluon.nn.Embedding(vocab, hidden)
            self.rnn = gluon.rnn.LSTM(hidden, num_layers=layers, input_size=hidden)
            self.out = gluon.nn.Dense(vocab, flatten=False, in_units=hidden)

    def hybrid_forward(self, F: Any, tokens: Any) -> Any:
        return self.out(self.rnn(self.embed(tokens)))


@dataclass
class Workload:
    """One model: a fresh symgraph net, its batch, and its PyTorch twin."""

    name: str
    make_net: Callable[[], gluon.HybridBlock]
    x: np.ndarray
    y: np.ndarray
    make_torch: Callable[[], Any]
    precisions: tuple


def workloads(s: Sizes, a: argparse.Namespace) -> list[Workload]:
    from benchmarks import torch_models as tm
    rng = np.random.default_rng(0)
    out = []
    if a.only in (None, "resnet"):
        out.append(Workload(
            f"resnet50_v1 b{s.batch} {s.image}px",
            lambda: vision.resnet50_v1(classes=s.classes),
            rng.random((s.batch, 3, s.image, s.image), dtype=np.float32),
            rng.integers(0, s.classes, s.batch).astype(np.float32),
            lambda: tm.torch_resnet50_v1(s.classes),
            ("float32",) if a.no_bf16 else ("float32", "bfloat16")))
    if a.only in (None, "lstm"):
        out.append(Workload(
            f"LSTM LM {s.layers}x{s.hidden} T{s.seq} b{s.lm_batch} V{s.vocab}",
            lambda: LanguageModel(s.vocab, s.hidden, s.layers),
            rng.integers(0, s.vocab, (s.seq, s.lm_batch)).astype(np.float32),
            rng.integers(0, s.vocab, (s.seq, s.lm_batch)).astype(np.float32),
            lambda: tm.torch_lstm_lm(s.vocab, s.hidden, s.layers), ("float32",)))
    return out


def _fresh(w: Workload, ctx: mx.Context) -> gluon.HybridBlock:
    net = w.make_net()
    net.initialize(mx.init.Xavier(magnitude=2.0), ctx=ctx)
    return net


def symgraph_times(w: Workload, bf16: bool, ctx: mx.Context, a: argparse.Namespace,
                   workdir: str) -> dict:
    """Gluon and Module medians, the host steps of the Gluon programs and the programs
    compiled while the Gluon step was timed."""
    x, y = nd.array(w.x, ctx), nd.array(w.y, ctx)
    seen = set(_engine_keys())
    step = gluon_step(_fresh(w, ctx), x, y, bf16)
    _sync(ctx)
    hosts = host_steps(seen)
    before = mx.imperative.compile_count()
    gluon_ms = median_ms(step, ctx, a)
    compiles = mx.imperative.compile_count() - before
    module_ms = median_ms(module_step(_fresh(w, ctx), x, y, bf16, workdir), ctx, a)
    return {"gluon": gluon_ms, "module": module_ms, "hosts": hosts, "compiles": compiles}


def _engine_keys() -> list:
    from symgraph.frontend.imperative.engine import ENGINE
    return list(ENGINE.programs.keys())


def torch_times(w: Workload, bf16: bool, ctx: mx.Context, a: argparse.Namespace) -> dict:
    """PyTorch eager / CUDA graph / torch.compile medians (nan where not run)."""
    if a.no_torch:
        return {}
    try:
        torch = torch_fp32()
    except ImportError:
        return {}
    from benchmarks.torch_models import torch_steppers
    dev = "cuda" if ctx.device_type == "gpu" else "cpu"
    long = w.x.ndim == 2  # token ids
    x = torch.tensor(w.x.astype(np.int64) if long else w.x, device=dev)
    y = torch.tensor(w.y.astype(np.int64), device=dev)
    steps = torch_steppers(w.make_torch().to(dev), x, y, bf16, not a.no_compile)
    return {k: median_ms(fn, ctx, a) for k, fn in steps.items()}


def _ms(v: Optional[float]) -> str:
    return "-" if v is None or v != v else f"{v:.2f}"


def row(w: Workload, dtype: str, ctx: mx.Context, a: argparse.Namespace, workdir: str) -> str:
    """One table row: the workload in ``dtype``, every column."""
    bf16 = dtype == "bfloat16"
    sg_t = symgraph_times(w, bf16, ctx, a, workdir)
    th = torch_times(w, bf16, ctx, a)
    g, m, eager = sg_t["gluon"], sg_t["module"], th.get("eager")
    hosts = "n/a" if sg_t["hosts"] is None else str(sg_t["hosts"])
    return (f"| {w.name} | {dtype} | {_ms(g)} | {_ms(m)} | {g / m:.2f}x | {_ms(eager)} | "
            f"{_ms(th.get('graph'))} | {_ms(th.get('compile'))} | "
            f"{'-' if eager is None else f'{eager / g:.2f}x'} | {hosts} | {sg_t['compiles']} |")


def main(argv: Optional[list] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ctx", choices=("gpu", "cpu"), default=None)
    p.add_argument("--quick", action="store_true", help="tiny sizes, 3 repeats")
    p.add_argument("--repeats", type=int, default=None, help="timed steps (default 20)")
    p.add_argument("--warm", type=int, default=3)
    p.add_argument("--only", choices=("resnet", "lstm"), default=None)
    p.add_argument("--no-bf16", action="store_true", help="ResNet-50 in float32 only")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--no-torch", action="store_true", help="symgraph's columns only")
    a = p.parse_args(argv)
    a.repeats = a.repeats or (3 if a.quick else 20)
    a.warm = 1 if a.quick else a.warm
    name = a.ctx or ("gpu" if mx.context.num_gpus() > 0 else "cpu")
    ctx = mx.gpu(0) if name == "gpu" else mx.cpu()
    torch = "not installed" if not _has_torch() else torch_fp32().__version__
    print(f"context: {ctx}; PyTorch: {'not run' if a.no_torch else torch}; "
          f"median of {a.repeats} steps after {a.warm}")
    print("\n| workload | dtype | Gluon ms/step | Module ms/step | Gluon/Module | PyTorch eager "
          "| PyTorch CUDA graph | torch.compile | eager/Gluon | host steps | compiles after step 1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for w in workloads(QUICK if a.quick else Sizes(), a):
            for dtype in w.precisions:
                print(row(w, dtype, ctx, a, workdir), flush=True)


if __name__ == "__main__":
    main()
