"""The CUDA compile cache verifies what it finds. Entries carry a sha256 checked before
use (damaged ones are recompiled); the folder is created 0700 and a folder others can write or
that belongs to another user is refused with a warning; failed writes leave nothing behind.

The cache is exercised through ``compiler.cached`` with a fake compiler (no GPU, no nvcc); one
test runs real nvcc where it is installed.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from symgraph.core import fileio
from symgraph.runtime.cuda import compiler

ROOT = Path(__file__).resolve().parents[2]
KEY_A, KEY_B = hashlib.sha256(b"a").hexdigest(), hashlib.sha256(b"b").hexdigest()


def _cubin(key: str) -> bytes:
    return b"\x7fELF fake cubin for " + key.encode() * 50


class FakeCompiler:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, key: str):
        def compile_fn() -> bytes:
            self.calls.append(key)
            return _cubin(key)
        return compile_fn


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SYMGRAPH_CACHE_DIR", str(folder))
    (tmp_path / "tmp").mkdir()  # the fallback goes under the temp folder: one per test
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return folder


def test_hit_miss_and_entry_format(cache: Path) -> None:
    fake = FakeCompiler()
    assert compiler.cached(KEY_A, fake(KEY_A)) == _cubin(KEY_A)
    assert compiler.cached(KEY_A, fake(KEY_A)) == _cubin(KEY_A)
    assert fake.calls == [KEY_A]  # second call served from disk
    raw = (cache / f"{KEY_A}.cubin").read_bytes()
    assert raw[:8] == b"SGCUBIN1" and raw[8:40] == hashlib.sha256(_cubin(KEY_A)).digest()


@pytest.mark.parametrize("damage", ["truncate", "empty", "flip", "replace", "old_format"])
def test_damaged_entry_is_recompiled_not_loaded(damage: str, cache: Path) -> None:
    fake = FakeCompiler()
    compiler.cached(KEY_A, fake(KEY_A))
    entry = cache / f"{KEY_A}.cubin"
    raw = entry.read_bytes()
    entry.write_bytes({"truncate": raw[:len(raw) // 2], "empty": b"",
                       "flip": raw[:-1] + bytes([raw[-1] ^ 1]),
                       "replace": raw[:40] + b"\x7fELF planted code" + raw[56:],
                       "old_format": _cubin(KEY_A)}[damage])  # unverifiable bare cubin
    assert compiler.cached(KEY_A, fake(KEY_A)) == _cubin(KEY_A)
    assert fake.calls == [KEY_A, KEY_A]
    assert compiler.read_entry(entry) == _cubin(KEY_A)  # repaired on disk


def test_folder_created_private(cache: Path) -> None:
    old = os.umask(0o022)
    try:
        compiler.cached(KEY_A, FakeCompiler()(KEY_A))
    finally:
        os.umask(old)
    assert cache.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_folder_writable_by_others_is_refused(mode: int, cache: Path) -> None:
    cache.mkdir()
    body = b"\x7fELF attacker"  # a *valid* entry: the hash cannot protect an open folder
    (cache / f"{KEY_B}.cubin").write_bytes(
        b"SGCUBIN1" + hashlib.sha256(body).digest() + body)
    os.chmod(cache, mode)
    fake = FakeCompiler()
    with pytest.warns(RuntimeWarning, match=rf"{cache} has mode {mode:o}: other users can "
                                            rf"write to it; using .* instead"):
        got = compiler.cached(KEY_B, fake(KEY_B))
    assert got == _cubin(KEY_B) and fake.calls == [KEY_B]
    assert (cache / f"{KEY_B}.cubin").read_bytes().endswith(body)  # their folder untouched
    fallback = compiler.cache_dir()
    assert fallback == cache.parent / "tmp" / f"symgraph-cache-{os.getuid()}"
    assert fallback.stat().st_mode & 0o777 == 0o700
    assert compiler.cached(KEY_B, fake(KEY_B)) == _cubin(KEY_B) and len(fake.calls) == 1


def test_folder_of_another_user_is_refused(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.mkdir(mode=0o700)
    real = os.getuid()
    monkeypatch.setattr(compiler.os, "getuid", lambda: real + 4242)
    with pytest.warns(RuntimeWarning, match=rf"{cache} belongs to user id {real}, not to this "
                                            rf"user \({real + 4242}\)"):
        folder = compiler.cache_dir()
    assert folder != cache


def test_planted_fallback_folder_is_refused_too(cache: Path) -> None:
    """Someone pre-creates the shared fallback name open to all: a fresh private folder."""
    cache.mkdir()
    os.chmod(cache, 0o777)
    shared = cache.parent / "tmp" / f"symgraph-cache-{os.getuid()}"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.warns(RuntimeWarning, match="other users can write"):
        folder = compiler.cache_dir()
    assert folder not in (cache, shared) and folder.parent == shared.parent
    assert folder.stat().st_mode & 0o777 == 0o700


def test_failed_write_leaves_no_tmp(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.mkdir(mode=0o700)

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(fileio.os, "fsync", full_disk)
    with pytest.warns(RuntimeWarning, match=f"could not write {cache}/{KEY_A}.cubin"):
        assert compiler.cached(KEY_A, FakeCompiler()(KEY_A)) == _cubin(KEY_A)
    assert list(cache.iterdir()) == []


def test_key_must_be_a_digest(cache: Path) -> None:
    with pytest.raises(compiler.ExecutionError, match="not a hex digest"):
        compiler.cached("../../etc/passwd", FakeCompiler()("x"))


CHILD = textwrap.dedent("""
    import sys, time
    from symgraph.runtime.cuda import compiler
    key, log = sys.argv[1], sys.argv[2]
    def compile_fn():
        with open(log, "a") as f:
            f.write(key + "\\n")
        time.sleep(0.3)  # both processes are inside the compiler at once
        return b"\\x7fELF fake cubin for " + key.encode() * 50
    sys.stdout.buffer.write(compiler.cached(key, compile_fn))
""")


def _run_pair(keys: list[str], log: Path, env: dict) -> list[bytes]:
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, k, str(log)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE) for k in keys]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    return outs


def test_two_processes_then_damage(cache: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    log = tmp_path / "compiles.log"
    assert _run_pair([KEY_A, KEY_A], log, env) == [_cubin(KEY_A)] * 2  # same key at once
    assert _run_pair([KEY_B], log, env) == [_cubin(KEY_B)]
    assert sorted(p.name for p in cache.iterdir()) == sorted([f"{KEY_A}.cubin", f"{KEY_B}.cubin"])
    log.write_text("")
    entry_a, entry_b = cache / f"{KEY_A}.cubin", cache / f"{KEY_B}.cubin"
    entry_a.write_bytes(entry_a.read_bytes()[:30])  # truncated
    entry_b.write_bytes(entry_b.read_bytes()[:40] + b"\x7fELF replaced")  # replaced
    outs = _run_pair([KEY_A, KEY_B, KEY_A, KEY_B], log, env)
    assert outs == [_cubin(KEY_A), _cubin(KEY_B)] * 2
    assert set(log.read_text().split()) == {KEY_A, KEY_B}  # both damaged entries recompiled
    log.write_text("")
    assert _run_pair([KEY_A, KEY_B], log, env) == [_cubin(KEY_A), _cubin(KEY_B)]
    assert log.read_text() == ""  # repaired entries are served without compiling
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_real_nvcc_truncated_cubin_is_recompiled(cache: Path) -> None:
    src = 'extern "C" __global__ void k_cache_probe(float* y) { y[0] = 2.f; }\n'
    calls = compiler.NVCC_CALLS
    first = compiler.compile_module(src, "sm_90")
    assert first[:4] == b"\x7fELF" and compiler.NVCC_CALLS == calls + 1
    (entry,) = cache.glob("*.cubin")
    entry.write_bytes(entry.read_bytes()[:100])
    assert compiler.compile_module(src, "sm_90") == first
    assert compiler.NVCC_CALLS == calls + 2
    assert compiler.compile_module(src, "sm_90") == first and compiler.NVCC_CALLS == calls + 2
