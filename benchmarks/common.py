"""What several benchmarks share: CUDA-event timing, PyTorch's settings and CUDA-graph capture,
and seed 000's network written in PyTorch.

The benchmarks run as ``python benchmarks/<name>.py`` from the repository root; each puts the
root on ``sys.path`` before it imports this module as ``benchmarks.common``. PyTorch is
imported only inside the functions that use it, so a benchmark without it still imports.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

# The grad_req of the seed networks' inputs: no gradient, as Module binds (and as PyTorch).
NO_INPUT_GRADS = {"data": "null", "softmax_label": "null"}


def cuda_median_ms(fn: Callable[[], Any], steps: int, warm: int = 5,
                   sync: Optional[Callable[[], None]] = None) -> float:
    """Median milliseconds of ``fn`` by CUDA events on PyTorch's current (legacy) stream,
    which orders after symgraph's stream, over ``steps`` calls after ``warm`` calls;
    ``sync`` (if given) first waits for work that the events do not order after."""
    import torch
    for _ in range(warm):
        fn()
    if sync is not None:
        sync()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(steps)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    if sync is not None:
        sync()
    torch.cuda.synchronize()
    return float(np.median([s.elapsed_time(e) for s, e in events]))


def torch_fp32(benchmark: bool = True) -> Any:
    """PyTorch with TF32 off everywhere (full float32, as symgraph's default) and, if asked,
    ``cudnn.benchmark`` on; returns the ``torch`` module."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if benchmark:
        torch.backends.cudnn.benchmark = True
    return torch


def torch_cuda_graph(step: Callable[[], None], body: Optional[Callable[[], None]] = None,
                     before: Optional[Callable[[], None]] = None) -> Callable[[], None]:
    """Replay of one CUDA graph of ``body`` (default: ``step``), captured as PyTorch's docs
    describe: three warm-up ``step`` calls on a side stream, then ``before`` (e.g.
    ``zero_grad(set_to_none=True)``, so that the graph allocates its own gradients)."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    if before is not None:
        before()
    with torch.cuda.graph(graph):
        (body or step)()
    return graph.replay  # the bound method keeps the graph alive


def torch_seed_cnn() -> Any:
    """Seed 000's network (``symgraph.models.simple_cnn``) in PyTorch, on the CPU."""
    from torch import nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
