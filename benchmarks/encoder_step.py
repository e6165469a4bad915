"""A BERT-style Transformer encoder's training step (forward + backward), written the way an
MXNet user writes one with ``sg.sym``, beside the same network in PyTorch (eager, one CUDA graph,
``torch.compile``), float32 and bfloat16 (``sg.amp`` / autocast), in one run.

    PYTHONPATH=. python3 benchmarks/encoder_step.py [--layers 4] [--batch 32] [--seq 128]
        [--model 768] [--heads 12] [--steps 30] [--no-compile] [--quick] [--count]

Each layer (post-LayerNorm, as BERT): Q, K and V by ``FullyConnected(flatten=False)``, heads
split by ``reshape``/``transpose``, ``batch_dot(q, k, transpose_b=True)`` scaled, ``softmax``,
``batch_dot`` with V, heads merged, an output projection, residual + ``LayerNorm``, then a
``4d`` feed-forward with ``LeakyReLU(act_type='gelu')`` (erf GELU), residual + ``LayerNorm``. The
loss is the mean square of the last layer's output (both sides), so the step is the encoder
alone. Medians by CUDA events on the GPU (TF32 off on both sides); ``--quick``: tiny sizes on
the CPU (a test runs it); ``--count``: the CUDA program's launches by op, lowered on the CPU
(no GPU), without and with ``passes/fold_heads``.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgraph as sg  # noqa: E402
from benchmarks.common import (bind_random, cuda_median_ms, host_median_ms,  # noqa: E402
                               torch_cuda_graph, torch_forward_backward, torch_fp32)

S = sg.sym


@dataclass
class Sizes:
    layers: int = 4
    batch: int = 32
    seq: int = 128
    model: int = 768
    heads: int = 12


QUICK = Sizes(layers=2, batch=2, seq=8, model=16, heads=2)


def _heads(x: Any, s: Sizes) -> Any:
    """(B, T, D) -> (B*H, T, D/H)."""
    x = S.reshape(x, shape=(0, 0, s.heads, -1))
    return S.reshape(S.transpose(x, axes=(0, 2, 1, 3)), shape=(-3, 0, 0))


def _merge(x: Any, s: Sizes) -> Any:
    """(B*H, T, D/H) -> (B, T, D)."""
    x = S.reshape(x, shape=(-4, -1, s.heads, 0, 0))
    return S.reshape(S.transpose(x, axes=(0, 2, 1, 3)), shape=(0, 0, -3))


def encoder_symbol(s: Sizes) -> Any:
    """The encoder and its loss, as a symbol reading ``data`` (B, T, D)."""
    x = S.Variable("data")
    scale = 1.0 / math.sqrt(s.model // s.heads)
    for i in range(s.layers):
        p = f"l{i}_"
        q, k, v = (_heads(S.FullyConnected(x, num_hidden=s.model, flatten=False,
                                           name=p + n), s) for n in "qkv")
        att = S.softmax(S.batch_dot(q, k, transpose_b=True) * scale, axis=-1)
        ctx = _merge(S.batch_dot(att, v), s)
        out = S.FullyConnected(ctx, num_hidden=s.model, flatten=False, name=p + "o")
        x = S.LayerNorm(x + out, axis=-1, name=p + "ln1")
        h = S.LeakyReLU(S.FullyConnected(x, num_hidden=4 * s.model, flatten=False,
                                         name=p + "ff1"), act_type="gelu")
        h = S.FullyConnected(h, num_hidden=s.model, flatten=False, name=p + "ff2")
        x = S.LayerNorm(x + h, axis=-1, name=p + "ln2")
    return S.MakeLoss(S.mean(S.square(x)), name="loss")


def symgraph_step(s: Sizes, bf16: bool, ctx: sg.Context) -> tuple[Callable[[], None], Any]:
    """forward(is_train) + backward of the bound encoder (no gradient for the data), and
    the executor."""
    sym = encoder_symbol(s)
    if bf16:
        sym = sg.amp.convert_symbol(sym, target_dtype="bfloat16")
    exe = bind_random(sym, ctx, (s.batch, s.seq, s.model))

    def step() -> None:
        exe.forward(is_train=True)
        exe.backward()
    return step, exe


def profile(exe: Any, top: int) -> None:
    """GPU ms of the training program's steps (eager, each synchronised), summed by op."""
    from symgraph.core.registry import RunCtx
    prog = exe._train.program
    times = prog.time_steps(exe._env, 0, len(exe._train.schedule.steps), RunCtx(is_train=True))
    by_op: dict[str, list] = {}
    for _, op, _, ms in times:
        by_op.setdefault(op, [0.0, 0])
        by_op[op][0] += ms
        by_op[op][1] += 1
    print(f"\n  eager total {sum(t[3] for t in times):.3f} ms over {len(times)} steps; by op:")
    for op, (ms, n) in sorted(by_op.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"    {ms:8.3f} ms  {n:4d} x {op}")
    print("  costliest steps:")
    for k, op, name, ms in sorted(times, key=lambda t: -t[3])[:top]:
        print(f"    {ms:8.3f} ms  step {k:3d} {op} {name}")


def count_steps(s: Sizes, bf16: bool, skip: tuple = ()) -> dict[str, int]:
    """Launches (kernels, library calls, copies) of the CUDA training program by op, and by
    action kind under ``"[Kind]"`` keys, lowered on the CPU as ``ir_fingerprint`` does;
    ``skip``: forward passes left out."""
    from benchmarks.ir_fingerprint import cuda_lowering
    from symgraph.runtime.cuda.actions import flat_actions
    sym = encoder_symbol(s)
    if bf16:
        sym = sg.amp.convert_symbol(sym, target_dtype="bfloat16")
    reqs = {n: ("null" if n == "data" else "write") for n in sym.list_arguments()}
    with cuda_lowering(skip=skip):
        stage = sym.simple_bind(sg.cpu(), grad_req=reqs, data=(s.batch, s.seq, s.model))._train
    counts: dict[str, int] = {}
    for step, acts in zip(stage.schedule.steps, stage.program.actions):
        for act in flat_actions(acts):
            for key in (step.node.op, f"[{type(act).__name__}]"):
                counts[key] = counts.get(key, 0) + 1
    return counts


def print_counts(s: Sizes) -> None:
    """Launches by op without and with the head folding (``passes/fold_heads``)."""
    for bf16 in (False, True):
        before, after = count_steps(s, bf16, ("fold_heads",)), count_steps(s, bf16)
        total = [sum(v for k, v in c.items() if k.startswith("[")) for c in (before, after)]
        print(f"\n{'bf16' if bf16 else 'fp32'}: launches of the CUDA training step, by op and "
              f"[by kind] (without fold_heads -> with): {total[0]} -> {total[1]}")
        for op in sorted(set(before) | set(after), key=lambda o: (-before.get(o, 0), o)):
            print(f"    {before.get(op, 0):4d} -> {after.get(op, 0):4d}  {op}")


def torch_encoder(s: Sizes) -> Any:
    """The same encoder in PyTorch (erf GELU, post-LayerNorm, the same head split)."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(s.model, s.model) for _ in range(4))
            self.ff1, self.ff2 = nn.Linear(s.model, 4 * s.model), nn.Linear(4 * s.model, s.model)
            self.ln1, self.ln2 = nn.LayerNorm(s.model), nn.LayerNorm(s.model)

        def split(self, x: Any) -> Any:
            b, t, _ = x.shape
            return x.reshape(b, t, s.heads, -1).transpose(1, 2)

        def forward(self, x: Any) -> Any:
            b, t, d = x.shape
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // s.heads), dim=-1)
            ctx = (att @ v).transpose(1, 2).reshape(b, t, d)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))
    return nn.Sequential(*(Layer() for _ in range(s.layers)))


def torch_steps(s: Sizes, bf16: bool, compile_too: bool, device: str
                ) -> dict[str, Optional[Callable[[], None]]]:
    """``{"eager", "graph", "compile"}`` forward + backward steps (None where not run)."""
    torch = torch_fp32()
    x = torch.randn(s.batch, s.seq, s.model, device=device)
    step, body, compiled = torch_forward_backward(torch_encoder(s).to(device), x,
                                                  lambda out: out.square().mean(), bf16,
                                                  compile_too)
    return {"eager": step, "compile": compiled,
            "graph": torch_cuda_graph(step, body) if device == "cuda" else None}


def median(fn: Optional[Callable[[], None]], gpu: bool, steps: int,
           sync: Optional[Callable[[], None]] = None) -> float:
    if fn is None:
        return float("nan")
    if gpu:
        return cuda_median_ms(fn, steps, 5, sync)
    return host_median_ms(fn, steps, 1, sync)


def main(argv: Optional[list] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Sizes()).items():
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--quick", action="store_true", help="tiny sizes on the CPU")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="GPU: after each row, the N costliest ops of symgraph's step")
    p.add_argument("--count", action="store_true",
                   help="print the CUDA step's launches by op (lowered on the CPU) and stop")
    a = p.parse_args(argv)
    s = QUICK if a.quick else Sizes(a.layers, a.batch, a.seq, a.model, a.heads)
    if a.count:
        return print_counts(s)
    gpu = not a.quick and sg.context.num_gpus() > 0
    ctx, device = (sg.gpu(0), "cuda") if gpu else (sg.cpu(), "cpu")
    steps = 3 if a.quick else a.steps
    print(f"encoder: {s.layers} layers, d{s.model}, {s.heads} heads, batch {s.batch} x "
          f"{s.seq} tokens, on {ctx}; median ms of {steps} forward + backward steps\n")
    print("| dtype | symgraph | PyTorch eager | PyTorch CUDA graph | torch.compile "
          "| symgraph / PyTorch best |")
    print("|---|---|---|---|---|---|")
    for bf16 in (False, True):
        if bf16 and not gpu:
            continue  # bfloat16 GEMMs on the CPU say nothing about the GPU rows
        sync = (lambda: sg.nd.waitall()) if gpu else sg.nd.waitall
        step, exe = symgraph_step(s, bf16, ctx)
        ours = median(step, gpu, steps, sync)
        theirs = {k: float("nan") for k in ("eager", "graph", "compile")}
        if not a.no_torch:
            for k, fn in torch_steps(s, bf16, not a.no_compile, device).items():
                theirs[k] = median(fn, gpu, steps)
        best = min((v for v in theirs.values() if not math.isnan(v)), default=float("nan"))
        print(f"| {'bf16' if bf16 else 'fp32'} | {ours:.2f} | {theirs['eager']:.2f} | "
              f"{theirs['graph']:.2f} | {theirs['compile']:.2f} | {ours / best:.2f} |",
              flush=True)
        if a.profile and gpu:
            profile(exe, a.profile)


if __name__ == "__main__":
    main()
