"""symgraph's registry against MXNet 1.9.1's public op list (tests/data/mxnet_ops/, written by
its make_list.py under MXNet): every op is registered (or an alias), or listed in
departures.tsv with its status and reason; refused ops fail by name with that reason."""
from __future__ import annotations

import os

import pytest

import symgraph as sg
from symgraph.core.base import GraphError
from symgraph.core.registry import has_op, refused

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "mxnet_ops")
STATUSES = {"departure", "refused", "todo"}


def _rows(name: str) -> list[list[str]]:
    with open(os.path.join(HERE, name)) as f:
        return [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]


MXNET = {r[0]: r[1] for r in _rows("mxnet_ops.txt")}
DEPARTURES = {r[0]: (r[1], r[2]) for r in _rows("departures.tsv")}


def test_the_list_is_mxnets() -> None:
    assert len(MXNET) > 350 and "Convolution" in MXNET
    assert MXNET["_contrib_fft"] == "contrib.fft" and MXNET["_linalg_gemm"] == "linalg.gemm"
    assert not any(n.startswith(("_np", "_sparse_", "_backward_")) for n in MXNET)


def test_every_public_op_is_registered_or_listed() -> None:
    missing = sorted(n for n in MXNET if not has_op(n) and n not in DEPARTURES)
    assert not missing, f"MXNet ops neither registered nor in departures.tsv: {missing}"


def test_departures_are_current() -> None:
    """A listed op that is now registered (or not MXNet's) must leave the table."""
    stale = sorted(n for n in DEPARTURES if has_op(n) or n not in MXNET)
    assert not stale, f"departures.tsv lists ops that are registered or not MXNet's: {stale}"
    assert all(s in STATUSES and why for s, why in DEPARTURES.values())


def test_refused_ops_fail_by_name() -> None:
    listed = sorted(n for n, (s, _) in DEPARTURES.items() if s == "refused")
    assert listed == sorted(refused())
    with pytest.raises(GraphError, match="quantize_v2.*not supported: int8"):
        sg.sym.load_json('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": '
                         '"_contrib_quantize_v2", "name": "q", "inputs": [[0, 0, 0]]}], '
                         '"arg_nodes": [0], "heads": [[1, 0, 0]]}')


def test_parity_doc_shows_the_departures() -> None:
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs",
                           "mxnet_parity.md")) as f:
        doc = f.read()
    absent = sorted(n for n, (s, _) in DEPARTURES.items()
                    if s in ("departure", "refused") and MXNET[n] not in doc)
    assert not absent, f"docs/mxnet_parity.md does not name {absent}"
