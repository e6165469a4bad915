"""Length-prefixed messages over a socket, with a size cap and a whole-message deadline.

A message is an 8-byte little-endian length, then that many bytes. The receiver refuses a
declared length above its cap *before* reading the body (a peer cannot make it buffer 2**40
bytes), and the deadline bounds the whole message, not each read (a peer trickling one byte
every half second still runs out of time).

Example::

    >>> import socket
    >>> a, b = socket.socketpair()
    >>> send_msg(a, b"hello", deadline_in(1.0))
    >>> recv_msg(b, 16, deadline_in(1.0))
    b'hello'
"""
from __future__ import annotations

import socket
import struct
import time

HEADER = struct.Struct("<Q")


class MessageTooLarge(ValueError):
    """A peer declared a message longer than the receiver accepts."""

    def __init__(self, declared: int, cap: int) -> None:
        super().__init__(f"declared a message of {declared} bytes, more than the {cap} "
                         f"accepted here")
        self.declared, self.cap = declared, cap


class Deadline(TimeoutError):
    """The whole message did not arrive (or leave) before its deadline."""


def deadline_in(seconds: float) -> float:
    """The monotonic time ``seconds`` from now (what the functions here take)."""
    return time.monotonic() + seconds


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Deadline("deadline passed")
    return left


def recv_exact(conn: socket.socket, n: int, deadline: float) -> bytes:
    """Exactly ``n`` bytes; EOFError on a closed stream, :class:`Deadline` past ``deadline``."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        conn.settimeout(_left(deadline))  # the time left, so trickling cannot extend it
        try:
            k = conn.recv_into(view[got:], min(n - got, 1 << 20))
        except socket.timeout:
            raise Deadline("deadline passed") from None
        if k == 0:
            raise EOFError("end of stream")
        got += k
    return bytes(buf)


def recv_msg(conn: socket.socket, cap: int, deadline: float) -> bytes:
    """One message of at most ``cap`` bytes, whole before ``deadline``."""
    (n,) = HEADER.unpack(recv_exact(conn, HEADER.size, deadline))
    if n > cap:
        raise MessageTooLarge(n, cap)
    return recv_exact(conn, n, deadline)


def send_msg(conn: socket.socket, payload: bytes, deadline: float) -> None:
    """Send one message; :class:`Deadline` when the peer does not take it in time."""
    conn.settimeout(_left(deadline))
    try:
        conn.sendall(HEADER.pack(len(payload)) + payload)
    except socket.timeout:
        raise Deadline("deadline passed") from None
