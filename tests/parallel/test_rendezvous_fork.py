"""A rank forked while another thread of its parent imports what the rendezvous needs.

``socket.getaddrinfo`` encodes the host with the ``idna`` codec, whose module is imported on
the first call. A process forked while another thread runs that import inherits the import's
module lock held by a thread the child does not have, so a child whose first ``getaddrinfo``
happens in the rendezvous waited on that lock forever (rank 0 never listened, its peers never
reported). Here the parent's import is held open on purpose, so the fork lands inside it
every time."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ._procs import free_port

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: this process imported the codec long ago.
SCRIPT = r"""
import importlib.abc, importlib.machinery, os, socket, sys, threading, time
from symgraph.training.parallel.launch import WorldInfo
from symgraph.training.parallel.rendezvous import Rendezvous, RendezvousError

inside, release = threading.Event(), threading.Event()

class HeldLoader(importlib.abc.Loader):
    # executes encodings.idna only once the child has been forked
    def __init__(self, inner): self.inner = inner
    def create_module(self, spec): return None
    def exec_module(self, module):
        inside.set()
        release.wait(20)
        self.inner.exec_module(module)

class Held(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "encodings.idna":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = HeldLoader(spec.loader)
        return spec

sys.meta_path.insert(0, Held())
lookup = threading.Thread(target=socket.getaddrinfo, args=("127.0.0.1", 1), daemon=True)
lookup.start()
while lookup.is_alive() and not inside.is_set():  # the lookup ends at once if the codec
    time.sleep(0.01)                               # was imported before: nothing is held
pid = os.fork()
if pid == 0:  # rank 1 of 2; nobody listens, so it must give up within its 0.5 s
    world = WorldInfo(1, 2, 1, "127.0.0.1", int(sys.argv[1]), "torchrun")
    try:
        Rendezvous(world, timeout=0.5).connect()
    except RendezvousError:
        os._exit(0)
    os._exit(1)
deadline = time.monotonic() + 10
while (ended := os.waitpid(pid, os.WNOHANG)) == (0, 0):
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        sys.exit("the child hung in the rendezvous")
    time.sleep(0.05)
release.set()
print("the child gave up in time, exit code", os.waitstatus_to_exitcode(ended[1]))
"""


def test_rank_forked_during_a_codec_import_is_not_stuck() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SYMGRAPH_JOB_KEY": "k" * 32}
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(free_port())], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "the child gave up in time, exit code 0" in run.stdout, (
        run.returncode, run.stdout, run.stderr[-3000:])
