"""run_ranks says how a rank that never reported ended: exit code, signal or hang, with its
stderr (and the stacks of a hung rank), so that a failing multi-process test explains itself."""
from __future__ import annotations

import os
import signal
import sys
import time

from ._procs import run_ranks


def _ends_badly(rank: int) -> str:
    print(f"rank {rank} is leaving", file=sys.stderr, flush=True)
    if rank == 0:
        os._exit(3)
    if rank == 1:
        os.kill(os.getpid(), signal.SIGTERM)
    if rank == 2:
        time.sleep(60)
    return "reported"


def test_ranks_that_die_or_hang_are_described() -> None:
    tic = time.monotonic()
    out = run_ranks(_ends_badly, 4, timeout=1.5)
    assert out[3] == ("ok", "reported")
    assert [out[r][0] for r in range(3)] == ["lost"] * 3, out
    assert "exit code 3" in out[0][1] and "rank 0 is leaving" in out[0][1]
    assert "killed by SIGTERM" in out[1][1] and "rank 1 is leaving" in out[1][1]
    assert "hung" in out[2][1] and "rank 2 is leaving" in out[2][1]
    assert "in _ends_badly" in out[2][1], out[2][1]  # the hung rank's stack
    assert time.monotonic() - tic < 6.0
