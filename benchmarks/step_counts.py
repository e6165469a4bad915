"""The steps of a model's CUDA training program, counted by op, lowered on the CPU (no GPU).

The training step (forward + backward) is bound for the CPU context with the CUDA backend's
passes and lowering (``ir_fingerprint.cuda_lowering``), so the counts are those of the program
the GPU would run: one line per op, with its steps and kernel launches (a step may launch
several: a GEMM and its epilogue). ``--bf16`` converts the model with
``sg.amp.convert_symbol(target_dtype="bfloat16")`` first; ``--quick`` uses the encoder's tiny
sizes (``encoder_step.QUICK``).

    PYTHONPATH=. python3 benchmarks/step_counts.py encoder --bf16 [--quick]
    PYTHONPATH=. python3 benchmarks/step_counts.py resnet20 --bf16

Example::

    >>> counts = step_counts(*model("encoder", quick=True), bf16=True)
    >>> counts["amp_multicast"], counts["_backward_Cast"]
    (0, 4)
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402
from benchmarks.ir_fingerprint import cuda_lowering  # noqa: E402
from symgraph.runtime.cuda.actions import (ConvCall, Copy, Fill, Gemm, Kernel,  # noqa: E402
                                           flat_actions)

DEVICE_WORK = (Kernel, Gemm, ConvCall, Copy, Fill)
"""What counts as a launch: kernels, library calls, device copies and fills."""


def _encoder(quick: bool) -> tuple[Any, dict]:
    from benchmarks.encoder_step import QUICK, Sizes, encoder_symbol
    s = QUICK if quick else Sizes()
    return encoder_symbol(s), {"data": (s.batch, s.seq, s.model)}


def _resnet20(quick: bool) -> tuple[Any, dict]:
    from benchmarks.amp_step import RESNET_BATCH, resnet_symbol
    return resnet_symbol(), {"data": (8 if quick else RESNET_BATCH, 3, 32, 32)}


def _simple_cnn(quick: bool) -> tuple[Any, dict]:
    from symgraph.interop.models import simple_cnn
    return simple_cnn.build(), {"data": (8 if quick else 64, 1, 28, 28)}


MODELS: dict[str, Callable[[bool], tuple[Any, dict]]] = {
    "encoder": _encoder, "resnet20": _resnet20, "simple_cnn": _simple_cnn}


def model(name: str, quick: bool = False) -> tuple[Any, dict]:
    """(symbol, data shapes) of a model of :data:`MODELS`."""
    if name not in MODELS:
        raise sg.AttrError(f"step_counts: unknown model {name!r}; one of {sorted(MODELS)}")
    return MODELS[name](quick)


def lowered_program(sym: Any, shapes: dict, bf16: bool = False) -> tuple[Any, Any]:
    """(schedule, CUDA program) of ``sym``'s training step (no gradient for the data)."""
    if bf16:
        sym = sg.amp.convert_symbol(sym, target_dtype="bfloat16")
    reqs = {n: ("null" if n in shapes else "write") for n in sym.list_arguments()}
    with cuda_lowering():
        stage = sym.simple_bind(sg.cpu(), grad_req=reqs, **shapes)._train
    return stage.schedule, stage.program


def step_counts(sym: Any, shapes: dict, bf16: bool = False,
                launches: Optional[Counter] = None) -> Counter:
    """Steps of the CUDA training program by op; ``launches`` (if given) gets the kernel
    launches and library calls by op."""
    schedule, program = lowered_program(sym, shapes, bf16)
    counts: Counter = Counter()
    for step, actions in zip(schedule.steps, program.actions):
        counts[step.node.op] += 1
        if launches is not None:
            launches[step.node.op] += sum(isinstance(a, DEVICE_WORK)
                                          for a in flat_actions(actions))
    return counts


def main(argv: Optional[list] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--bf16", action="store_true", help="through sg.amp (bfloat16)")
    ap.add_argument("--quick", action="store_true", help="small sizes")
    a = ap.parse_args(argv)
    launches: Counter = Counter()
    counts = step_counts(*model(a.model, a.quick), bf16=a.bf16, launches=launches)
    print(f"{a.model} {'bf16' if a.bf16 else 'fp32'}: {sum(counts.values())} steps, "
          f"{sum(launches.values())} launches")
    for op, n in counts.most_common():
        print(f"  {n:5d} x {op}  ({launches[op]} launches)")


if __name__ == "__main__":
    main()
