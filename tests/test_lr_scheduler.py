"""``sg.lr_scheduler``: warm-up on every scheduler, Poly and Cosine, against hand-computed
values and MXNet 1.9.1 run live (marked ``mxnet``)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError

from .mxnet_live import mxnet_json

WARM = {"warmup_steps": 4, "warmup_begin_lr": 0.02}
CASES = {
    "factor": ("FactorScheduler", {"step": 3, "factor": 0.5, "base_lr": 0.1, **WARM}),
    "multifactor": ("MultiFactorScheduler", {"step": [5, 8], "factor": 0.1, "base_lr": 0.1,
                                             **WARM}),
    "poly": ("PolyScheduler", {"max_update": 12, "base_lr": 0.1, "pwr": 2, "final_lr": 0.01,
                               **WARM}),
    "cosine": ("CosineScheduler", {"max_update": 12, "base_lr": 0.1, "final_lr": 0.01,
                                   **WARM}),
    "cosine_constant": ("CosineScheduler", {"max_update": 10, "base_lr": 0.1,
                                            "warmup_mode": "constant", **WARM}),
}
UPDATES = list(range(0, 16))


def _rates(case: str) -> list[float]:
    cls, kw = CASES[case]
    sched = {"FactorScheduler": sg.lr_scheduler.FactorScheduler,
             "MultiFactorScheduler": sg.lr_scheduler.MultiFactorScheduler,
             "PolyScheduler": sg.lr_scheduler.PolyScheduler,
             "CosineScheduler": sg.lr_scheduler.CosineScheduler}[cls](**kw)
    return [sched(n) for n in UPDATES]


def test_hand_computed_values() -> None:
    lin = [0.02 + (0.1 - 0.02) * n / 4 for n in range(4)]  # linear warm-up
    poly = [0.01 + 0.09 * (1 - (n - 4) / 8) ** 2 for n in range(4, 13)]
    np.testing.assert_allclose(_rates("poly"), lin + poly + [0.01] * 3, rtol=1e-12)
    cosine = [0.01 + 0.09 * (1 + math.cos(math.pi * (n - 4) / 8)) / 2 for n in range(4, 13)]
    np.testing.assert_allclose(_rates("cosine"), lin + cosine + [0.01] * 3, rtol=1e-12)
    assert _rates("cosine_constant")[:4] == [0.02] * 4
    # factor: halves once num_update passes 3, 6, 9, 12, 15 (counted from 0)
    assert _rates("factor")[4:] == pytest.approx([0.05] * 3 + [0.025] * 3 + [0.0125] * 3
                                                + [0.00625] * 3)
    assert _rates("multifactor")[4:] == pytest.approx([0.1, 0.1] + [0.01] * 3 + [0.001] * 7)


def test_bad_arguments_are_attr_errors() -> None:
    with pytest.raises(AttrError, match="warmup_mode"):
        sg.lr_scheduler.PolyScheduler(10, warmup_mode="cubic")
    with pytest.raises(AttrError, match="warmup_begin_lr=0.5 is above base_lr=0.1"):
        sg.lr_scheduler.FactorScheduler(2, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(AttrError, match="max_update"):
        sg.lr_scheduler.CosineScheduler(0)
    with pytest.raises(AttrError, match="warmup_steps"):
        sg.lr_scheduler.CosineScheduler(5, warmup_steps=-1)


def test_optimizer_takes_base_lr_from_scheduler() -> None:
    sched = sg.lr_scheduler.CosineScheduler(10, base_lr=0.5)
    opt = sg.optimizer.create("nag", lr_scheduler=sched)
    assert opt.learning_rate == 0.5


MX_SCRIPT = r"""
import json, sys
import mxnet as mx
cases, updates = json.loads(sys.stdin.read())
out = {}
for key, (cls, kw) in cases.items():
    sched = getattr(mx.lr_scheduler, cls)(**kw)
    out[key] = [sched(n) for n in updates]
print(json.dumps(out))
"""


@pytest.mark.mxnet
def test_schedules_match_mxnet() -> None:
    mx = mxnet_json(MX_SCRIPT, [CASES, UPDATES])
    for case in CASES:
        np.testing.assert_allclose(_rates(case), mx[case], rtol=1e-12, err_msg=case)
