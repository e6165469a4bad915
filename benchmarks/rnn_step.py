"""The fused RNN on the GPU (``cuda/lowering_rnn.py``: cuBLAS GEMMs and gate kernels), beside
PyTorch's cuDNN RNN in the same process.

    PYTHONPATH=. python3 benchmarks/rnn_step.py [--mode lstm|gru|rnn_tanh|rnn_relu]
        [--steps 30] [--seq 32] [--batch 64] [--hidden 512] [--layers 2] [--uni]

A training step is forward + backward of ``sum(RNN(x)^2)`` (symgraph: one ``train_step``, one
CUDA graph replay; PyTorch: eager and one captured CUDA graph), float32 and bfloat16
(symgraph: the graph bound in bfloat16; PyTorch: ``torch.autocast``). Also the inference
forward. Times are medians of ``--steps`` runs after warm-up, by CUDA events.
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

from benchmarks.common import cuda_median_ms, torch_cuda_graph, torch_fp32  # noqa: E402

S = sg.sym


def symgraph_rows(a: argparse.Namespace) -> list[tuple[str, float]]:
    names = ["data", "params", "state"] + (["cell"] if a.mode == "lstm" else [])
    rnn = S.RNN(*[S.var(n) for n in names], state_size=a.hidden, num_layers=a.layers,
                bidirectional=not a.uni, mode=a.mode, name="rnn")
    loss = S.MakeLoss(S.sum(rnn * rnn))
    rows = []
    for dtype in ("float32", "bfloat16"):
        shape = (a.seq, a.batch, a.hidden)
        exe = loss.simple_bind(sg.gpu(0), type_dict={n: dtype for n in names},
                               grad_req={n: ("null" if n == "data" else "write") for n in names},
                               data=shape)
        rng = np.random.default_rng(0)
        for k, arr in exe.arg_dict.items():
            arr[:] = (rng.normal(size=arr.shape) * 0.05).astype(np.float32)
        rows.append((f"symgraph {dtype} train step", cuda_median_ms(exe.train_step, a.steps)))
        fwd = rnn.simple_bind(sg.gpu(0), type_dict={n: dtype for n in names}, grad_req="null",
                              data=shape)
        rows.append((f"symgraph {dtype} inference",
                     cuda_median_ms(lambda: fwd.forward(is_train=False), a.steps)))
    return rows


def torch_rows(a: argparse.Namespace) -> list[tuple[str, float]]:
    torch = torch_fp32()
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(a.mode, torch.nn.RNN)
    extra: dict[str, Any] = {} if a.mode in ("lstm", "gru") else \
        {"nonlinearity": a.mode.split("_")[1]}
    model = cls(a.hidden, a.hidden, a.layers, bidirectional=not a.uni, **extra).cuda()
    x = torch.randn(a.seq, a.batch, a.hidden, device="cuda")
    rows = []
    for label, amp in (("fp32", False), ("autocast bf16", True)):
        def body() -> None:
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                out = model(x)[0]
            (out.float() ** 2).sum().backward()

        def step() -> None:
            model.zero_grad(set_to_none=True)
            body()
        rows.append((f"PyTorch {label} train step eager", cuda_median_ms(step, a.steps)))
        replay = torch_cuda_graph(step, body, lambda: model.zero_grad(set_to_none=True))
        rows.append((f"PyTorch {label} train step CUDA graph", cuda_median_ms(replay, a.steps)))
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            rows.append((f"PyTorch {label} inference", cuda_median_ms(lambda: model(x),
                                                                      a.steps)))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", default="lstm", choices=("lstm", "gru", "rnn_tanh", "rnn_relu"))
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--uni", action="store_true", help="one direction (default: two)")
    a = p.parse_args()
    print(f"{a.mode}: T={a.seq} N={a.batch} I=H={a.hidden} layers={a.layers} "
          f"{'uni' if a.uni else 'bi'}directional")
    try:  # PyTorch's own cuDNN loaded first: the one symgraph loads would shadow it
        torch_fp32().backends.cudnn.version()
        have_torch = True
    except ImportError:
        print("(PyTorch not installed: symgraph only)")
        have_torch = False
    rows = symgraph_rows(a) + (torch_rows(a) if have_torch else [])
    for name, ms in rows:
        print(f"  {name:42s} {ms:8.3f} ms")


if __name__ == "__main__":
    main()
