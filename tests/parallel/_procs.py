"""Helpers: run a function as ranks 0..n-1 in forked processes with a torchrun-style env."""
from __future__ import annotations

import faulthandler
import multiprocessing as mp
import os
import queue as queue_mod
import secrets
import signal
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn: Callable, rank: int, size: int, port: int, queue: Any, args: tuple,
           key: str, log: str) -> None:
    # stderr to a file of this rank, so that a rank dying without a report explains itself;
    # SIGUSR1 dumps every thread's stack there (the parent sends it to a rank that hangs)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    faulthandler.enable(sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGUSR1, sys.stderr, all_threads=True)
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(rank),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                       "SYMGRAPH_JOB_KEY": key})
    try:
        queue.put((rank, "ok", fn(rank, *args)))
    except BaseException as exc:  # reported to the parent, which asserts on it
        queue.put((rank, "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def _lost(rank: int, proc: Any, log: str, hung: bool) -> tuple[str, str]:
    """``('lost', text)`` of a rank that never reported: how it ended, and its stderr."""
    code = proc.exitcode
    how = ("hung: its stacks were dumped, then it was killed" if hung
           else f"exit code {code}" if code is not None and code >= 0
           else f"killed by {signal.Signals(-code).name}" if code is not None else "unknown")
    with open(log, errors="replace") as f:
        err = f.read()
    if len(err) > 5000:  # a stack dump lists the newest frames first, a traceback last
        err = f"{err[:3500]}\n[...]\n{err[-1500:]}"
    return "lost", f"rank {rank} sent no report: {how}; stderr:\n{err}"


def _stop(procs: list, logs: list, out: dict, ranks: list) -> None:
    """Join every rank; one still alive dumps its stacks (SIGUSR1), then is killed; a rank
    that never reported gets a ``('lost', ...)`` entry in ``out``."""
    for p, log, rank in zip(procs, logs, ranks):
        p.join(5 if rank in out else 1)  # one that reported may still be flushing its queue
        hung = p.is_alive()
        if hung:
            os.kill(p.pid, signal.SIGUSR1)
            time.sleep(0.5)
            p.kill()
            p.join(5)
        if rank not in out:
            out[rank] = _lost(rank, p, log, hung)
        os.unlink(log)


@dataclass
class Started:
    """Ranks forked by :func:`start_ranks`, for :func:`collect`."""

    procs: list
    logs: list
    ranks: list
    queue: Any


def start_ranks(fn: Callable, size: int, *args: Any, ranks: Any = None, port: int = 0,
                key: str = "") -> Started:
    """Fork the ranks of :func:`run_ranks` and return at once. Fork before starting any other
    thread here: a fork while another thread imports or holds a lock leaves the child waiting
    on it forever."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    port = port or free_port()
    key = key or secrets.token_hex(16)
    ranks = list(range(size) if ranks is None else ranks)
    logs = []
    for r in ranks:
        fd, path = tempfile.mkstemp(prefix=f"rank{r}-", suffix=".err")
        os.close(fd)
        logs.append(path)
    procs = [ctx.Process(target=_child, args=(fn, r, size, port, queue, args, key, log))
             for r, log in zip(ranks, logs)]
    for p in procs:
        p.start()
    return Started(procs, logs, ranks, queue)


def collect(started: Started, timeout: float = 60.0) -> dict:
    """What :func:`run_ranks` returns, of ranks started by :func:`start_ranks`."""
    out: dict = {}
    deadline = time.monotonic() + timeout
    try:  # until every started rank answered, or died without answering
        while len(out) < len(started.procs) and time.monotonic() < deadline:
            try:
                rank, status, value = started.queue.get(timeout=0.2)
                out[rank] = (status, value)
            except queue_mod.Empty:
                if not any(p.is_alive() for p in started.procs) and started.queue.empty():
                    break
    finally:
        _stop(started.procs, started.logs, out, started.ranks)
    return out


def run_ranks(fn: Callable, size: int, *args: Any, ranks: Any = None,
              timeout: float = 60.0, port: int = 0, key: str = "") -> dict:
    """``{rank: ('ok', result) | ('error', text) | ('lost', text)}`` of ``fn(rank, *args)`` in
    each process (``lost``: the rank died or hung without a report; the text has its exit
    code or signal and stderr); ``ranks`` limits which ranks are started (the others never
    arrive). The ranks share a fresh job key (or ``key``) and meet on a free port (or
    ``port``)."""
    return collect(start_ranks(fn, size, *args, ranks=ranks, port=port, key=key), timeout)
