"""Fingerprints of what the compiler produces, to show a refactoring changes none of it.

For the usual models (the seed CNN, LeNet, the MLP, ResNet-20 in float32 and AMP bfloat16) and
for ``--random`` random graphs, each graph is bound for training on the CPU twice: with the numpy
backend, and with the CUDA backend's passes and lowering (``cuda.plan.lower_schedule``, pure
Python, no GPU). What is hashed: the schedule (``Schedule.describe``: steps, slots, shapes, the
memory plan's offsets) and, for the CUDA program, the one module's source, every action of every
step and the program's scratch/state sizes. Run it before and after a change and compare:

    PYTHONPATH=. python3 benchmarks/ir_fingerprint.py [--random 2000] [--seed 0] [--out f.txt]

Prints one line per model and one for all random graphs together, ``name sha256``; ``--out``
also writes every graph's own hash (to find the first graph that differs).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402

S = sg.sym


def _cuda_backend(sm_count: int, skip: tuple = ()) -> Any:
    """The CUDA backend's forward passes (less those named in ``skip``) and lowering for
    ``sm_count`` SMs, run without a device."""
    from symgraph.runtime.cuda.plan import lower_schedule
    from symgraph.compiler.passes.channel_last import channel_last
    from symgraph.runtime.cuda.fuse_conv_pool import fuse_conv_pool
    from symgraph.compiler.passes.fold_heads import fold_heads
    forward = (fuse_conv_pool, channel_last, fold_heads)  # as with cuDNN present
    return types.SimpleNamespace(
        FORWARD_PIPELINE=tuple(p for p in forward if p.__name__ not in skip),
        compile=lambda schedule, ctx: lower_schedule(schedule, sm_count))


@contextlib.contextmanager
def cuda_lowering(sm_count: int = 132, skip: tuple = ()) -> Iterator[None]:
    """Binds inside compile for the CPU context with the CUDA backend's passes (less the
    forward passes named in ``skip``) and lowering (the programs cannot run)."""
    from symgraph.runtime import compile as C
    backend = _cuda_backend(sm_count, skip)
    saved = C.backend_for
    C.backend_for = lambda ctx: backend
    try:
        yield
    finally:
        C.backend_for = saved


def _action_text(action: Any) -> str:
    """An action without object identities: dataclass fields, kernels by name and source."""
    fields = getattr(action, "__dataclass_fields__", None)
    if fields is None:
        return repr(action)
    parts = []
    for name in fields:
        value = getattr(action, name)
        if hasattr(value, "__dataclass_fields__"):
            value = _action_text(value)
        elif isinstance(value, (list, tuple)):
            value = [(_action_text(v) if hasattr(v, "__dataclass_fields__") else
                      getattr(v, "__name__", v) if callable(v) else v) for v in value]
        elif callable(value):
            value = getattr(value, "__qualname__", type(value).__name__)
        parts.append(f"{name}={value!r}")
    return f"{type(action).__name__}({', '.join(parts)})"


def fingerprint(sym: Any, shapes: dict, dtype: Any = np.float32) -> str:
    """sha256 of the CPU schedule and of the CUDA schedule + program of ``sym``'s training step."""
    h = hashlib.sha256()
    reqs = {n: ("null" if n in shapes else "write") for n in sym.list_arguments()}
    type_dict = {n: dtype for n in shapes}
    exe = sym.simple_bind(sg.cpu(), grad_req=reqs, type_dict=type_dict, **shapes)
    h.update(exe._train.schedule.describe().encode())
    with cuda_lowering():
        stage = sym.simple_bind(sg.cpu(), grad_req=reqs, type_dict=type_dict, **shapes)._train
    program = stage.program
    h.update(stage.schedule.describe().encode())
    h.update(program.source.encode())
    h.update(repr((program.scratch_bytes, program.state_bytes, program.alias,
                   program.key_steps)).encode())
    for acts in program.actions:
        for a in acts:
            h.update(_action_text(a).encode())
    return h.hexdigest()


def _models() -> dict[str, Callable[[], tuple]]:
    from benchmarks.amp_step import RESNET_BATCH, narrow_symbol, resnet_symbol
    from symgraph.interop.models import lenet, mlp, simple_cnn
    mnist = {"data": (64, 1, 28, 28)}
    return {
        "simple_cnn": lambda: (simple_cnn.build(), mnist),
        "lenet": lambda: (lenet.build(), mnist),
        "mlp": lambda: (mlp.build(), {"data": (64, 784)}),
        "resnet20_fp32": lambda: (resnet_symbol(), {"data": (RESNET_BATCH, 3, 32, 32)}),
        "resnet20_amp_bf16": lambda: (narrow_symbol(resnet_symbol())[0],
                                      {"data": (RESNET_BATCH, 3, 32, 32)}),
    }


UNARY = ("tanh", "sigmoid", "relu", "negative", "abs", "exp", "square")
BINARY = ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_maximum")


def random_graph(rng: np.random.Generator) -> tuple[Any, dict]:
    """A mix of elementwise, broadcast, reduce, FullyConnected, convolution, pooling, softmax
    and BatchNorm over a pool of (symbol, kind) values, values reused, a few extra outputs."""
    B, F = 4, 8
    pool = [(S.var("v0"), "full"), (S.var("v1"), "row"), (S.var("v2"), "col"),
            (S.var("img"), "img")]
    shapes = {"v0": (B, F), "v1": (1, F), "v2": (B, 1), "img": (B, 4, 6, 6)}
    for i in range(int(rng.integers(2, 12))):
        kind = rng.choice(["unary", "binary", "reduce", "fc", "conv", "pool", "softmax", "bn",
                           "again"])
        a, ka = pool[int(rng.integers(len(pool)))]
        if kind == "unary":
            pool.append((getattr(S, rng.choice(UNARY))(a), ka))
        elif kind == "binary":
            b, kb = pool[int(rng.integers(len(pool)))]
            if (ka == "img") != (kb == "img"):
                continue
            pool.append((getattr(S, rng.choice(BINARY))(a, b), ka if ka == kb else
                         ("img" if ka == "img" else "full")))
        elif kind == "reduce" and ka in ("full", "col"):
            pool.append((S.sum(a, axis=1, keepdims=True), "col"))
        elif kind == "fc" and ka in ("full", "img"):
            pool.append((S.FullyConnected(a, num_hidden=F, name=f"fc{i}"), "full"))
        elif kind == "conv" and ka == "img":
            pool.append((S.Convolution(a, num_filter=4, kernel=(3, 3), pad=(1, 1),
                                       name=f"conv{i}"), "img"))
        elif kind == "pool" and ka == "img":
            pool.append((S.Pooling(a, kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                                   pool_type=str(rng.choice(["max", "avg"]))), "img"))
        elif kind == "softmax" and ka == "full":
            pool.append((S.softmax(a, axis=-1), "full"))
        elif kind == "bn" and ka == "img":
            pool.append((S.BatchNorm(a, name=f"bn{i}"), "img"))
        elif kind == "again":
            pool.append((S.tanh(a) * 3.0 + S.tanh(a) * 3.0, ka))
    outs = [S.sum(p[0]) for p in pool[4:][-int(rng.integers(1, 4)):]] or [S.sum(pool[0][0])]
    sym = S.Group(outs) if len(outs) > 1 else outs[0]
    return sym, {k: v for k, v in shapes.items() if k in sym.list_arguments()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--random", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines = []
    for name, make in _models().items():
        sym, shapes = make()
        lines.append(f"{name} {fingerprint(sym, shapes)}")
        print(lines[-1], flush=True)
    rng = np.random.default_rng(args.seed)
    total = hashlib.sha256()
    for k in range(args.random):
        sym, shapes = random_graph(rng)
        fp = fingerprint(sym, shapes) if shapes else "no-input"
        total.update(fp.encode())
        lines.append(f"random{k} {fp}")
    print(f"random x{args.random} (seed {args.seed}) {total.hexdigest()}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
