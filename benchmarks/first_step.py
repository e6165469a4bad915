"""ResNet-50's bind + first training step, and where its time goes, per ``SYMGRAPH_AUTOTUNE``
mode with a cold and a warm cache, in one run.

    PYTHONPATH=. python3 benchmarks/first_step.py [--dtype float32|bfloat16] [--batch 64]
                                                  [--modes 0,1,full]

Each measurement is a fresh child process (in-process caches would make a second one free): per
mode, first with an empty cache folder (``SYMGRAPH_CACHE_DIR``: no cubins, no remembered
choices), then again with the folder that run filled. The child binds ResNet-50 v1 (gluon
model_zoo, 224 px, 1000 classes; bfloat16 through ``sg.amp`` as ``amp_step``), runs one
``train_step`` and waits for it, timing (exclusively: a nested category's time is not its
parent's) the choice timing (``conv_choice.graph_ms``: every candidate timed as a CUDA graph
replay), cuDNN graph-API plan building (``GraphCall._mode_plans``), cuDNN candidate listing
(``ConvPlan._engines``: the legacy Find or heuristics), nvcc (``module_parts.compile_parts``:
the wall time of a module's parts compiled at once, and any other ``compiler.run_nvcc``), the
rest of bind, and the rest of the first step; then the mean time of the next ``STEADY`` steps
(what the choices made cost or saved). Without a GPU it says so and exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLUMNS = ("choice timing", "cuDNN plans", "cuDNN listing", "nvcc", "bind (rest)",
           "step (rest)")
STEADY = 20  # steps after the first, timed together (the last one waited for)


class Clock:
    """Exclusive wall time per category: time inside a nested category is that one's only."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list] = []  # [category, start, time of nested categories]

    def wrap(self, owner: Any, name: str, category: str) -> None:
        """Replace ``owner.name`` by a timed call of it (in the main thread only: the parts of
        a module compile in threads, inside the main thread's span)."""
        fn = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                return fn(*args, **kwargs)
            with self.span(category):
                return fn(*args, **kwargs)
        setattr(owner, name, timed)

    def span(self, category: str) -> "_Span":
        return _Span(self, category)


class _Span:
    def __init__(self, clock: Clock, category: str) -> None:
        self.clock, self.category = clock, category

    def __enter__(self) -> None:
        self.clock._stack.append([self.category, time.perf_counter(), 0.0])

    def __exit__(self, *exc: Any) -> None:
        c = self.clock
        category, start, nested = c._stack.pop()
        total = time.perf_counter() - start
        c.seconds[category] = c.seconds.get(category, 0.0) + total - nested
        c.calls[category] = c.calls.get(category, 0) + 1
        if c._stack:
            c._stack[-1][2] += total


def resnet50(dtype: str) -> Any:
    """ResNet-50 v1 with a softmax loss, as a symbol (bfloat16: ``amp_step``'s conversion)."""
    import symgraph as sg
    from benchmarks.amp_step import narrow_symbol
    from symgraph.gluon.model_zoo import vision
    net = vision.resnet50_v1(classes=1000)
    sym = sg.sym.SoftmaxOutput(net(sg.sym.var("data")), name="softmax")
    return sym if dtype == "float32" else narrow_symbol(sym)[0]


def child(dtype: str, batch: int) -> dict:
    """One cold or warm measurement in this process: seconds per category and counts."""
    from benchmarks.amp_step import bind
    from symgraph.runtime.cuda import compiler, conv_choice, cudnn, cudnn_graph, module_parts
    clock = Clock()
    clock.wrap(conv_choice, "graph_ms", "choice timing")
    clock.wrap(cudnn_graph.GraphCall, "_mode_plans", "cuDNN plans")
    clock.wrap(cudnn.ConvPlan, "_engines", "cuDNN listing")
    clock.wrap(compiler, "run_nvcc", "nvcc")
    clock.wrap(module_parts, "compile_parts", "nvcc")
    calls = compiler.NVCC_CALLS
    sym = resnet50(dtype)
    begin = time.perf_counter()
    with clock.span("bind (rest)"):
        exe = bind(sym, (batch, 3, 224, 224), False)
    with clock.span("step (rest)"):
        exe.train_step()
        exe.outputs[0].asnumpy()
    total = time.perf_counter() - begin
    clock.calls["nvcc"] = compiler.NVCC_CALLS - calls  # processes, not compile_parts calls
    # the steady step the choices led to (mode 0 may bind fast and step slower)
    start = time.perf_counter()
    for _ in range(STEADY):
        exe.train_step()
    exe.outputs[0].asnumpy()
    step_ms = (time.perf_counter() - start) * 1e3 / STEADY
    return {"total": total, "seconds": clock.seconds, "calls": clock.calls, "step_ms": step_ms}


def measure(mode: str, cache: str, dtype: str, batch: int) -> dict:
    env = {**os.environ, "SYMGRAPH_AUTOTUNE": mode, "SYMGRAPH_CACHE_DIR": cache,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, __file__, "--child", "--dtype", dtype,
                           "--batch", str(batch)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child (SYMGRAPH_AUTOTUNE={mode}) failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def row(label: str, got: dict) -> str:
    s, n = got["seconds"], got["calls"]
    cells = [f"{s.get(c, 0.0):.2f}" for c in COLUMNS]
    counts = f"{n.get('choice timing', 0)} timings, {n.get('cuDNN plans', 0)} plan lists, " \
             f"{n.get('nvcc', 0)} nvcc"
    return f"| {label} | {got['total']:.2f} | " + " | ".join(cells) + \
        f" | {got['step_ms']:.1f} | {counts} |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--modes", default="0,1,full")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.dtype, args.batch)))
        return 0
    import symgraph as sg
    if sg.context.num_gpus() == 0:
        print("first_step.py needs a CUDA GPU (and pycuda); none found, nothing measured")
        return 0
    print(f"ResNet-50 v1 b{args.batch} {args.dtype}: bind + first training step, seconds "
          f"(fresh process each; cold = empty SYMGRAPH_CACHE_DIR, warm = the one cold filled)\n")
    print("| SYMGRAPH_AUTOTUNE, cache | total | " + " | ".join(COLUMNS) +
          " | later steps, ms | counts |")
    print("|---" * (len(COLUMNS) + 4) + "|")
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="symgraph-first-step-") as cache:
            os.chmod(cache, 0o700)
            for state in ("cold", "warm"):
                print(row(f"{mode}, {state}", measure(mode, cache, args.dtype, args.batch)),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
