"""PyTorch twins of the Gluon benchmark models (``gluon_models.py``) and their training steps:
ResNet-50 v1 as MXNet's model zoo builds it (the stride of a bottleneck on its first 1x1
convolution, not on the 3x3 as torchvision's v1.5; the bottleneck's 1x1 convolutions with
biases: the same 25.58 M parameters) and the LSTM language model
(Embedding -> LSTM -> Linear). PyTorch is imported inside the functions only.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from benchmarks.common import torch_cuda_graph, torch_residual, torch_resnet_stem


def torch_resnet50_v1(classes: int) -> Any:
    """ResNet-50 v1 (MXNet's ``resnet50_v1``: 3-4-6-3 bottlenecks, 64-128-256-512 wide)."""
    from torch import nn

    def bottleneck(cin: int, width: int, stride: int) -> Any:
        cout = 4 * width
        return torch_residual(nn.Sequential(
            nn.Conv2d(cin, width, 1, stride), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, cout, 1), nn.BatchNorm2d(cout)), cin, cout, stride)

    layers = torch_resnet_stem()
    cin = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for b in range(blocks):
            layers.append(bottleneck(cin, width, 2 if stage > 0 and b == 0 else 1))
            cin = 4 * width
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))


def torch_lstm_lm(vocab: int, hidden: int, layers: int) -> Any:
    """Embedding(vocab, hidden) -> LSTM(hidden, layers) over TN tokens -> Linear(vocab)."""
    from torch import nn

    class LanguageModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.rnn = nn.LSTM(hidden, hidden, layers)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, tokens: Any) -> Any:
            return self.out(self.rnn(self.embed(tokens))[0])
    return LanguageModel()


def torch_steppers(model: Any, x: Any, y: Any, bf16: bool, compile_too: bool
                   ) -> dict[str, Optional[Callable[[], None]]]:
    """``{"eager", "graph", "compile"}`` training steps (zero_grad, forward under autocast
    bfloat16 if ``bf16``, cross entropy, backward, SGD with momentum) of ``model`` on
    ``x``/``y``, already on the device; "graph" is None on the CPU, "compile" None unless
    ``compile_too``."""
    import torch
    import torch.nn.functional as F
    cuda = x.device.type == "cuda"

    def make(net: Any) -> Callable[[], None]:
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

        def body() -> None:
            # no cast cache: a captured CUDA graph must not keep casts made outside it
            with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bf16,
                                cache_enabled=False):
                out = net(x)
            F.cross_entropy(out.float().reshape(-1, out.shape[-1]), y.reshape(-1)).backward()
            opt.step()

        def step() -> None:
            opt.zero_grad(set_to_none=False)
            body()
        return step
    eager = make(model)
    steps: dict[str, Optional[Callable[[], None]]] = {"eager": eager, "graph": None,
                                                       "compile": None}
    if cuda:
        steps["graph"] = torch_cuda_graph(eager)
    if compile_too:
        steps["compile"] = make(torch.compile(model))
    return steps
