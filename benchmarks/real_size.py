"""Training steps at real size beside PyTorch's best, in one run: the seed CNN (batch 64 and
1024), ResNet-50 v1 (224 px, batch 64) and a BERT-style encoder (``encoder_step``), each in
float32 and bfloat16 (``sg.amp`` / autocast), with device memory.

    PYTHONPATH=. python3 benchmarks/real_size.py [--rows cnn64 cnn1024 resnet50 encoder]
        [--dtypes fp32 bf16] [--steps 30] [--no-compile] [--quick]

A step is forward + backward (no optimizer): symgraph's ``train_step`` (one CUDA graph per
step); PyTorch eager, the same step captured in one CUDA graph, and ``torch.compile`` of the
model, TF32 off on both sides, cudnn.benchmark on. Losses: the classifiers' summed cross
entropy (what ``SoftmaxOutput`` differentiates), the encoder's mean square. "best" is the
fastest PyTorch column; the ratio is symgraph / best. Memory: symgraph's device memory taken by
binding and stepping (free memory before minus after, MiB), PyTorch's peak reserved by the
eager step. PyTorch's convolution networks run channels-last under bf16 (its fastest
layout there). Medians by CUDA events. ``--quick``: tiny sizes on the CPU, symgraph only (a test
runs it).
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
from benchmarks import encoder_step  # noqa: E402
from benchmarks.common import (bind_random, cuda_median_ms, host_median_ms,  # noqa: E402
                               torch_cuda_graph, torch_forward_backward, torch_fp32,
                               torch_seed_cnn)


@dataclass
class Row:
    name: str
    make_sym: Callable[[], Any]
    data: tuple  # symgraph's and PyTorch's input shape
    classes: int  # 0: the encoder (no labels, mean-square loss)
    make_torch: Callable[[], Any]


def _seed_cnn() -> Any:
    from symgraph.interop.models.simple_cnn import build
    return build()


def _resnet50() -> Any:
    from symgraph.gluon.model_zoo import vision
    return sg.sym.SoftmaxOutput(vision.resnet50_v1(classes=1000)(sg.sym.var("data")),
                                name="softmax")


def _torch_resnet50() -> Any:
    from benchmarks.torch_models import torch_resnet50_v1
    return torch_resnet50_v1(1000)


def rows(quick: bool) -> dict[str, Row]:
    s = encoder_step.QUICK if quick else encoder_step.Sizes()
    small, big, image = (4, 8, 32) if quick else (64, 1024, 224)
    return {
        "cnn64": Row(f"seed CNN b{small}", _seed_cnn, (small, 1, 28, 28), 10, torch_seed_cnn),
        "cnn1024": Row(f"seed CNN b{big}", _seed_cnn, (big, 1, 28, 28), 10, torch_seed_cnn),
        "resnet50": Row(f"ResNet-50 v1 b{2 if quick else 64} {image}px", _resnet50,
                        (2 if quick else 64, 3, image, image), 1000, _torch_resnet50),
        "encoder": Row(f"encoder {s.layers}x d{s.model} b{s.batch}x{s.seq}",
                       lambda: encoder_step.encoder_symbol(s), (s.batch, s.seq, s.model), 0,
                       lambda: encoder_step.torch_encoder(s)),
    }


def bind(row: Row, bf16: bool, ctx: sg.Context) -> Any:
    """The training executor with random parameters (no gradient for data and label)."""
    sym = row.make_sym()
    if bf16:
        sym = sg.amp.convert_symbol(sym, target_dtype="bfloat16")
    return bind_random(sym, ctx, row.data, row.classes)


def free_mib() -> float:
    import torch
    torch.cuda.synchronize()
    return torch.cuda.mem_get_info()[0] / 2 ** 20


def symgraph_cell(row: Row, bf16: bool, gpu: bool, steps: int,
                  profile: int = 0) -> tuple[float, float]:
    """(median ms, MiB taken) of symgraph's step; ``profile``: print its costliest ops."""
    before = free_mib() if gpu else 0.0
    exe = bind(row, bf16, sg.gpu(0) if gpu else sg.cpu())
    step = exe.train_step
    if gpu:
        ms = cuda_median_ms(step, steps, 5, sg.nd.waitall)
        taken = before - free_mib()
        if profile:
            encoder_step.profile(exe, profile)
    else:
        ms, taken = host_median_ms(step, steps, 1, sg.nd.waitall), float("nan")
    del exe
    return ms, taken


def torch_cells(row: Row, bf16: bool, steps: int, compile_too: bool) -> dict[str, float]:
    """Median ms of PyTorch's eager / CUDA graph / torch.compile step, and its peak MiB."""
    torch = torch_fp32()
    import torch.nn.functional as F
    model = row.make_torch().cuda()
    x = torch.randn(*row.data, device="cuda")
    if bf16 and x.dim() == 4:  # PyTorch's recommended layout for convolutions under AMP
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, max(row.classes, 1), (row.data[0],), device="cuda")
    loss = (lambda out: F.cross_entropy(out, y, reduction="sum")) if row.classes \
        else (lambda out: out.square().mean())
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    step, body, compiled = torch_forward_backward(model, x, loss, bf16, compile_too)
    out = {"eager": cuda_median_ms(step, steps, 5),
           "peak": torch.cuda.max_memory_reserved() / 2 ** 20}
    out["graph"] = cuda_median_ms(torch_cuda_graph(step, body), steps, 5)
    out["compile"] = cuda_median_ms(compiled, steps, 5) if compiled else float("nan")
    del model, step, body, compiled
    torch.cuda.empty_cache()
    return out


def main(argv: Optional[list] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", nargs="+", default=["cnn64", "cnn1024", "resnet50", "encoder"],
                   choices=["cnn64", "cnn1024", "resnet50", "encoder"])
    p.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--quick", action="store_true", help="tiny sizes on the CPU, symgraph only")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="GPU: before each row, the N costliest ops and steps of symgraph's step")
    a = p.parse_args(argv)
    gpu = not a.quick and sg.context.num_gpus() > 0
    steps = 2 if a.quick else a.steps
    table = rows(a.quick)
    print(f"{'gpu(0)' if gpu else 'cpu(0)'}; forward + backward, median ms of {steps} steps\n")
    print("| work | dtype | symgraph | PyTorch eager | CUDA graph | torch.compile "
          "| symgraph / best | symgraph MiB | PyTorch MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in a.rows:
        for dt in a.dtypes:
            if dt == "bf16" and not gpu:
                continue  # bfloat16 GEMMs on the CPU say nothing about the GPU rows
            row = table[key]
            ms, mib = symgraph_cell(row, dt == "bf16", gpu, steps, a.profile)
            th = torch_cells(row, dt == "bf16", steps, not a.no_compile) if gpu else {}
            nan = float("nan")
            best = min((th.get(k, nan) for k in ("eager", "graph", "compile")
                        if not math.isnan(th.get(k, nan))), default=nan)
            print(f"| {row.name} | {dt} | {ms:.3f} | {th.get('eager', nan):.3f} | "
                  f"{th.get('graph', nan):.3f} | {th.get('compile', nan):.3f} | "
                  f"{ms / best:.2f} | {mib:.0f} | {th.get('peak', nan):.0f} |", flush=True)


if __name__ == "__main__":
    main()
