"""What several benchmarks share: CUDA-event timing, PyTorch's settings and CUDA-graph capture,
and seed 000's network written in PyTorch.

The benchmarks run as ``python benchmarks/<name>.py`` from the repository root; each puts the
root on ``sys.path`` before it imports this module as ``benchmarks.common``. PyTorch is
imported only inside the functions that use it, so a benchmark without it still imports.
"""
from __future__ import annotations

import time
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


def host_median_ms(fn: Callable[[], Any], repeats: int, warm: int = 1,
                   sync: Optional[Callable[[], None]] = None,
                   clock: Callable[[], float] = time.perf_counter) -> float:
    """Median milliseconds of ``fn`` by ``clock`` over ``repeats`` calls after ``warm``
    calls; ``sync`` (if given) runs after the warm-up and inside each timed call, so that the
    work ``fn`` queues is counted where it is queued."""
    for _ in range(warm):
        fn()
    if sync is not None:
        sync()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        if sync is not None:
            sync()
        times.append((clock() - start) * 1e3)
    return float(np.median(times))


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
    """Seed 000's network (``symgraph.interop.models.simple_cnn``) in PyTorch, on the CPU."""
    from torch import nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def torch_resnet20(projection_bn: bool) -> Any:
    """ResNet-20 for CIFAR in PyTorch, on the CPU: conv3x3(16) + BatchNorm + ReLU, 3 stages x 3
    basic blocks (16/32/64 channels; at each stage change stride 2 and a 1x1 projection, with
    BatchNorm after it if ``projection_bn``), global average pool, dense 10."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.a = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                   nn.BatchNorm2d(cout), nn.ReLU(),
                                   nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                                   nn.BatchNorm2d(cout))
            proj = [nn.Conv2d(cin, cout, 1, stride, bias=False)]
            proj += [nn.BatchNorm2d(cout)] if projection_bn else []
            self.p = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(*proj)

        def forward(self, x: Any) -> Any:
            return (self.a(x) + self.p(x)).relu()
    layers: list = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    cin = 16
    for stage, cout in enumerate((16, 32, 64)):
        for block in range(3):
            layers.append(Block(cin, cout, 2 if stage > 0 and block == 0 else 1))
            cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def torch_residual(body: Any, cin: int, cout: int, stride: int) -> Any:
    """A ResNet v1 unit in PyTorch: ``relu(body(x) + shortcut(x))``, the shortcut a strided
    1x1 convolution with BatchNorm where the shape changes, else the identity."""
    from torch import nn

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = body
            self.down = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            return (self.body(x) + (x if self.down is None else self.down(x))).relu()
    return Residual()


def torch_resnet_stem() -> list:
    """The ImageNet ResNets' first layers: 7x7/2 convolution, BatchNorm, ReLU, 3x3/2 max pool."""
    from torch import nn
    return [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1)]


def bind_random(sym: Any, ctx: Any, data: tuple, classes: int = 0) -> Any:
    """``sym``'s training executor on ``ctx`` with random values (no gradient for ``data`` and
    ``softmax_label``): data N(0, 1), parameters N(0, 0.05), ``*gamma`` 1, labels below
    ``classes``, moving variances 1 and means 0."""
    reqs = {n: NO_INPUT_GRADS.get(n, "write") for n in sym.list_arguments()}
    exe = sym.simple_bind(ctx, grad_req=reqs, data=data)
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.integers(0, max(classes, 1), size=arr.shape)
        elif name.endswith("gamma"):
            arr[:] = 1.0
        else:
            arr[:] = rng.normal(size=arr.shape) * (1.0 if name == "data" else 0.05)
    for name, arr in exe.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    return exe


def torch_forward_backward(model: Any, x: Any, loss: Callable[[Any], Any], bf16: bool,
                           compile_too: bool) -> tuple[Callable[[], None], Callable[[], None],
                                                       Optional[Callable[[], None]]]:
    """(step, body, compiled step) of ``model`` on ``x``: ``body`` runs the forward (under
    autocast bfloat16 if ``bf16``) and ``loss(float32 output).backward()``, ``step`` zeroes the
    gradients first (``torch_cuda_graph(step, body)`` captures it); the compiled step (None
    unless ``compile_too``) is the same step of ``torch.compile(model)``, compiled at its first
    call."""
    import torch
    device = x.device.type

    def make(net: Any) -> tuple[Callable[[], None], Callable[[], None]]:
        def body() -> None:
            # no cast cache: a captured CUDA graph must not keep casts made outside it
            with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16, cache_enabled=False):
                out = net(x)
            loss(out.float()).backward()

        def step() -> None:
            model.zero_grad(set_to_none=False)
            body()
        return step, body
    step, body = make(model)
    return step, body, make(torch.compile(model))[0] if compile_too else None
