"""Mixed-precision training steps on the GPU, beside PyTorch in the same process.

    PYTHONPATH=. python3 benchmarks/amp_step.py [--steps 50] [--only mlp|resnet] [--profile]

* MLP 1024-4096-4096-4096-10, batch 1024: symgraph float32 vs bfloat16 training step
  (forward + backward, one ``train_step``: one CUDA graph replay), and the GEMM throughput in
  TFLOP/s: the step's GEMM FLOPs over the whole step time, over the GEMM steps' own time
  (``time_steps``, eager, each step synchronised), over the GEMM steps each launched 20
  times back to back (the kernels' throughput without the launch-and-wait latency), and over
  the cuBLAS calls alone so launched (without the steps' bias/activation epilogue kernels).
* ResNet-20-style CIFAR network (3 stages of 3 basic blocks with BatchNorm, 16/32/64 channels,
  batch 128, 32x32 inputs): symgraph float32 vs bfloat16.
* PyTorch, same models: float32 and ``torch.autocast(bfloat16)``, eager and with the whole
  forward + backward captured in one CUDA graph. TF32 is off everywhere (symgraph's float32 is
  full precision unless SYMGRAPH_TF32=1); cudnn.benchmark on for PyTorch.

symgraph's bfloat16 step is AMP (``sg.amp.convert_symbol``: narrow ops in bfloat16, softmax,
norms and losses in float32, float32 parameters cast in the graph) when ``sg.amp`` exists, else
the whole graph bound in bfloat16 (printed as "pure bf16"). Times are medians of ``--steps``
steps after warm-up, by CUDA events on the legacy stream (which orders after symgraph's stream).
``--profile``: instead, the eager per-step GPU times of the chosen models' fp32 and bf16 training
programs, summed by op (where the step time goes).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgraph as sg  # noqa: E402

from benchmarks.common import (NO_INPUT_GRADS, cuda_median_ms, torch_cuda_graph,  # noqa: E402
                               torch_fp32, torch_resnet20)

S = sg.sym
MLP_SIZES = (1024, 4096, 4096, 4096, 10)
MLP_BATCH, RESNET_BATCH = 1024, 128


# -- models --------------------------------------------------------------------------------------
def mlp_symbol() -> Any:
    h = S.var("data")
    for i, n in enumerate(MLP_SIZES[1:]):
        h = S.FullyConnected(h, num_hidden=n, name=f"fc{i}")
        if i < len(MLP_SIZES) - 2:
            h = S.Activation(h, act_type="relu")
    return S.SoftmaxOutput(h, name="softmax")


def mlp_gemm_flops(batch: int) -> float:
    """Forward, weight-gradient and data-gradient GEMMs (no data gradient of the input)."""
    pairs = list(zip(MLP_SIZES[:-1], MLP_SIZES[1:]))
    return sum(2.0 * batch * i * o * (2 if k == 0 else 3) for k, (i, o) in enumerate(pairs))


def _conv_bn(x: Any, name: str, filters: int, stride: int, kernel: int = 3) -> Any:
    pad = kernel // 2
    x = S.Convolution(x, num_filter=filters, kernel=(kernel, kernel), stride=(stride, stride),
                      pad=(pad, pad), no_bias=True, name=f"{name}_conv")
    return S.BatchNorm(x, name=f"{name}_bn")


def resnet_symbol() -> Any:
    """ResNet-20 for CIFAR: conv3x3(16), 3 stages x 3 basic blocks (16/32/64 channels, stride
    2 and a 1x1 projection at each stage change), global average pool, dense 10."""
    x = S.Activation(_conv_bn(S.var("data"), "stem", 16, 1), act_type="relu")
    channels = 16
    for stage, filters in enumerate((16, 32, 64)):
        for block in range(3):
            stride = 2 if stage > 0 and block == 0 else 1
            name = f"s{stage}b{block}"
            y = S.Activation(_conv_bn(x, f"{name}a", filters, stride), act_type="relu")
            y = _conv_bn(y, f"{name}b", filters, 1)
            short = x if stride == 1 and filters == channels else \
                _conv_bn(x, f"{name}p", filters, stride, kernel=1)
            x = S.Activation(y + short, act_type="relu")
            channels = filters
    x = S.Pooling(x, global_pool=True, pool_type="avg", kernel=(8, 8))
    x = S.FullyConnected(S.Flatten(x), num_hidden=10, name="fc")
    return S.SoftmaxOutput(x, name="softmax")


# -- symgraph ------------------------------------------------------------------------------------
def narrow_symbol(sym: Any) -> tuple[Any, str]:
    """(symbol, mode) of the bfloat16 variant: sg.amp's conversion when it exists."""
    amp = getattr(sg, "amp", None)
    if amp is not None and hasattr(amp, "convert_symbol"):
        return amp.convert_symbol(sym, target_dtype="bfloat16"), "AMP bf16"
    return sym, "pure bf16"


def bind(sym: Any, data_shape: tuple, bf16_everywhere: bool) -> Any:
    """A training executor on gpu(0) with random parameters (no gradient for data/label)."""
    import ml_dtypes
    reqs = {n: NO_INPUT_GRADS.get(n, "write") for n in sym.list_arguments()}
    types = {}
    if bf16_everywhere:
        names = sym.list_arguments() + sym.list_auxiliary_states()
        types = {n: np.dtype(ml_dtypes.bfloat16) for n in names}
    exe = sym.simple_bind(sg.gpu(0), grad_req=reqs, type_dict=types, data=data_shape)
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.normal(size=arr.shape) * 0.05
    exe.arg_dict["data"][:] = rng.normal(size=data_shape)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 10, size=data_shape[0])
    for name, arr in exe.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    return exe


def gemm_ms(exe: Any, repeat: int = 1, calls_only: bool = False) -> float:
    """Milliseconds of the training program's steps that run a GEMM (eager, one step at a
    time; each step launched ``repeat`` times between its events: the mean). ``calls_only``:
    the cuBLAS calls alone, without the steps' epilogue kernels (bias, activation)."""
    from symgraph.runtime.cuda.actions import Gemm, flat_actions
    from symgraph.core.registry import RunCtx
    prog, stage = exe._train.program, exe._train
    exe.forward(is_train=True)  # leaves the executor's environment bound (as gpu_step.profile)
    exe.backward()
    times = prog.time_steps(exe._env, 0, len(stage.schedule.steps), RunCtx(is_train=True),
                            repeat, Gemm if calls_only else None)
    return sum(ms for k, _, _, ms in times
               if any(isinstance(a, Gemm) for a in flat_actions(prog.actions[k])))


def profile(name: str, sym: Any, data_shape: tuple, top: int = 12) -> None:
    """Eager per-step times of the fp32 and bf16 training programs, summed by op."""
    from symgraph.core.registry import RunCtx
    nsym, mode = narrow_symbol(sym)
    for label, s, everywhere in (("fp32", sym, False), (mode, nsym, mode == "pure bf16")):
        exe = bind(s, data_shape, everywhere)
        exe.forward(is_train=True)
        exe.backward()
        prog, stage = exe._train.program, exe._train
        times = prog.time_steps(exe._env, 0, len(stage.schedule.steps), RunCtx(is_train=True))
        by_op: dict = {}
        for _, op, _, ms in times:
            n, t = by_op.get(op, (0, 0.0))
            by_op[op] = (n + 1, t + ms)
        print(f"\n{name} {label}: {sum(t[3] for t in times):.3f} ms over {len(times)} steps "
              f"(eager, each synchronised)")
        for op, (n, t) in sorted(by_op.items(), key=lambda kv: -kv[1][1])[:top]:
            print(f"  {t:7.3f} ms  {n:3d} x {op}")


def symgraph_rows(name: str, sym: Any, data_shape: tuple, steps: int,
                  flops: float = 0.0) -> list[tuple]:
    rows = []
    nsym, mode = narrow_symbol(sym)
    for label, s, everywhere in (("fp32", sym, False), (mode, nsym, mode == "pure bf16")):
        exe = bind(s, data_shape, everywhere)
        ms = cuda_median_ms(lambda: exe.train_step(), steps)
        extra = ""
        if flops:
            g, g20, c20 = gemm_ms(exe), gemm_ms(exe, 20), gemm_ms(exe, 20, True)
            extra = (f"GEMM {flops / ms / 1e9:.0f} TFLOP/s over the step, "
                     f"{flops / g / 1e9:.0f} TFLOP/s over GEMM steps ({g:.3f} ms eager), "
                     f"{flops / g20 / 1e9:.0f} TFLOP/s over GEMM steps launched 20 times "
                     f"back to back ({g20:.3f} ms), {flops / c20 / 1e9:.0f} TFLOP/s over the "
                     f"cuBLAS calls alone so launched ({c20:.3f} ms)")
        rows.append((name, f"symgraph {label}", ms, extra))
    return rows


# -- PyTorch -------------------------------------------------------------------------------------
def torch_mlp() -> Any:
    from torch import nn
    layers: list = []
    for k, (i, o) in enumerate(zip(MLP_SIZES[:-1], MLP_SIZES[1:])):
        layers.append(nn.Linear(i, o))
        if k < len(MLP_SIZES) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).cuda()


def torch_rows(name: str, model: Any, x_shape: tuple, steps: int,
               flops: float = 0.0) -> list[tuple]:
    import torch
    import torch.nn.functional as F
    x = torch.randn(*x_shape, device="cuda")
    y = torch.randint(0, 10, (x_shape[0],), device="cuda")
    rows = []
    for label, amp in (("fp32", False), ("autocast bf16", True)):
        def body() -> None:
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                loss = F.cross_entropy(model(x), y, reduction="sum")
            loss.backward()

        def step() -> None:
            model.zero_grad(set_to_none=True)
            body()
        eager = cuda_median_ms(step, steps)
        replay = torch_cuda_graph(step, body, lambda: model.zero_grad(set_to_none=True))
        graphed = cuda_median_ms(replay, steps)
        for how, ms in (("eager", eager), ("CUDA graph", graphed)):
            extra = f"GEMM {flops / ms / 1e9:.0f} TFLOP/s over the step" if flops else ""
            rows.append((name, f"PyTorch {label} {how}", ms, extra))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--only", choices=("mlp", "resnet"), default=None)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.profile:
        if args.only in (None, "mlp"):
            profile("MLP b1024", mlp_symbol(), (MLP_BATCH, MLP_SIZES[0]))
        if args.only in (None, "resnet"):
            profile("ResNet-20 b128", resnet_symbol(), (RESNET_BATCH, 3, 32, 32))
        return
    torch = torch_fp32()
    print(f"device: {torch.cuda.get_device_name()}")
    rows: list[tuple] = []
    if args.only in (None, "mlp"):
        flops = mlp_gemm_flops(MLP_BATCH)
        rows += symgraph_rows("MLP b1024", mlp_symbol(), (MLP_BATCH, MLP_SIZES[0]), args.steps,
                              flops)
        rows += torch_rows("MLP b1024", torch_mlp(), (MLP_BATCH, MLP_SIZES[0]), args.steps,
                           flops)
    if args.only in (None, "resnet"):
        shape = (RESNET_BATCH, 3, 32, 32)
        rows += symgraph_rows("ResNet-20 b128", resnet_symbol(), shape, args.steps)
        rows += torch_rows("ResNet-20 b128", torch_resnet20(projection_bn=True).cuda(), shape,
                           args.steps)
    print("\n| model | variant | ms/step | notes |\n|---|---|---|---|")
    for model, variant, ms, extra in rows:
        print(f"| {model} | {variant} | {ms:.3f} | {extra} |")


if __name__ == "__main__":
    main()
