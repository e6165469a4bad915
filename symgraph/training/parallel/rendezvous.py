"""Rendezvous of the ranks at ``MASTER_ADDR:MASTER_PORT``, over TCP (the NCCL bootstrap).

Rank 0 listens on ``MASTER_ADDR``'s interface only; every other rank connects (retrying until
the deadline, since rank 0 may start later). Each connection begins with the job-key handshake
of :mod:`.auth`, run on its own thread so that an idle or slow stranger holds up no one: a
connection that fails it is dropped and the listener keeps accepting until every rank arrived
or the deadline passed. On the deadline :class:`RendezvousError` names the ranks that did not
arrive (and how many connections failed the key check). Once all arrived the listener closes.

The connections stay open: rank 0 sends the NCCL unique id (or any bytes) to each, the ranks
compare their parameter manifests through them, and a closed connection tells a rank which
peer died. Messages are framed by :mod:`.wire`: at most ``MAX_MESSAGE`` bytes each, whole
within the timeout.
"""
from __future__ import annotations

# getaddrinfo encodes the host with the idna codec, importing it on first use; imported here,
# before any rank is forked, so that a rank forked while another thread of its parent runs that
# import does not wait forever on the import's lock (held by a thread the fork did not copy)
import encodings.idna  # noqa: F401
import select
import socket
import threading
import time
from typing import Optional

from ...core import config
from ...core.base import ExecutionError
from . import auth
from .launch import WorldInfo
from .wire import Deadline, MessageTooLarge, deadline_in, recv_msg, send_msg

DEFAULT_TIMEOUT: float = config.SETTINGS["SYMGRAPH_DIST_TIMEOUT"].default
MAX_MESSAGE = 16 << 20  # bytes: the unique id and the manifests are far smaller
HANDSHAKE_S = 10.0  # a genuine rank answers in milliseconds; strangers are cut off after this
MAX_PENDING = 64  # handshakes in flight at once; more connections are closed unread


class RendezvousError(ExecutionError):
    """A rank did not arrive, died or sent something unexpected; ``ranks`` names them."""

    def __init__(self, message: str, ranks: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.ranks = ranks


class _Arrivals:
    """What the handshake threads report to rank 0's accept loop (under ``lock``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending = 0
        self.dropped: list[str] = []
        self.fatal: Optional[RendezvousError] = None
        self.done = False


class Rendezvous:
    """The open connections of one rank: rank 0 holds one per other rank, others one to 0.

    Example (each rank of a job, ``SYMGRAPH_JOB_KEY`` set on all)::

        peers = Rendezvous(world_from_env(), timeout=60).connect()
        uid = peers.broadcast(nccl.unique_id() if peers.world.rank == 0 else None)
    """

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
        key = auth.job_key()
        if self.world.rank == 0:
            self._accept_all(key, deadline_in(self.timeout))
        else:
            self._dial(key, deadline_in(self.timeout))
        return self

    def _listen(self) -> socket.socket:
        """A socket listening on ``MASTER_ADDR``'s address only (not every interface)."""
        addr = (self.world.master_addr, self.world.master_port)
        try:
            family, kind, proto, _, sockaddr = socket.getaddrinfo(
                *addr, type=socket.SOCK_STREAM)[0]
            lst = socket.socket(family, kind, proto)
        except OSError as exc:
            raise RendezvousError(f"rendezvous: MASTER_ADDR={addr[0]!r} does not resolve "
                                  f"({exc})", (0,)) from None
        try:
            lst.bind(sockaddr)
        except OSError as exc:
            lst.close()
            raise RendezvousError(f"rendezvous: rank 0 cannot listen on {self.where} ({exc}); "
                                  f"MASTER_ADDR must be an address of rank 0's host and "
                                  f"MASTER_PORT free", (0,)) from None
        lst.listen(max(16, self.world.size))
        return lst

    def _accept_all(self, key: bytes, deadline: float) -> None:
        self._listener = lst = self._listen()
        arrivals = _Arrivals()
        want = set(range(1, self.world.size))
        try:
            while arrivals.fatal is None and want - self._arrived(arrivals):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if select.select([lst], [], [], min(left, 0.05))[0]:
                    self._start_greeting(lst, key, deadline, arrivals)
            with arrivals.lock:
                arrivals.done = True
        finally:
            lst.close()
            self._listener = None
        missing = tuple(sorted(want - set(self.peers)))
        if arrivals.fatal is not None or missing:
            self.close()
            raise arrivals.fatal or self._missing(missing, arrivals.dropped)

    def _arrived(self, arrivals: _Arrivals) -> set[int]:
        with arrivals.lock:  # the handshake threads add to ``peers``
            return set(self.peers)

    def _missing(self, missing: tuple[int, ...], dropped: list[str]) -> RendezvousError:
        note = (f"; {len(dropped)} connection(s) failed the {auth.KEY_ENV} check and were "
                f"dropped (from {', '.join(sorted(set(dropped))[:4])})" if dropped else "")
        return RendezvousError(
            f"rendezvous at {self.where}: rank(s) {list(missing)} of world size "
            f"{self.world.size} did not arrive within {self.timeout:g} s (launcher: "
            f"{self.world.launcher}){note}", missing)

    def _start_greeting(self, lst: socket.socket, key: bytes, deadline: float,
                        arrivals: _Arrivals) -> None:
        try:
            conn, addr = lst.accept()
        except OSError:
            return
        with arrivals.lock:
            if arrivals.pending >= MAX_PENDING:
                conn.close()  # a flood: the genuine ranks retry
                return
            arrivals.pending += 1
        until = min(deadline, time.monotonic() + HANDSHAKE_S)
        threading.Thread(target=self._greet, args=(conn, addr, key, until, arrivals),
                         daemon=True, name=f"symgraph-rendezvous-{addr}").start()

    def _greet(self, conn: socket.socket, addr: tuple, key: bytes, deadline: float,
               arrivals: _Arrivals) -> None:
        """One connection's handshake; a stranger is dropped, a genuine rank joins."""
        joined = False
        try:
            rank, size, nonces = auth.serve(conn, key, deadline)
            with arrivals.lock:
                problem = self._admit(rank, size)
                if problem is None and not arrivals.done:
                    auth.accept(conn, key, rank, size, nonces, deadline)
                    conn.settimeout(None)
                    self.peers[rank] = conn
                    joined = True
                    return
                if problem is not None:  # it holds the key: a rank of this job, misconfigured
                    arrivals.fatal = arrivals.fatal or RendezvousError(
                        f"rendezvous at {self.where}: {problem}", (rank,))
            if problem is not None:
                auth.refuse(conn, problem, deadline)
        except (auth.AuthFailed, MessageTooLarge, Deadline, EOFError, OSError):
            with arrivals.lock:
                arrivals.dropped.append(str(addr[0]))
        finally:
            with arrivals.lock:
                arrivals.pending -= 1
            if not joined:
                conn.close()

    def _admit(self, rank: int, size: int) -> Optional[str]:
        """None when a rank that proved the key may join, else why not."""
        if size != self.world.size:
            return (f"rank {rank} was told world size {size}; rank 0 has world size "
                    f"{self.world.size}")
        if not 0 < rank < size:
            return f"a peer claims rank {rank}, outside 1..{size - 1}"
        if rank in self.peers:
            return f"two processes claim rank {rank}"
        return None

    def _dial(self, key: bytes, deadline: float) -> None:
        addr = (self.world.master_addr, self.world.master_port)
        last: Exception = TimeoutError()
        while time.monotonic() < deadline:
            try:
                conn = socket.create_connection(addr, timeout=max(0.1, deadline -
                                                                  time.monotonic()))
            except OSError as exc:  # rank 0 is not listening yet
                last = exc
                time.sleep(0.05)
                continue
            try:
                auth.dial(conn, key, self.world.rank, self.world.size, deadline)
            except BaseException as exc:
                conn.close()
                raise self._dial_error(exc) from None
            conn.settimeout(None)
            self.peers[0] = conn
            return
        raise RendezvousError(
            f"rendezvous: rank {self.world.rank} could not reach rank 0 at {self.where} "
            f"within {self.timeout:g} s ({last}); rank 0 did not arrive", (0,))

    def _dial_error(self, exc: BaseException) -> BaseException:
        who = f"rendezvous: rank {self.world.rank}: the listener at {self.where}"
        if isinstance(exc, auth.Refused):
            return RendezvousError(f"{who} refused this rank: {exc}", (0,))
        if isinstance(exc, (auth.AuthFailed, MessageTooLarge, EOFError)):
            return RendezvousError(
                f"{who} did not prove {auth.KEY_ENV} ({exc}): it is not this job's rank 0 "
                f"(another job or a stranger holds the port, or the keys differ)", (0,))
        if isinstance(exc, (Deadline, OSError)):
            return RendezvousError(f"{who} did not complete the handshake within "
                                   f"{self.timeout:g} s ({exc})", (0,))
        return exc

    # -- messages ------------------------------------------------------------------------------
    def send(self, rank: int, payload: bytes) -> None:
        """Send ``payload`` to ``rank`` within the timeout; a broken connection raises naming
        it."""
        try:
            send_msg(self.peers[rank], payload, deadline_in(self.timeout))
        except Deadline:
            raise RendezvousError(f"rank {self.world.rank}: rank {rank} took nothing within "
                                  f"{self.timeout:g} s", (rank,)) from None
        except OSError as exc:
            raise RendezvousError(f"rank {self.world.rank}: rank {rank} is gone ({exc})",
                                  (rank,)) from None

    def recv(self, rank: int, timeout: Optional[float] = None,
             max_bytes: int = MAX_MESSAGE) -> bytes:
        """The next message from ``rank``, whole within ``timeout`` (the rendezvous's by
        default) and at most ``max_bytes`` long; otherwise, or on a closed connection,
        :class:`RendezvousError` naming ``rank``."""
        seconds = self.timeout if timeout is None else timeout
        try:
            return recv_msg(self.peers[rank], max_bytes, deadline_in(seconds))
        except Deadline:
            raise RendezvousError(f"rank {self.world.rank}: rank {rank} sent no whole message "
                                  f"within {seconds:g} s", (rank,)) from None
        except MessageTooLarge as exc:
            raise RendezvousError(f"rank {self.world.rank}: rank {rank} {exc}",
                                  (rank,)) from None
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

    def allgather(self, payload: bytes) -> list[bytes]:
        """Every rank's ``payload``, in rank order, on every rank (through rank 0)."""
        if self.world.size == 1:
            return [payload]
        if self.world.rank != 0:
            self.send(0, payload)
            return [self.recv(0) for _ in range(self.world.size)]
        parts = [payload] + [self.recv(rank) for rank in range(1, self.world.size)]
        for rank in range(1, self.world.size):
            for part in parts:
                self.send(rank, part)
        return parts

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
