"""``benchmarks/real_size.py``: its quick CPU run binds every row (the classifiers with
labels, the encoder without) and prints a positive step time for each."""
from __future__ import annotations

import pytest

from benchmarks import real_size


def test_quick_run_prints_every_row(capsys: pytest.CaptureFixture) -> None:
    real_size.main(["--quick", "--rows", "cnn64", "encoder"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")][1:]
    assert [ln.split("|")[1].split()[0] for ln in lines] == ["seed", "encoder"]
    assert all(float(ln.split("|")[3]) > 0 for ln in lines)
