"""Backends execute schedules: ``numpy_backend`` on the CPU, ``symgraph.cuda`` on GPUs.

A backend module offers ``FORWARD_PIPELINE`` (the passes it wants before autodiff) and
``compile(schedule, ctx) -> Program``; ``compile.build_stage`` picks the module by device type
(``compile.BACKENDS``) and knows nothing else about it.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from ...core.registry import RunCtx


class Program(Protocol):
    """A compiled schedule. ``env`` is the backend's own per-run state (slot buffers)."""

    def new_env(self) -> Any:
        """Fresh run state with every planned buffer placed."""

    def bind_input(self, env: Any, slot: int, array: Any) -> None:
        """Let ``slot`` be the bound NDArray ``array`` (no copy)."""

    def bind_inputs(self, env: Any, pairs: Sequence[tuple[int, Any]]) -> None:
        """:meth:`bind_input` of each ``(slot, array)`` (one call per run, not per array)."""

    def run(self, env: Any, start: int, stop: int, ctx: RunCtx, tail: Any = None) -> None:
        """Run steps ``start:stop``; then ``tail`` (extra backend work reading the run's slots:
        the fused optimizer update), in the same run (one CUDA graph on the GPU)."""

    def store(self, env: Any, slot: int, target: Any, accumulate: bool) -> None:
        """Write ``slot`` into NDArray ``target`` (``+=`` when ``accumulate``)."""

    def store_all(self, env: Any, items: Sequence[tuple[int, Any, bool]]) -> None:
        """:meth:`store` of each ``(slot, target, accumulate)``."""

    def read(self, env: Any, slot: int) -> np.ndarray:
        """A host copy of ``slot``."""

    def time_steps(self, env: Any, start: int, stop: int, ctx: RunCtx,
                   repeat: int = 1) -> list[tuple]:
        """(step index, op, node name, milliseconds) of each step, run one at a time; with
        ``repeat``, each step runs that many times back to back and the mean is reported
        (on a GPU: the kernels' throughput without a synchronisation per launch)."""
