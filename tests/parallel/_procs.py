"""Helpers: run a function as ranks 0..n-1 in forked processes with a torchrun-style env."""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import secrets
import socket
import time
import traceback
from typing import Any, Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn: Callable, rank: int, size: int, port: int, queue: Any, args: tuple,
           key: str) -> None:
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(rank),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                       "SYMGRAPH_JOB_KEY": key})
    try:
        queue.put((rank, "ok", fn(rank, *args)))
    except BaseException as exc:  # reported to the parent, which asserts on it
        queue.put((rank, "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def run_ranks(fn: Callable, size: int, *args: Any, ranks: Any = None,
              timeout: float = 60.0, port: int = 0, key: str = "") -> dict:
    """``{rank: ('ok', result) | ('error', text)}`` of ``fn(rank, *args)`` in each process;
    ``ranks`` limits which ranks are started (the others never arrive). The ranks share a
    fresh job key (or ``key``) and meet on a free port (or ``port``)."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    port = port or free_port()
    key = key or secrets.token_hex(16)
    procs = [ctx.Process(target=_child, args=(fn, r, size, port, queue, args, key))
             for r in (range(size) if ranks is None else ranks)]
    for p in procs:
        p.start()
    out: dict = {}
    deadline = time.monotonic() + timeout
    try:  # until every started rank answered, or died without answering
        while len(out) < len(procs) and time.monotonic() < deadline:
            try:
                rank, status, value = queue.get(timeout=0.2)
                out[rank] = (status, value)
            except queue_mod.Empty:
                if not any(p.is_alive() for p in procs) and queue.empty():
                    break
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
    return out
