"""Rendezvous of the ranks at ``MASTER_ADDR:MASTER_PORT``, over TCP.

Rank 0 listens; every other rank connects (retrying until the deadline, since rank 0 may start
later) and introduces itself with its rank and the world size it was told. Rank 0 waits until
every rank arrived; on the deadline it raises :class:`RendezvousError` naming the ranks that did
not. The connections stay open: rank 0 then sends the NCCL unique id (or any bytes) to each,
the host communicator sums through them, and a closed connection tells a rank which peer died.

Message framing: an 8-byte little-endian length, then the bytes. Hello: ``SGRV`` + rank + size.
"""
from __future__ import annotations

import select
import socket
import struct
import time
from typing import Optional

from .. import config
from ..base import ExecutionError
from .launch import WorldInfo

MAGIC = b"SGRV"
DEFAULT_TIMEOUT: float = config.SETTINGS["SYMGRAPH_DIST_TIMEOUT"].default


class RendezvousError(ExecutionError):
    """A rank did not arrive, died or sent something unexpected; ``ranks`` names them."""

    def __init__(self, message: str, ranks: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.ranks = ranks


class Rendezvous:
    """The open connections of one rank: rank 0 holds one per other rank, others one to 0."""

    def __init__(self, world: WorldInfo, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.world = world
        self.timeout = float(timeout)
        self.peers: dict[int, socket.socket] = {}
        self._listener: Optional[socket.socket] = None

    @property
    def where(self) -> str:
        return f"{self.world.master_addr}:{self.world.master_port}"

    # -- connecting ----------------------------------------------------------------------------
    def connect(self) -> "Rendezvous":
        """Meet every rank (rank 0) or rank 0 (others) before ``timeout`` seconds pass."""
        if self.world.size == 1:
            return self
        if self.world.rank == 0:
            self._accept_all(time.monotonic() + self.timeout)
        else:
            self._dial(time.monotonic() + self.timeout)
        return self

    def _accept_all(self, deadline: float) -> None:
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            lst.bind(("", self.world.master_port))
        except OSError as exc:
            lst.close()
            raise RendezvousError(f"rendezvous: rank 0 cannot listen on port "
                                  f"{self.world.master_port} ({exc})", (0,)) from None
        lst.listen(self.world.size)
        self._listener = lst
        want = set(range(1, self.world.size))
        while want - set(self.peers):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([lst], [], [], left)[0]:
                missing = tuple(sorted(want - set(self.peers)))
                self.close()
                raise RendezvousError(
                    f"rendezvous at {self.where}: rank(s) {list(missing)} of world size "
                    f"{self.world.size} did not arrive within {self.timeout:g} s "
                    f"(launcher: {self.world.launcher})", missing)
            conn, _ = lst.accept()
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            self._greet(conn)

    def _greet(self, conn: socket.socket) -> None:
        try:
            hello = _recv_exact(conn, 12)
        except (OSError, EOFError):
            conn.close()
            return
        magic, rank, size = hello[:4], *struct.unpack("<ii", hello[4:])
        if magic != MAGIC or size != self.world.size or not 0 < rank < size \
                or rank in self.peers:
            conn.close()
            self.close()
            raise RendezvousError(
                f"rendezvous at {self.where}: a peer introduced itself as rank {rank} of "
                f"{size} (magic {magic!r}); this job has world size {self.world.size} and "
                f"ranks {sorted(self.peers)} arrived already", (rank,))
        conn.settimeout(None)
        self.peers[rank] = conn

    def _dial(self, deadline: float) -> None:
        addr = (self.world.master_addr, self.world.master_port)
        last: Exception = TimeoutError()
        while time.monotonic() < deadline:
            try:
                conn = socket.create_connection(addr, timeout=max(0.1, deadline -
                                                                  time.monotonic()))
                conn.sendall(MAGIC + struct.pack("<ii", self.world.rank, self.world.size))
                conn.settimeout(None)
                self.peers[0] = conn
                return
            except OSError as exc:
                last = exc
                time.sleep(0.05)
        raise RendezvousError(
            f"rendezvous: rank {self.world.rank} could not reach rank 0 at {self.where} "
            f"within {self.timeout:g} s ({last}); rank 0 did not arrive", (0,))

    # -- messages ------------------------------------------------------------------------------
    def send(self, rank: int, payload: bytes) -> None:
        """Send ``payload`` to ``rank``; a broken connection raises naming it."""
        try:
            self.peers[rank].sendall(struct.pack("<Q", len(payload)) + payload)
        except OSError as exc:
            raise RendezvousError(f"rank {self.world.rank}: rank {rank} is gone ({exc})",
                                  (rank,)) from None

    def recv(self, rank: int, timeout: Optional[float] = None) -> bytes:
        """The next message from ``rank``; a closed connection or the timeout (the
        rendezvous's by default) raises :class:`RendezvousError` naming ``rank``."""
        conn = self.peers[rank]
        conn.settimeout(self.timeout if timeout is None else timeout)
        try:
            (n,) = struct.unpack("<Q", _recv_exact(conn, 8))
            return _recv_exact(conn, n)
        except socket.timeout:
            raise RendezvousError(f"rank {self.world.rank}: rank {rank} sent nothing within "
                                  f"{conn.gettimeout():g} s", (rank,)) from None
        except (OSError, EOFError) as exc:
            raise RendezvousError(f"rank {self.world.rank}: rank {rank} closed its "
                                  f"connection ({exc or 'end of stream'}); it died or left",
                                  (rank,)) from None

    def broadcast(self, payload: Optional[bytes] = None) -> bytes:
        """Rank 0's ``payload`` on every rank (the NCCL unique id exchange)."""
        if self.world.rank == 0:
            for rank in sorted(self.peers):
                self.send(rank, payload or b"")
            return payload or b""
        return self.recv(0)

    def dead_peers(self) -> tuple[int, ...]:
        """Peers whose connection has closed (without blocking): a rank that died."""
        dead = []
        for rank, conn in self.peers.items():
            readable = select.select([conn], [], [], 0)[0]
            if readable:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        dead.append(rank)
                except OSError:
                    dead.append(rank)
        return tuple(sorted(dead))

    def close(self) -> None:
        for conn in self.peers.values():
            conn.close()
        self.peers.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = conn.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("end of stream")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
