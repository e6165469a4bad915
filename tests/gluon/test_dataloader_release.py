"""Dropping a DataLoader of worker processes mid-epoch returns (MXNet's
test_multi_worker_dataloader_release_pool): its batches are larger than a pipe's buffer, so
workers were still writing them when ``Pool.terminate`` stopped the reader, and it hung."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dropping_a_loader_with_batches_in_flight_returns() -> None:
    script = textwrap.dedent("""
        import numpy as np, symgraph as sg
        for _ in range(5):
            data = np.random.rand(400, 4000)  # a batch of 8 rows: 256 KB, over the pipe's 64
            loader = sg.gluon.data.DataLoader(data, batch_size=8, num_workers=6)
            batches = iter(loader)
            first = next(batches)
            assert first.shape == (8, 4000)
            del batches, loader
        print("OK")
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out.stderr[-2000:]
