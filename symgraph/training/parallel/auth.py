"""The job key and the handshake by which rank 0 and another rank prove it to each other.

Every rank of a job holds the same secret, ``SYMGRAPH_JOB_KEY`` (``symgraph launch`` makes one;
under torchrun, mpirun or SLURM the user exports it). It never crosses the network: each side
sends a fresh random nonce and an HMAC-SHA256 over both nonces, its role and the claimed
rank and world size; the other side recomputes it and compares in constant time.

::

    rank 0 (listens)                              rank r (dials)
      HELLO  magic, version, nonce0        --->
                                           <---   PROOF  magic, r, size, nonce_r,
                                                         HMAC(key, "rank" nonce0 nonce_r r size)
      ACCEPT "OK", HMAC(key, "zero" nonce_r nonce0 r size)  --->   (or "NO" + reason)

A stranger without the key can neither pass as a rank (its PROOF fails) nor as rank 0 (its
ACCEPT fails); replaying an old exchange fails because the other side's nonce is new. The role
labels keep one side's proof from being reflected as the other's.

Example::

    >>> proof(b"k" * 16, b"rank", b"a" * 32, b"b" * 32, 1, 2) == \\
    ...     proof(b"k" * 16, b"rank", b"a" * 32, b"b" * 32, 1, 2)
    True
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
import struct

from ...core import config
from ...core.base import AttrError
from .wire import recv_msg, send_msg

MAGIC = b"SGRV"
VERSION = 2
NONCE = 32
HANDSHAKE_CAP = 256  # bytes: the longest handshake message (a refusal's reason)
KEY_ENV = "SYMGRAPH_JOB_KEY"
_HELLO = struct.Struct("<4sB32s")
_PROOF = struct.Struct("<4sii32s32s")


class AuthFailed(Exception):
    """The other side did not prove the job key, or spoke another protocol."""


class Refused(Exception):
    """Rank 0 checked this rank's proof and refused it; the message says why."""


def job_key() -> bytes:
    """The job key from ``SYMGRAPH_JOB_KEY``; AttrError naming it when unset (never its value).

    Example::

        >>> import os; os.environ["SYMGRAPH_JOB_KEY"] = "0123456789abcdef"
        >>> job_key()
        b'0123456789abcdef'
        >>> del os.environ["SYMGRAPH_JOB_KEY"]
    """
    key = config.get(KEY_ENV)
    if key is None:
        raise AttrError(
            f"{KEY_ENV} is not set; the ranks of a multi-process job prove a "
            f"shared secret to each other at the rendezvous. 'symgraph launch' sets it; with "
            f"torchrun, mpirun (-x {KEY_ENV}) or srun export the same value on every rank, "
            f"e.g. export {KEY_ENV}=$(python3 -c 'import secrets; print(secrets.token_hex(32))')")
    return key.encode()


def new_key() -> str:
    """A fresh job key (64 hex digits, 256 random bits)."""
    return secrets.token_hex(32)


def proof(key: bytes, role: bytes, first: bytes, second: bytes, rank: int, size: int) -> bytes:
    """HMAC-SHA256 of ``role``, both nonces and the claimed rank and world size."""
    message = role + first + second + struct.pack("<ii", rank, size)
    return hmac.new(key, message, hashlib.sha256).digest()


def serve(conn: socket.socket, key: bytes, deadline: float) -> tuple[int, int, bytes]:
    """Rank 0's side, part one: send HELLO, check the PROOF. ``(rank, size, nonce_r)`` of a
    peer that knows ``key``; AuthFailed (nothing more is sent) for anything else."""
    mine = secrets.token_bytes(NONCE)
    send_msg(conn, _HELLO.pack(MAGIC, VERSION, mine), deadline)
    data = recv_msg(conn, HANDSHAKE_CAP, deadline)
    if len(data) != _PROOF.size:
        raise AuthFailed(f"a proof of {len(data)} bytes, not {_PROOF.size}")
    magic, rank, size, theirs, mac = _PROOF.unpack(data)
    if magic != MAGIC or not hmac.compare_digest(
            mac, proof(key, b"rank", mine, theirs, rank, size)):
        refuse(conn, f"its proof of {KEY_ENV} failed at rank 0: the keys differ", deadline)
        raise AuthFailed("wrong job key or not a symgraph rank")
    return rank, size, theirs + mine


def accept(conn: socket.socket, key: bytes, rank: int, size: int, nonces: bytes,
           deadline: float) -> None:
    """Rank 0's side, part two: prove the key back to the rank that proved it."""
    theirs, mine = nonces[:NONCE], nonces[NONCE:]
    send_msg(conn, b"OK" + proof(key, b"zero", theirs, mine, rank, size), deadline)


def refuse(conn: socket.socket, reason: str, deadline: float) -> None:
    """Rank 0's side: tell a rank that proved the key why it cannot join."""
    send_msg(conn, b"NO" + reason.encode()[:HANDSHAKE_CAP - 2], deadline)


def dial(conn: socket.socket, key: bytes, rank: int, size: int, deadline: float) -> None:
    """A rank's side: answer HELLO with a PROOF and check rank 0's ACCEPT. AuthFailed when
    the listener is not this job's rank 0; Refused when rank 0 refused this rank."""
    data = recv_msg(conn, HANDSHAKE_CAP, deadline)
    if len(data) != _HELLO.size:
        raise AuthFailed(f"a greeting of {len(data)} bytes, not {_HELLO.size}")
    magic, version, theirs = _HELLO.unpack(data)
    if magic != MAGIC or version != VERSION:
        raise AuthFailed(f"a greeting {magic!r} version {version}, not {MAGIC!r} {VERSION}")
    mine = secrets.token_bytes(NONCE)
    send_msg(conn, _PROOF.pack(MAGIC, rank, size, mine,
                               proof(key, b"rank", theirs, mine, rank, size)), deadline)
    answer = recv_msg(conn, HANDSHAKE_CAP, deadline)
    if answer[:2] == b"NO":
        raise Refused(answer[2:].decode(errors="replace"))
    if answer[:2] != b"OK" or not hmac.compare_digest(
            answer[2:], proof(key, b"zero", mine, theirs, rank, size)):
        raise AuthFailed("its answer does not prove the job key")
