"""The numpy reference backend: runs a schedule step by step with each op's numpy reference."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..registry import RunCtx, get_op
from ..schedule import Schedule


class NumpyProgram:
    """A schedule ready to run on the CPU. ``env`` holds one array per slot."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self._kernels = [(get_op(s.node.op).compute, s.node.attrs, s.inputs, s.outputs)
                         for s in schedule.steps]

    def new_env(self) -> list[Any]:
        return [None] * len(self.schedule.shapes)

    def run(self, env: list[Any], start: int, stop: int, ctx: RunCtx) -> None:
        """Run steps ``start:stop``, reading and writing ``env``."""
        dtypes = self.schedule.dtypes
        for compute, attrs, ins, outs in self._kernels[start:stop]:
            results = compute(attrs, [env[i] for i in ins], ctx)
            for slot, value in zip(outs, results):
                value = np.asarray(value)
                if value.dtype != dtypes[slot]:
                    value = value.astype(dtypes[slot])
                env[slot] = value

    def read(self, env: list[Any], slot: int) -> np.ndarray:
        return env[slot]

    def store(self, env: list[Any], slot: int, target: Any, accumulate: bool) -> None:
        """Write slot ``slot`` into NDArray ``target`` (``+=`` when ``accumulate``)."""
        if accumulate:
            target._data += env[slot]
        else:
            np.copyto(target._data, env[slot])

    def bind_input(self, env: list[Any], slot: int, array: Any) -> None:
        env[slot] = array._data


def compile(schedule: Schedule, ctx: Any = None) -> NumpyProgram:  # noqa: A001 (interface name)
    """The backend interface: a runnable program for ``schedule`` (``ctx`` is the CPU)."""
    return NumpyProgram(schedule)
