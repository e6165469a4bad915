"""Helpers for the gluon tests: run a block imperatively and hybridized."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg


def run_both(block: Any, *inputs: np.ndarray, train: bool = False) -> tuple:
    """``block`` on ``inputs`` imperatively, then hybridized (same parameters): numpy outputs."""
    arrays = [sg.nd.array(x, dtype=x.dtype) for x in inputs]

    def once() -> np.ndarray:
        if train:
            with sg.autograd.record():
                out = block(*arrays)
        else:
            out = block(*arrays)
        return out.asnumpy()
    first = once()
    block.hybridize()
    second = once()
    block.hybridize(False)
    return first, second


@pytest.fixture
def both():
    return run_both
