"""The compiled CPU backend's allocator policy (``cpu/memory.py``): after it, freeing and
allocating a large array again maps no new pages; ``SYMGRAPH_CPU_KEEP_FREED=0`` leaves glibc's
defaults. Each case runs in a fresh process (the thresholds are the process's)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import resource, numpy as np
from symgraph.runtime.cpu import memory
kept = memory.keep_freed()
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(10):
    if i == 5:
        start = faults()
    a = np.ones(1 << 24, np.float32)  # 64 MiB, past glibc's default mmap threshold
    del a
print(kept, repr(memory.why_not()), faults() - start)
"""


def _run(flag: str) -> tuple[str, str, int]:
    env = {**os.environ, "SYMGRAPH_CPU_KEEP_FREED": flag}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    return out[0], " ".join(out[1:-1]), int(out[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_memory_is_reused_without_new_page_faults() -> None:
    kept, why, faults = _run("1")
    off, why_off, faults_off = _run("0")
    if kept != "True":
        pytest.skip(f"not glibc: {why}")
    assert why == "''" and faults == 0, (why, faults)
    assert off == "False" and "SYMGRAPH_CPU_KEEP_FREED=0" in why_off
    assert faults_off > 0  # glibc's default maps each 64 MiB array afresh
