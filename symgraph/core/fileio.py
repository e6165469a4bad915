"""Every file symgraph writes goes through :func:`atomic_write`; every file it reads through
:func:`read_limited`.

Writing: the bytes go to a temporary file in the target's folder (``.<name>.<pid>.<random>.tmp``),
created with mode 0666 so the process umask decides the permissions as for any new file (a file
that already exists keeps its mode: a 0600 checkpoint stays 0600); the temporary file is
flushed and fsynced, renamed over the target (atomic on POSIX) and the folder is fsynced so the
rename itself survives a crash. On any exception the temporary file is removed and the previous
file is untouched. A process killed mid-write cannot clean up, so each save
first removes the temporary files that earlier saves of the *same* path left behind. A writer
holds an exclusive ``flock`` on its temporary file while it works, so a save never removes the
temporary file of another save still in progress (the kernel drops the lock of a killed process).
A target that is a symbolic link is written through: the new file replaces the link's final
target (the temporary file lives in the target's folder, so the rename stays atomic) and the
link itself stays.

Reading: :func:`read_limited` reads a whole file after checking its size against a bound, and
:func:`file_size` gives loaders the number from which their own limits follow (a header cannot
claim more elements than the file has bytes).
"""
from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path
from typing import IO, Callable, Union

from .base import DataError

try:  # POSIX; elsewhere stale temporary files are kept rather than risking a live one
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

PathLike = Union[str, "os.PathLike[str]"]
TMP_SUFFIX = ".tmp"
_TMP_TAIL = re.compile(r"\d+\.[0-9a-f]{8}\.tmp")  # <pid>.<random>.tmp after ".<name>."


def _tmp_prefix(target: Path) -> str:
    return f".{target.name}."


def _try_lock(fd: int) -> bool:
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def remove_stale_temps(target: PathLike) -> list[str]:
    """Remove temporary files of earlier saves of ``target`` whose writer is gone (killed):
    those nobody holds a lock on. Returns the removed paths."""
    target = Path(target)
    folder = target.parent if str(target.parent) else Path(".")
    prefix = _tmp_prefix(target)
    removed = []
    try:
        names = [n for n in os.listdir(folder)
                 if n.startswith(prefix) and _TMP_TAIL.fullmatch(n[len(prefix):])]
    except OSError:
        return removed
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    for name in names:
        path = folder / name
        try:  # only plain files: a planted FIFO or link is neither opened nor removed
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            fd = os.open(path, flags)
        except OSError:
            continue
        try:
            if _try_lock(fd):
                os.unlink(path)
                removed.append(str(path))
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on folders; the rename is still atomic
    finally:
        os.close(fd)


def _create_temp(target: Path, folder: Path) -> tuple[Path, int]:
    """A new locked temporary file beside ``target``. A concurrent cleaner may lock and remove
    a file between its creation and our lock; then the path no longer names our file, so retry."""
    for _ in range(8):
        tmp = folder / f"{_tmp_prefix(target)}{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        locked = _try_lock(fd) or fcntl is None
        try:
            if locked and os.path.samestat(os.fstat(fd), os.stat(tmp)):
                return tmp, fd
        except OSError:
            pass
        os.close(fd)
    raise DataError(f"cannot create a temporary file beside {target}: another process keeps "
                    f"removing it")


def atomic_write(target: PathLike, write: Callable[[IO[bytes]], None]) -> None:
    """Create or replace ``target`` with what ``write(f)`` writes to a binary file object.

    Either the complete new file is in place afterwards, or the previous file is untouched and
    no temporary file remains: an OSError (no folder, no permission, disk full) becomes a
    DataError naming ``target``; any other exception of ``write`` propagates as it is."""
    target = Path(os.path.realpath(target)) if os.path.islink(target) else Path(target)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise DataError(f"cannot write {target}: it is a folder")
    remove_stale_temps(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None  # a new file: the umask decides
    try:
        tmp, fd = _create_temp(target, folder)
    except OSError as exc:
        raise DataError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(os.dup(fd), "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise DataError(f"cannot write {target}: {exc.strerror or exc}") from exc
        raise
    finally:
        os.close(fd)  # releases the lock
    _fsync_dir(folder)


def write_bytes(target: PathLike, data: bytes) -> None:
    """:func:`atomic_write` of a byte string."""
    atomic_write(target, lambda f: f.write(data))


def write_text(target: PathLike, text: str) -> None:
    """:func:`atomic_write` of UTF-8 text."""
    write_bytes(target, text.encode("utf-8"))


def file_size(fname: PathLike, what: str = "file") -> int:
    """The size of a regular file; DataError naming it if it is missing or not a file."""
    try:
        st = os.stat(fname)
    except FileNotFoundError:
        raise DataError(f"{what} {fname} not found") from None
    except OSError as exc:
        raise DataError(f"{what} {fname} cannot be read: {exc.strerror or exc}") from None
    if not os.path.isfile(fname):
        raise DataError(f"{what} {fname} is not a regular file")
    return st.st_size


def read_limited(fname: PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of ``fname``, refusing files over ``limit`` bytes before reading them."""
    size = file_size(fname, what)
    if size > limit:
        raise DataError(f"{what} {fname} is {size} bytes, more than the {limit} allowed")
    try:
        with open(fname, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise DataError(f"{what} {fname} cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise DataError(f"{what} {fname} grew past {limit} bytes while being read")
    return data
