"""symgraph on the CPU beside PyTorch and MXNet 1.9.1: one table of wall-clock medians.

    /tmp/cpuvenv/bin/python benchmarks/cpu_step.py [--rows cnn64 resnet18_b1 ...]
        [--columns numpy torch ...] [--repeat N] [--rounds N] [--threads N] [--busy N] [--small]
        [--clock wall|cpu]

Rows: the seed CNN's training step (forward + backward) at batch 64 and 256, ResNet-18 v1
inference at batch 1 and 32 (224 px), an LSTM language model's SGD step (Embedding, 2-layer
``gluon.rnn.LSTM`` of 200, Dense to a 10,000 vocabulary; bptt 35, batch 20), one MNIST epoch of
the seed CNN (``Module.fit``, batch 64; ``SYMGRAPH_DATA`` or ../shared/data/mnist).
Columns: symgraph's numpy backend and its compiled backend (``SYMGRAPH_CPU=compiled``, "n/a"
while the configuration does not accept it), PyTorch eager on the CPU, MXNet 1.9.1 (its venv's
python in a subprocess, see ``cpu_step_mxnet.py`` for the venv's recipe), the ratios, and the
symgraph columns again with PyTorch imported, warmed up, and running a small op before each
timed step in the same process ("+torch"; "move" is the change against the plain column).

Every number is measured in a fresh child process (one per row and column and round), so one
framework's idle worker threads never sit in another's process. ``--threads N`` gives each
framework N threads (``SYMGRAPH_CPU_THREADS``, ``torch.set_num_threads``, ``OMP_NUM_THREADS``);
without it each keeps its default. ``--busy N`` keeps N busy-loop processes running beside the
measurements. ``--small`` runs tiny sizes (the test of this script). PyTorch comes from the
interpreter running this script: a venv made with ``python3 -m venv --system-site-packages``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.cpu_models import SYMGRAPH, TORCH, step_times  # noqa: E402


@dataclass(frozen=True)
class Row:
    """One workload: its title, kind (the builders' key), sizes, small sizes, repeats."""

    title: str
    kind: str
    full: dict
    small: dict
    repeat: int
    warm: int = 1
    unit: str = "ms"


LM = {"vocab": 10000, "hidden": 200, "layers": 2, "bptt": 35, "batch": 20}
ROWS = {
    "cnn64": Row("seed CNN train step, batch 64", "cnn", {"batch": 64}, {"batch": 4}, 10),
    "cnn256": Row("seed CNN train step, batch 256", "cnn", {"batch": 256}, {"batch": 8}, 5),
    "resnet18_b1": Row("ResNet-18 inference, batch 1", "resnet", {"batch": 1, "size": 224},
                       {"batch": 1, "size": 32}, 10),
    "resnet18_b32": Row("ResNet-18 inference, batch 32", "resnet", {"batch": 32, "size": 224},
                        {"batch": 2, "size": 32}, 3),
    "lstm_lm": Row("LSTM LM train step", "lstm", LM,
                   {"vocab": 50, "hidden": 8, "layers": 2, "bptt": 4, "batch": 2}, 5),
    "mnist_epoch": Row("MNIST epoch, seed CNN", "mnist", {"images": 60000}, {"images": 256},
                       1, warm=0, unit="s"),
}
COLUMNS = ("numpy", "compiled", "torch", "mxnet", "numpy+torch", "compiled+torch")


MXNET_PYTHON = "/tmp/mxvenv/bin/python"
"""MXNet 1.9.1's venv (the recipe in cpu_step_mxnet.py); ``--mxnet-python`` names another."""


def mxnet_python() -> Optional[str]:
    """MXNet's venv python (``--mxnet-python``, default :data:`MXNET_PYTHON`) when it exists
    (a venv without mxnet shows as "n/a" when its child fails to import it)."""
    return MXNET_PYTHON if os.path.isfile(MXNET_PYTHON) else None


def compiled_accepted() -> bool:
    """Whether the configuration accepts ``SYMGRAPH_CPU=compiled`` (the compiled backend)."""
    from symgraph.core import config
    setting = config.SETTINGS.get("SYMGRAPH_CPU")
    return setting is not None and setting.parse("compiled") is not None


def mnist_file(small: bool, folder: str) -> str:
    """An .npz of the row's number of training images and labels (and 1000 test images for
    the score at the end of ``Module.fit``'s runner): MNIST, or random images in small mode."""
    n = ROWS["mnist_epoch"].small["images"] if small else ROWS["mnist_epoch"].full["images"]
    if small:
        rng = np.random.default_rng(0)
        d = {"train_data": rng.random((n, 1, 28, 28), dtype=np.float32),
             "train_label": rng.integers(0, 10, n).astype(np.float32)}
        d["test_data"], d["test_label"] = d["train_data"], d["train_label"]
    else:
        import symgraph as sg
        where = sg.config.get("SYMGRAPH_DATA") or str(ROOT.parent / "shared" / "data" / "mnist")
        d = sg.datasets.mnist.load_data(where)
    path = os.path.join(folder, "mnist.npz")
    np.savez(path, x=d["train_data"][:n], y=d["train_label"][:n], xt=d["test_data"][:1000],
             yt=d["test_label"][:1000])
    return path


def child(cmd: list[str], env: dict[str, str]) -> Optional[list[float]]:
    """Run one measuring child; its last stdout line is a JSON list of milliseconds. None
    when the child's framework is not installed."""
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    if out.returncode != 0:
        if re.search(r"No module named '(mxnet|torch)'", out.stderr):
            return None
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed:\n{out.stderr[-3000:]}")
    return [float(v) for v in json.loads(out.stdout.strip().splitlines()[-1])]


def measure(column: str, row: Row, a: argparse.Namespace, data: Optional[str],
            have: dict[str, Any]) -> Optional[list[float]]:
    """The times of one cell, or None where its framework or backend is absent."""
    backend, _, beside = column.partition("+")
    if column not in a.columns or not have.get(backend) or (beside and not have.get("torch")):
        return None
    params = json.dumps(row.small if a.small else row.full)
    repeat = a.repeat or (2 if a.small else row.repeat)
    common = ["--kind", row.kind, "--params", params, "--repeat", str(repeat),
              "--warm", str(row.warm), "--clock", a.clock] + (["--data", data] if data else [])
    env = {"OMP_NUM_THREADS": str(a.threads)} if a.threads else {}
    if backend == "mxnet":
        return child([have["mxnet"], str(ROOT / "benchmarks" / "cpu_step_mxnet.py"), *common],
                     env)
    env = {"SYMGRAPH_CPU_THREADS": str(a.threads)} if a.threads else {}
    if backend in ("numpy", "compiled") and have.get("compiled"):
        env["SYMGRAPH_CPU"] = backend
    framework = "torch" if backend == "torch" else "symgraph"
    extra = ["--warm-torch"] if beside else []
    return child([sys.executable, __file__, "--worker", framework, *common, *extra,
                  "--threads", str(a.threads)], env)


def worker(a: argparse.Namespace) -> None:
    """Child process: print the times of one framework's workload as a JSON list."""
    data = dict(np.load(a.data)) if a.data else None
    between: Optional[Callable[[], Any]] = None
    if a.worker == "torch" or a.warm_torch:
        import torch
        if a.threads:
            torch.set_num_threads(a.threads)
    if a.warm_torch:  # PyTorch's OpenMP pool alive and busy just before each timed step
        x = torch.rand(512, 512)

        def torch_op() -> None:
            (x @ x).relu_().sum()
        for _ in range(20):
            torch_op()
        between = torch_op
    builders = TORCH if a.worker == "torch" else SYMGRAPH
    fn = builders[a.kind](a.params, data)
    print(json.dumps(step_times(fn, a.repeat, a.warm, between, a.clock)))


def cell(times: Optional[list[float]], unit: str) -> str:
    if times is None:
        return "n/a"
    value = float(np.median(times)) / (1e3 if unit == "s" else 1.0)
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def ratio(num: Optional[list[float]], den: Optional[list[float]], move: bool = False) -> str:
    if num is None or den is None:
        return "n/a"
    r = float(np.median(num)) / float(np.median(den))
    return f"{(r - 1) * 100:+.0f}%" if move else f"{r:.2f}"


def table(rows: list[str], got: dict[tuple[str, str], Optional[list[float]]]) -> str:
    """The markdown table: medians, ratios to PyTorch and MXNet, and the +torch moves."""
    head = ["row", "unit", "numpy", "compiled", "torch", "mxnet", "numpy/torch",
            "numpy/mxnet", "compiled/torch", "compiled/mxnet", "numpy+torch", "move",
            "compiled+torch", "move"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in rows:
        r, g = ROWS[name], {c: got[(name, c)] for c in COLUMNS}
        cells = [r.title, r.unit, *(cell(g[c], r.unit) for c in COLUMNS[:4]),
                 ratio(g["numpy"], g["torch"]), ratio(g["numpy"], g["mxnet"]),
                 ratio(g["compiled"], g["torch"]), ratio(g["compiled"], g["mxnet"]),
                 cell(g["numpy+torch"], r.unit), ratio(g["numpy+torch"], g["numpy"], True),
                 cell(g["compiled+torch"], r.unit),
                 ratio(g["compiled+torch"], g["compiled"], True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(a: argparse.Namespace) -> str:
    """Measure every cell (rounds alternate the columns) and return the report."""
    from symgraph.runtime.backend.threads import cpu_threads, usable_cores
    have = {"numpy": True, "compiled": compiled_accepted(),
            "torch": importlib.util.find_spec("torch") is not None, "mxnet": mxnet_python()}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(a.busy)]
    load = os.getloadavg()[0]
    got: dict[tuple[str, str], Optional[list[float]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = mnist_file(a.small, tmp) if "mnist_epoch" in a.rows else None
            for _ in range(a.rounds):
                for name in a.rows:
                    row = ROWS[name]
                    for column in COLUMNS:
                        t = measure(column, row, a, data if row.kind == "mnist" else None,
                                    have)
                        old = got.get((name, column))
                        got[(name, column)] = t if old is None or t is None else old + t
    finally:
        for p in busy:
            p.kill()
            p.wait()
    budget = a.threads or cpu_threads()
    return (f"CPU, {usable_cores()} usable cores, threads: "
            f"{a.threads or 'each framework default'} (symgraph's budget {budget}), "
            f"{a.busy} busy-loop processes beside, "
            f"load average {load:.2f} before / {os.getloadavg()[0]:.2f} after; median of "
            f"{a.rounds} round(s) of {a.repeat or 'default'} repeats, "
            f"{'CPU time' if a.clock == 'cpu' else 'wall clock'}"
            f"{', small sizes' if a.small else ''}\n" + table(a.rows, got))


def main(argv: Optional[list[str]] = None) -> None:
    global MXNET_PYTHON
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    ap.add_argument("--columns", nargs="+", choices=COLUMNS, default=list(COLUMNS),
                    help="the columns to measure (the others print n/a)")
    ap.add_argument("--repeat", type=int, default=0, help="timed runs per cell (default: "
                    "per row, 1 for the MNIST epoch; 2 with --small)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: each framework's default")
    ap.add_argument("--busy", type=int, default=0, help="busy-loop processes beside")
    ap.add_argument("--small", action="store_true", help="tiny sizes (seconds in all)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall clock, or each child's CPU time (steadier on a shared box)")
    ap.add_argument("--mxnet-python", default=MXNET_PYTHON, help="MXNet 1.9.1's python")
    ap.add_argument("--worker", choices=("symgraph", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--kind", help=argparse.SUPPRESS)
    ap.add_argument("--params", type=json.loads, help=argparse.SUPPRESS)
    ap.add_argument("--warm", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--warm-torch", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    MXNET_PYTHON = a.mxnet_python
    if a.worker:
        worker(a)
    else:
        print(run(a))


if __name__ == "__main__":
    main()
