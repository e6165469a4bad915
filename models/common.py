"""Small helpers shared by the custom-op example models: an MNIST IDX reader and a minimal
SGD training loop on a bound executor (used until the train branch's Module is merged)."""
from __future__ import annotations

import gzip
import time
from pathlib import Path
from typing import Optional

import numpy as np

import symgraph as sg

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"


def _idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_mnist(data_dir: Optional[str] = None) -> dict[str, np.ndarray]:
    """MNIST as float32 images (N, 1, 28, 28) in [0, 1] and float32 labels."""
    d = Path(data_dir) if data_dir else DEFAULT_DATA
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        out[f"{split}_data"] = (_idx(d / f"{prefix}-images-idx3-ubyte.gz")[:, None]
                                .astype(np.float32) / 255.0)
        out[f"{split}_label"] = _idx(d / f"{prefix}-labels-idx1-ubyte.gz").astype(np.float32)
    return out


def init_params(exe: sg.Executor, rng: np.random.Generator) -> None:
    """Xavier-uniform weights, zero biases (MXNet's usual choice for these examples)."""
    for name, arr in exe.arg_dict.items():
        if name.endswith("_weight"):
            fan_in = int(np.prod(arr.shape[1:]))
            fan_out = arr.shape[0] * int(np.prod(arr.shape[2:]))
            bound = np.sqrt(6.0 / (fan_in + fan_out))
            arr[:] = rng.uniform(-bound, bound, arr.shape)
        elif name.endswith("_bias"):
            arr[:] = 0


def accuracy(exe: sg.Executor, data: np.ndarray, label: np.ndarray, batch: int) -> float:
    """Top-1 accuracy over whole batches of (data, label)."""
    correct = total = 0
    for i in range(0, len(data) - batch + 1, batch):
        prob = exe.forward(is_train=False, data=data[i:i + batch])[0].asnumpy()
        correct += int((prob.argmax(axis=1) == label[i:i + batch]).sum())
        total += batch
    return correct / max(total, 1)


def fit(sym: sg.sym.Symbol, mnist: dict, ctx: sg.Context, epochs: int = 1, lr: float = 0.1,
        batch: int = 100, label_name: str = "softmax_label", limit: Optional[int] = None,
        seed: int = 0, log_every: int = 0) -> tuple[sg.Executor, float, float]:
    """Plain SGD (gradient averaged over the batch, as MXNet's Module sets rescale_grad).
    Returns the executor, the test accuracy and the training time in seconds."""
    rng = np.random.default_rng(seed)
    data, label = mnist["train_data"][:limit], mnist["train_label"][:limit]
    params = [n for n in sym.list_arguments() if n not in ("data", label_name)]
    exe = sym.simple_bind(ctx, grad_req={n: "write" for n in params},
                          data=(batch,) + data.shape[1:], **{label_name: (batch,)})
    init_params(exe, rng)
    start = time.perf_counter()
    for epoch in range(epochs):
        order = rng.permutation(len(data))
        for k, i in enumerate(range(0, len(data) - batch + 1, batch)):
            idx = order[i:i + batch]
            exe.forward(is_train=True, data=data[idx], **{label_name: label[idx]})
            exe.backward()
            for n in params:
                w = exe.arg_dict[n]
                w[:] = w.asnumpy() - (lr / batch) * exe.grad_dict[n].asnumpy()
            if log_every and k % log_every == 0:
                print(f"epoch {epoch} batch {k}", flush=True)
    seconds = time.perf_counter() - start
    return exe, accuracy(exe, mnist["test_data"], mnist["test_label"], batch), seconds
