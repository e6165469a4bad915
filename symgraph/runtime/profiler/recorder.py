"""The profiler's recorder: its state, the events of schedule steps, and the trace and table
it writes (``sg.profiler``'s functions; see the package)."""
from __future__ import annotations

import contextlib
import json
import time
import weakref
from typing import Any, Callable, Iterator, Optional

from ...core import fileio
from ...core.base import AttrError
from ...core.provenance import op_table, title, user_level

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps", "events"]

# MXNet's set_config keys and our defaults; the unimplemented kinds are refused when turned on.
DEFAULTS: dict[str, Any] = {
    "filename": "profile.json", "profile_all": False, "profile_symbolic": True,
    "profile_imperative": True, "profile_memory": False, "profile_api": False,
    "continuous_dump": False, "dump_period": 1.0, "aggregate_stats": False,
    "profile_process": "worker",
}
UNSUPPORTED = ("profile_memory", "profile_api", "continuous_dump")
STATES = ("run", "stop")
SORT_KEYS = {"total": 2, "avg": 5, "min": 3, "max": 4, "count": 1}

_config: dict[str, Any] = dict(DEFAULTS)
_state = {"running": False, "paused": False, "origin_ns": time.perf_counter_ns()}
_events: list[dict] = []
_names: dict[int, tuple[Any, list[tuple[str, dict]]]] = {}  # id(schedule) -> (weakref, names)


def set_config(**kwargs: Any) -> None:
    """Configure the profiler (MXNet's keys: ``filename``, ``profile_all``, ...)."""
    unknown = sorted(set(kwargs) - set(DEFAULTS))
    if unknown:
        raise AttrError(f"profiler.set_config: unknown keys {unknown}; known: {sorted(DEFAULTS)}")
    for key in UNSUPPORTED:
        if kwargs.get(key):
            raise AttrError(f"profiler.set_config: {key}=True is not implemented by symgraph's "
                            f"profiler (it records schedule steps only)")
    _config.update(kwargs)


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """``'run'`` starts recording, ``'stop'`` stops it (events are kept until dumped)."""
    if state not in STATES:
        raise AttrError(f"profiler.set_state: state={state!r}, expected one of {STATES}")
    if state == "run" and not _state["running"] and not _events:
        _state["origin_ns"] = time.perf_counter_ns()
    _state["running"], _state["paused"] = state == "run", False


def state() -> str:
    """``'run'`` or ``'stop'``."""
    return "run" if _state["running"] else "stop"


def pause(profile_process: str = "worker") -> None:
    """Stop recording until :func:`resume`."""
    _state["paused"] = True


def resume(profile_process: str = "worker") -> None:
    _state["paused"] = False


def recording() -> bool:
    """True while schedule steps should be recorded (backends ask before each run)."""
    return (_state["running"] and not _state["paused"]
            and bool(_config["profile_all"] or _config["profile_symbolic"]
                     or _config["profile_imperative"]))


def now_us() -> float:
    """Microseconds since recording began (the trace's time base)."""
    return (time.perf_counter_ns() - _state["origin_ns"]) / 1000.0


def step_names(schedule: Any) -> list[tuple[str, dict]]:
    """``(event name, args)`` of every step of ``schedule`` (computed once per schedule)."""
    hit = _names.get(id(schedule))
    if hit is not None and hit[0]() is schedule:
        return hit[1]
    nodes = [st.node for st in schedule.steps]
    ops = op_table(nodes)
    out = []
    for k, node in enumerate(nodes):
        parts = user_level(node, ops)
        key = " + ".join(f"{'d ' if bwd else ''}{op}" for _, op, bwd in parts)
        name = title(node, ops)
        if len(parts) == 1 and node.op != parts[0][1]:  # d conv1: which gradient it computes
            name += f" [{node.op}]"
        out.append((name, {
            "step": k, "phase": "forward" if k < schedule.n_forward_steps else "backward",
            "op": node.op, "node": node.name, "ops": key,
            "nodes": [name for name, _, _ in parts]}))
    _names[id(schedule)] = (weakref.ref(schedule), out)
    return out


def record(event: dict) -> None:
    """Append one Chrome-trace event (the annotation objects of ``profiler_objects``)."""
    _events.append(event)


def add_step(schedule: Any, k: int, ts_us: float, dur_us: float, device: str) -> None:
    """Record step ``k`` of ``schedule`` as one complete event."""
    name, args = step_names(schedule)[k]
    _events.append({"name": name, "cat": args["phase"], "ph": "X", "ts": ts_us,
                    "dur": dur_us, "pid": device, "tid": "steps", "args": dict(args)})


def nvtx_range(name: str) -> Any:
    """An NVTX range for ``name`` when ``nvtx`` is installed, else a no-op context."""
    try:
        import nvtx
    except ImportError:
        return contextlib.nullcontext()
    return nvtx.annotate(name, domain="symgraph")


def run_host_timed(schedule: Any, start: int, stop: int, device: str,
                   run_one: Callable[[int], None]) -> None:
    """Run steps ``start:stop`` with ``run_one(k)``, recording host time for each (CPU)."""
    names = step_names(schedule)
    for k in range(start, stop):
        with nvtx_range(names[k][0]):
            t0 = now_us()
            run_one(k)
            t1 = now_us()
        add_step(schedule, k, t0, t1 - t0, device)


@contextlib.contextmanager
def host_range(name: str, device: str, sync: Optional[Callable[[], None]] = None) -> Iterator:
    """Record the enclosed work (an optimizer step: not a schedule step) as one ``update``
    event while recording. ``sync`` waits for the device before and after, so the time covers
    its work, not the launches (the profiled GPU path runs eagerly anyway)."""
    if not recording():
        yield
        return
    with nvtx_range(name):
        if sync is not None:
            sync()
        t0 = now_us()
        yield
        if sync is not None:
            sync()
        t1 = now_us()
    _events.append({"name": name, "cat": "update", "ph": "X", "ts": t0, "dur": t1 - t0,
                    "pid": device, "tid": "steps",
                    "args": {"phase": "update", "ops": name, "nodes": []}})


def _trace() -> dict:
    pids = sorted({e["pid"] for e in _events})
    meta = [{"name": "process_name", "ph": "M", "pid": p, "tid": "steps", "args": {"name": p}}
            for p in pids]
    events = [dict(e, pid=pids.index(e["pid"]), tid=0) for e in _events]
    for m in meta:
        m["pid"], m["tid"] = pids.index(m["pid"]), 0
    return {"traceEvents": meta + events, "displayTimeUnit": "ms",
            "otherData": {"profiler": "symgraph", "config": dict(_config)}}


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the recorded events to ``filename`` as Chrome-trace JSON; with ``finished`` the
    events are cleared afterwards (the next ``set_state('run')`` starts a new trace)."""
    path = _config["filename"]
    fileio.write_text(path, json.dumps(_trace()))
    if finished:
        _events.clear()


def _rows() -> dict[str, list]:
    """``{device: [[key, count, total, min, max, avg] ...]}`` in milliseconds."""
    stats: dict[tuple[str, str], list[float]] = {}
    for e in _events:
        if "dur" not in e:  # counters and markers have no duration
            continue
        stats.setdefault((e["pid"], e["args"]["ops"]), []).append(e["dur"] / 1000.0)
    out: dict[str, list] = {}
    for (dev, key), ms in stats.items():
        out.setdefault(dev, []).append([key, len(ms), sum(ms), min(ms), max(ms),
                                        sum(ms) / len(ms)])
    return out


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",  # noqa: A002
          ascending: bool = False) -> str:
    """Aggregate statistics per device and user-level op: count, total, min, max, average
    milliseconds (MXNet's arguments; ``format`` is ``'table'`` or ``'json'``)."""
    if format not in ("table", "json"):
        raise AttrError(f"profiler.dumps: format={format!r}, expected 'table' or 'json'")
    if sort_by not in SORT_KEYS:
        raise AttrError(f"profiler.dumps: sort_by={sort_by!r}, expected one of "
                        f"{sorted(SORT_KEYS)}")
    rows = _rows()
    for dev in rows:
        rows[dev].sort(key=lambda r: r[SORT_KEYS[sort_by]], reverse=not ascending)
    if reset:
        _events.clear()
    if format == "json":
        cols = ("count", "total_ms", "min_ms", "max_ms", "avg_ms")
        return json.dumps({dev: {r[0]: dict(zip(cols, r[1:])) for r in rs}
                           for dev, rs in rows.items()}, indent=2)
    return _table(rows)


def _table(rows: dict[str, list]) -> str:
    width = max([len(r[0]) for rs in rows.values() for r in rs] + [24]) + 2
    head = f"{'Name':<{width}}{'Total Count':>12}{'Time (ms)':>14}{'Min Time (ms)':>16}" \
           f"{'Max Time (ms)':>16}{'Avg Time (ms)':>16}"
    lines = ["Profile Statistics (symgraph: schedule steps by user-level op; optimizer updates)"]
    for dev, rs in sorted(rows.items()):
        lines += ["", f"Device {dev}", "=" * len(head), head, "-" * len(head)]
        lines += [f"{r[0]:<{width}}{r[1]:>12d}{r[2]:>14.4f}{r[3]:>16.4f}{r[4]:>16.4f}"
                  f"{r[5]:>16.4f}" for r in rs]
    if not rows:
        lines.append("(no events recorded: call set_state('run') before running executors)")
    return "\n".join(lines)


def events() -> list[dict]:
    """The events recorded so far (copies), for tests and custom reports."""
    return [dict(e) for e in _events]


def reset_for_tests(config: Optional[dict] = None) -> None:
    _config.clear()
    _config.update(DEFAULTS, **(config or {}))
    _state["running"] = _state["paused"] = False
    _events.clear()
