"""The CUDA executor's planned device memory of a training step, computed on the CPU.

Each model is bound for training (forward + backward) with the CUDA backend's passes and
lowering (``ir_fingerprint.cuda_lowering``: pure Python, no GPU), and the bytes the program
would take on the device are split into:

* ``params+grads``: bound arrays (parameters, aux states, data, labels) and one gradient array
  per parameter;
* ``saved``: forward results the backward reads, live in the arena at the planned peak;
* ``temps``: every other arena slot live at that peak (backward temporaries, gradients being
  summed);
* ``workspace``: scratch shared by all steps (small library workspaces, split-K partials)
  and kept state;
* ``arena``: the planned arena (``MemoryPlan.arena_bytes``: the peak above plus the
  allocator's fragmentation) with the large scratch placed in its free bytes
  (``scratch_plan``), and ``total`` = params+grads + arena + workspace, the figure to
  set beside the GPU's "free memory before minus after bind + step" (which also holds
  cuBLAS/cuDNN handles and the module).

``--by-op``: the saved activations at the peak summed by the op that wrote them (what to
rematerialise first).

    PYTHONPATH=. python3 benchmarks/memory_plan.py [--rows cnn1024 resnet50] [--dtypes fp32 bf16]
        [--by-op] [--quick] [--gpu]

``--gpu`` (on a GPU machine, PyTorch installed for its free-memory query) adds what binding and
one step took on ``gpu(0)``, measured as ``real_size.py`` does, and the cuDNN workspace among
it: the difference from ``total`` is what the plan does not hold (libraries, the module).
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgraph as sg  # noqa: E402
from benchmarks.ir_fingerprint import cuda_lowering  # noqa: E402
from benchmarks.real_size import bind, rows  # noqa: E402
from symgraph.compiler.memory_plan import lifetimes, slot_bytes  # noqa: E402
from symgraph.compiler.schedule import Schedule  # noqa: E402

MIB = 2 ** 20


@dataclass
class Figure:
    """Planned device bytes of one training program (see the module docstring)."""

    params_grads: int
    saved: int
    temps: int
    workspace: int
    arena: int
    saved_by_op: Counter

    @property
    def total(self) -> int:
        return self.params_grads + self.arena + self.workspace


def _op_of(schedule: Schedule) -> dict[int, str]:
    """Slot -> the op of the step writing it (a fused group: its head and member ops), with
    ``[i]`` for the step's output i > 0."""
    out = {}
    for st in schedule.steps:
        name, attrs = st.node.op, st.node.attrs
        members = attrs.get("members") if "members" in attrs else None
        if members:
            head = attrs.get("head")
            name = "+".join(([head[0]] if head else []) + list(dict.fromkeys(members)))
        for i, s in enumerate(st.outputs):  # (a BatchNorm's statistics: outputs 1, 2...)
            out[s] = name if i == 0 else f"{name}[{i}]"
    return out


def live_at_peak(schedule: Schedule) -> tuple[int, list[int]]:
    """(step index, slots live there) of the step where the arena's live bytes peak; a slot an
    in-place step wrote over its input counts once."""
    first, last = lifetimes(schedule)
    inplace = schedule.plan.inplace if schedule.plan is not None else {}
    size = {s: slot_bytes(schedule, s) for s in first if s not in inplace}
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    for s in size:
        starts.setdefault(first[s], []).append(s)
        ends.setdefault(last[s], []).append(s)
    for out, src in inplace.items():  # the bytes live on under the output's name
        if src in size:
            ends[last[src]].remove(src)
            ends.setdefault(last[out], []).append(src)
    live: set[int] = set()
    best, best_k, best_live = -1, 0, []
    for k in range(len(schedule.steps)):
        live.update(starts.get(k, ()))
        now = sum(size[s] for s in live)
        if now > best:
            best, best_k, best_live = now, k, sorted(live)
        live.difference_update(ends.get(k, ()))
    return best_k, best_live


def figure(exe: Any) -> Figure:
    """Split the planned bytes of ``exe``'s training program (bound under ``cuda_lowering``)."""
    stage = exe._train
    sch, program = stage.schedule, stage.program
    nf = sch.n_forward_steps
    bound = sum(prod(sch.shapes[s]) * sch.dtypes[s].itemsize for s in sch.variables.values())
    grads = sum(a.size * a.dtype.itemsize for a in exe.grad_dict.values() if a is not None)
    first, _ = lifetimes(sch)
    _, live = live_at_peak(sch)
    op_of = _op_of(sch)
    saved_by_op: Counter = Counter()
    saved = temps = 0
    for s in live:
        b = slot_bytes(sch, s)
        if first[s] < nf:
            saved += b
            saved_by_op[op_of[s]] += b
        else:
            temps += b
    return Figure(bound + grads, saved, temps, program.scratch_bytes + program.state_bytes,
                  program.arena_bytes, saved_by_op)


def measure(key: str, bf16: bool, quick: bool) -> Figure:
    row = rows(quick)[key]
    with cuda_lowering():
        exe = bind(row, bf16, sg.cpu())
        return figure(exe)


def measured_mib(key: str, bf16: bool) -> tuple[float, float]:
    """On the GPU: (MiB that binding and one training step took, free memory before minus
    after, as ``real_size`` measures; MiB of the program's cuDNN workspace among them)."""
    from benchmarks.real_size import free_mib
    before = free_mib()
    exe = bind(rows(False)[key], bf16, sg.gpu(0))
    exe.train_step()
    sg.nd.waitall()
    taken = before - free_mib()
    ws = exe._train.program.ws_bytes / MIB
    del exe
    return taken, ws


def main(argv: Optional[list] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", nargs="+", default=["cnn1024", "resnet50"],
                   choices=["cnn64", "cnn1024", "resnet50", "encoder"])
    p.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    p.add_argument("--by-op", action="store_true", help="saved activations by op")
    p.add_argument("--quick", action="store_true", help="tiny sizes (a test runs it)")
    p.add_argument("--gpu", action="store_true",
                   help="also bind on gpu(0): measured MiB and cuDNN's workspace among them")
    a = p.parse_args(argv)
    print("planned device MiB of a training step (CUDA lowering on the CPU)\n")
    gpu_cols = " GPU measured | cuDNN workspace |" if a.gpu else ""
    print(f"| work | dtype | params+grads | saved | temps | workspace | arena | total |{gpu_cols}")
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if a.gpu else ""))
    for key in a.rows:
        for dt in a.dtypes:
            f = measure(key, dt == "bf16", a.quick)
            name = rows(a.quick)[key].name
            print(f"| {name} | {dt} | {f.params_grads / MIB:.1f} | {f.saved / MIB:.1f} | "
                  f"{f.temps / MIB:.1f} | {f.workspace / MIB:.1f} | {f.arena / MIB:.1f} | "
                  f"{f.total / MIB:.1f} |", end="")
            if a.gpu:
                taken, ws = measured_mib(key, dt == "bf16")
                print(f" {taken:.0f} | {ws:.1f} |", end="")
            print(flush=True)
            if a.by_op:
                for op, b in f.saved_by_op.most_common(12):
                    print(f"|   saved: {op} | | | {b / MIB:.1f} | | | | |")


if __name__ == "__main__":
    main()
