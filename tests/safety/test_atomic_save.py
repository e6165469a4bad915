"""Every file symgraph writes goes through one atomic helper (symgraph.core.fileio).

A failing writer or a SIGKILL mid-save leaves the previous file intact; killed saves' temporary
files are removed by the next save of the same path; new files get the umask's permissions.
"""
from __future__ import annotations

import ast
import fcntl
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import fileio

PACKAGE = Path(sg.__file__).resolve().parent


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _net() -> sg.sym.Symbol:
    return sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc")


def _params(value: float, n: int = 3) -> dict:
    return {"fc_weight": sg.nd.full((n, 4), value), "fc_bias": sg.nd.full((n,), value)}


# -- every writer, one failure mode each: the rename fails after everything was written ------

def _writers(tmp: Path) -> dict[str, tuple[Path, Callable[[], None]]]:
    mod = sg.mod.Module(_net(), label_names=None)
    mod.bind([("data", (2, 4))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"momentum": 0.9})
    return {
        "nd.save": (tmp / "a.nd", lambda: sg.nd.save(str(tmp / "a.nd"), [sg.nd.ones(3)])),
        "Symbol.save": (tmp / "s.json", lambda: _net().save(str(tmp / "s.json"))),
        "model.save_checkpoint": (tmp / "m-0001.params", lambda: sg.model.save_checkpoint(
            str(tmp / "m"), 1, None, _params(1.0), {})),
        "Module.save_params": (tmp / "p.params", lambda: mod.save_params(str(tmp / "p.params"))),
        "Module.save_checkpoint states": (tmp / "c-0001.states", lambda: mod.save_checkpoint(
            str(tmp / "c"), 1, save_optimizer_states=True)),
        "fileio.write_text": (tmp / "t.dot", lambda: fileio.write_text(tmp / "t.dot", "x")),
    }


@pytest.mark.parametrize("writer", ["nd.save", "Symbol.save", "model.save_checkpoint",
                                    "Module.save_params", "Module.save_checkpoint states",
                                    "fileio.write_text"])
def test_failed_write_keeps_previous_file(writer: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    target, write = _writers(tmp_path)[writer]
    target.write_bytes(b"previous contents")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(fileio.os, "replace", broken_replace)
    with pytest.raises(sg.DataError, match=f"cannot write {tmp_path}/.*: No space left on device"):
        write()
    assert target.read_bytes() == b"previous contents"
    assert _temps(tmp_path) == []


def test_exception_inside_writer_keeps_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "x.params"
    sg.nd.save(str(target), {"w": sg.nd.ones(4)})
    before = target.read_bytes()

    def write(f) -> None:
        f.write(b"half of a file")
        raise KeyboardInterrupt  # even BaseException cleans up
    with pytest.raises(KeyboardInterrupt):
        fileio.atomic_write(target, write)
    assert target.read_bytes() == before and _temps(tmp_path) == []


def test_missing_folder_names_the_file(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "x.params"
    with pytest.raises(sg.DataError, match=f"cannot write {target}: No such file or directory"):
        sg.nd.save(str(target), [sg.nd.ones(2)])
    with pytest.raises(sg.DataError, match=f"cannot write {tmp_path}: it is a folder"):
        sg.nd.save(str(tmp_path), [sg.nd.ones(2)])


def test_no_writer_bypasses_the_helper() -> None:
    """Static check over the package: no direct file writes outside fileio.py (the nvcc scratch
    source in a private TemporaryDirectory and the nvcc call log are the only exceptions)."""
    allowed = {("runtime/cuda/compiler.py", "run_nvcc"),  # nvcc's scratch folder and its call log
               ("training/plot.py", "plot_history"),  # savefig into atomic_write's file object
               ("training/image/record_slots.py", "create")}  # a batch's scratch memory map
    found = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "core/fileio.py":
            continue
        tree = ast.parse(path.read_text())
        funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_write(node):
                around = [f for f in funcs if f.lineno <= node.lineno <= f.end_lineno]
                name = max(around, key=lambda f: f.lineno).name if around else "<module>"
                if (rel, name) not in allowed:
                    found.append(f"{rel}:{node.lineno} in {name}")
    assert not found, f"direct file writes: {sorted(set(found))}"


def _is_write(call: ast.Call) -> bool:
    """Calls that write a file without fileio: numpy/json/pickle savers, pathlib writes,
    matplotlib's savefig, ndarray.tofile, tempfile/os file creation, open() for writing.
    symgraph's own savers (``nd.save``, ``Symbol.save``, ``ParameterDict.save``...) end in
    fileio and are not listed."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    owner = f.value if isinstance(f, ast.Attribute) else None
    owner_name = getattr(owner, "id", getattr(owner, "attr", ""))
    if name in ("save", "dump", "savez", "savez_compressed"):
        return owner_name in ("np", "numpy", "json", "pickle", "torch", "marshal")
    if name in ("write_text", "write_bytes"):  # bare names are fileio's, imported
        return owner is not None and owner_name != "fileio"
    if name in ("savefig", "tofile", "mkstemp", "NamedTemporaryFile", "fdopen"):
        return True
    if name == "open" and len(call.args) > 1:
        mode = call.args[1]
        return isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+")
    return False


# -- permissions and stale temporary files ---------------------------------------------------

@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_get_umask_permissions(umask: int, tmp_path: Path) -> None:
    old = os.umask(umask)
    try:
        sg.nd.save(str(tmp_path / "a.params"), [sg.nd.ones(2)])
        _net().save(str(tmp_path / "a.json"))
    finally:
        os.umask(old)
    for name in ("a.params", "a.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~umask


def test_next_save_removes_dead_temps_only(tmp_path: Path) -> None:
    target = tmp_path / "m.params"
    dead = tmp_path / ".m.params.999999.deadbeef.tmp"
    dead.write_bytes(b"x" * 1000)
    live = tmp_path / ".m.params.1.cafecafe.tmp"
    live.write_bytes(b"in progress")
    other = tmp_path / ".other.params.5.00000000.tmp"  # another target's temp: not ours
    other.write_bytes(b"")
    longer = tmp_path / ".m.params.x.12.deadbeef.tmp"  # target m.params.x, same prefix
    longer.write_bytes(b"")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a writer still at work holds it
        sg.nd.save(str(target), [sg.nd.ones(2)])
    finally:
        os.close(fd)
    assert not dead.exists() and live.exists() and other.exists() and longer.exists()
    fifo = tmp_path / ".m.params.7.0badf1f0.tmp"  # a planted FIFO would block a plain open
    os.mkfifo(fifo)
    sg.nd.save(str(target), [sg.nd.ones(2)])
    assert fifo.exists()
    assert isinstance(sg.nd.load(str(target)), list)


# -- the kill test ---------------------------------------------------------------------------

def _child(prefix: str, version: int, ready) -> None:  # runs in a forked process
    sym = _net()
    sg.model.save_checkpoint(prefix, 1, sym, _params(float(version), 64), {})
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:  # a slow disk: the kill lands inside the save
        time.sleep(1.0)  # 4 fsyncs per checkpoint: seconds of margin over the kill's delay
        real_fsync(fd)
    fileio.os.fsync = slow_fsync
    ready.set()
    sg.model.save_checkpoint(prefix, 1, sym, _params(float(version + 1), 64), {})
    os._exit(3)  # not reached when the kill lands in time


def test_sigkill_mid_save_twenty_times(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    prefix = str(tmp_path / "ck")
    rng = random.Random(0)
    for version in range(0, 40, 2):
        ready = ctx.Event()
        proc = ctx.Process(target=_child, args=(prefix, version, ready))
        proc.start()
        assert ready.wait(30), "child did not reach its second save"
        time.sleep(rng.uniform(0.0, 0.35))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
        sym, arg, _ = sg.model.load_checkpoint(prefix, 1)  # the previous checkpoint loads
        assert sym.list_arguments() == ["data", "fc_weight", "fc_bias"]
        for v in arg.values():  # ... whole: every array from the last completed save
            np.testing.assert_array_equal(v.asnumpy(), np.full(v.shape, float(version)))
        temps = _temps(tmp_path)
        assert len(temps) <= 1, temps  # only the last killed save's temporary file
        assert all(t.startswith((".ck-0001.params.", ".ck-symbol.json.")) for t in temps)
