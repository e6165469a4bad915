"""``sg.profiler``: MXNet's profiler API over symgraph's schedules.

    sg.profiler.set_config(filename="profile.json", profile_all=True)
    sg.profiler.set_state("run")
    ... train ...
    sg.profiler.set_state("stop")
    sg.profiler.dump()          # Chrome-trace JSON: chrome://tracing, ui.perfetto.dev
    print(sg.profiler.dumps())  # aggregate table

While the state is ``'run'`` every schedule step an executor runs becomes one complete event
(``"ph": "X"``) named by the user-level nodes and ops it runs (``fc1 (FullyConnected) + relu1
(Activation)``, ``d relu1 (Activation)`` for gradient steps; see ``provenance.py``), with its
op, node, phase and step index in ``args``. The CPU backend times each step on the host; the
CUDA backend runs a profiled range eagerly (no CUDA graph replay) between CUDA events and
reports device time. With the ``nvtx`` package installed each step is also an NVTX range
(domain ``symgraph``) for Nsight Systems. Lazily compiled ``sg.nd`` work runs through the same
executors, so ``profile_symbolic`` and ``profile_imperative`` record the same events.
"""
from __future__ import annotations

from .objects import Counter, Domain, Event, Frame, Marker, Task
from .recorder import (add_step, dump, dumps, events, host_range, now_us,  # noqa: F401
                       nvtx_range, pause, record, recording, reset_for_tests, resume,
                       run_host_timed, set_config, set_state, state, step_names)

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps", "events",
           "Domain", "Task", "Frame", "Event", "Counter", "Marker"]
