"""benchmarks/memory_plan.py at tiny sizes: one table row per model and dtype whose total is
the sum of its parts, and the residual network's saved activations are convolution outputs
only once rematerialisation runs (BatchNorm/ReLU outputs are recomputed)."""
from __future__ import annotations

from benchmarks import memory_plan
from symgraph.core import config


def test_quick_table_adds_up(capsys) -> None:
    memory_plan.main(["--quick", "--rows", "cnn64", "resnet50", "--dtypes", "fp32"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    rows = [ln for ln in lines if "fp32" in ln]
    assert len(rows) == 2, lines
    for row in rows:
        cells = [float(c) for c in row.strip("| ").split(" | ")[2:]]
        params, saved, temps, workspace, arena, total = cells
        assert saved + temps <= arena + 0.1 and arena > 0
        assert abs(params + arena + workspace - total) < 0.2, row


def test_saved_activations_are_convolution_outputs() -> None:
    with config.override("SYMGRAPH_REMAT", "1"):
        f = memory_plan.measure("resnet50", False, True)
    kinds = {op for op in f.saved_by_op if not op.endswith("]")}  # (outputs 0: no statistics)
    assert "Convolution" in kinds and kinds <= {"Convolution", "Pooling", "SoftmaxOutput"}, \
        f.saved_by_op
