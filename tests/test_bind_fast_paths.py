"""Bind time: the short paths a bind takes (plain output shapes recorded directly,
slot names only for errors, entries made with the node, rule answers remembered per input
record, arrays allocated without a copy) give what the general paths give."""
from __future__ import annotations

import random

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import attrs as core_attrs
from symgraph.core.types import table as typetable
from symgraph.core.base import DTypeError, ShapeError
from symgraph.core.graph import Entry, Node, variable
from symgraph.core.types import infer_shape
from symgraph.core.registry import get_op
from symgraph.core.types.table import TypeTable

S = sg.sym


def _random_net(rng: random.Random) -> S.Symbol:
    """Elementwise, broadcast, FullyConnected, reshapes, reductions and a two-output split."""
    pool = [S.var("a"), S.var("b"), S.var("c")]
    for k in range(rng.randint(3, 12)):
        a, b = rng.choice(pool), rng.choice(pool)
        pick = rng.randrange(9)
        if pick == 0:
            pool.append(a + b)
        elif pick == 1:
            pool.append(S.tanh(a) * 2.0)
        elif pick == 2:
            pool.append(S.FullyConnected(a, num_hidden=4, name=f"fc{k}"))
        elif pick == 3:
            pool.append(S.broadcast_mul(a, S.sum(b, axis=1, keepdims=True)))
        elif pick == 4:
            pool.append(S.Reshape(a, shape=(0, -1)))
        elif pick == 5:
            halves = S.SliceChannel(a, num_outputs=2, axis=1, name=f"sc{k}")
            pool.append(halves[0] - halves[1] * 0.5)
        elif pick == 6:
            pool.append(S.zeros_like(a) + b)
        elif pick == 7:  # a 0 from a rule: unknown in symbol inference, empty in a bind
            pool.append(S.zeros(shape=(0, 4)) if rng.random() < 0.5
                        else S.zeros(shape=(0, 4)) + a)
        else:  # a PartialShape from a rule
            pool.append(S.ones(shape=(-1, 4)) * a)
    return S.Group(rng.sample(pool[3:], min(2, len(pool) - 3)))


def _given(rng: random.Random, partial: bool) -> dict:
    """Shapes for a, b, c (a 0 is an unknown dimension when ``partial``)."""
    full = {"a": (2, 4), "b": (2, 4), "c": (2, 4)}
    if partial:
        full[rng.choice("abc")] = (0, 4)
    return full


@pytest.mark.parametrize("seed", range(40))
def test_plain_output_shapes_are_recorded_as_the_general_path_records_them(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    net = _random_net(rng)
    given = _given(rng, partial=seed % 3 == 0)

    def infer(exact: bool) -> object:
        try:
            return infer_shape.infer_partial_shapes(net.graph(), given, exact)
        except ShapeError as exc:  # some random graphs do not fit: the same error both ways
            return str(exc)
    got = [infer(exact) for exact in (False, True)]
    monkeypatch.setattr(infer_shape, "_put_plain", lambda *_: False)  # the general path only
    assert got == [infer(exact) for exact in (False, True)]


def test_output_shapes_past_the_size_limit_still_raise_with_the_node() -> None:
    x = S.var("x")
    with pytest.raises(ShapeError, match=r"tl \(tile\): output: shape .* more than"):
        S.tile(x, reps=(2 ** 31, 2 ** 31), name="tl").infer_shape(x=(3,))


def test_a_dtype_conflict_names_the_slot_and_both_dtypes() -> None:
    c = S.Cast(S.var("x", dtype="float16"), dtype="float32", name="c")
    net = S.elemwise_add(c, S.var("y", dtype="float16"), name="add")
    with pytest.raises(DTypeError, match=r"^add \(elemwise_add\): rhs has dtype float16, "
                                         r"but lhs has float32; cast rhs"):
        net.infer_type()


def test_dtypes_from_a_non_default_rule_reach_undeclared_variables_before_the_default(
        ) -> None:
    # no variable declares a dtype: the default-rule nodes are skipped until one is known
    net = S.tanh(S.sigmoid(S.var("x")) + S.zeros(shape=(2,), dtype="float16"))
    args, outs, _ = net.infer_type()
    assert args == [np.float16] and outs == [np.float16]


@pytest.mark.parametrize("op, attrs, n_in", [("tanh", {}, 1), ("broadcast_add", {}, 2),
                                             ("SliceChannel", {"num_outputs": 3}, 1)])
def test_entries_made_with_the_node_are_the_ones_its_op_gives(op: str, attrs: dict,
                                                               n_in: int) -> None:
    opdef = get_op(op)
    parsed = core_attrs.parse_attrs(opdef.params, attrs, op)
    ins = tuple(Entry(variable(f"v{i}")) for i in range(n_in))
    asked = Node(op, "n", parsed, ins)  # entries made on first ask, from the op
    given = Node(op, "n", parsed, ins, n_outputs=opdef.num_outputs(parsed))
    assert [e.index for e in given.entries()] == [e.index for e in asked.entries()]
    assert all(e.node is given for e in given.entries())


def test_rule_answers_are_remembered_per_input_shape_and_dtype(monkeypatch) -> None:
    calls = []
    real = typetable.forward_types
    monkeypatch.setattr(typetable, "forward_types",
                        lambda n, s, t: calls.append(n.name) or real(n, s, t))
    v32, v16, w32 = variable("v32"), variable("v16"), variable("w32")
    table = TypeTable({Entry(v): (2, 3) for v in (v32, v16, w32)},
                      {Entry(v32): np.dtype("float32"), Entry(v16): np.dtype("float16"),
                       Entry(w32): np.dtype("float32")})
    nodes = [Node("tanh", name, inputs=(Entry(v),), n_outputs=1)
             for name, v in (("t32", v32), ("t16", v16), ("u32", w32))]
    assert [table.dtype(Entry(n)) for n in nodes] == [np.float32, np.float16, np.float32]
    assert all(table.shape(Entry(n)) == (2, 3) for n in nodes)
    assert calls == ["t32", "t16"]  # u32's input has t32's record: its answer is remembered
    other = Node("tanh", "wide", inputs=(Entry(variable("w")),), n_outputs=1)
    table.add(Entry(other.inputs[0].node), (4,), np.float32)
    assert table.shape_dtype(Entry(other)) == ((4,), np.dtype("float32"))


def test_simple_bind_arrays_are_zero_and_each_owns_its_memory() -> None:
    net = S.FullyConnected(S.var("data"), num_hidden=3, name="fc")
    exe = net.simple_bind(sg.cpu(), grad_req="write", data=(2, 5),
                          type_dict={"data": "float16"})
    arrays = exe.arg_arrays + [g for g in exe.grad_arrays if g is not None] + exe.outputs
    hosts = [a.asnumpy() for a in arrays]
    assert all(h.dtype == np.float16 and not h.any() for h in hosts)
    bufs = [a._data for a in arrays]
    assert not any(np.shares_memory(p, q) for i, p in enumerate(bufs) for q in bufs[i + 1:])


@pytest.mark.parametrize("make, value", [(lambda s, t: sg.nd.zeros(s, dtype=t), 0.0),
                                         (lambda s, t: sg.nd.ones(s, dtype=t), 1.0),
                                         (lambda s, t: sg.nd.full(s, 2.5, dtype=t), 2.5)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_creation_functions_give_fresh_arrays_of_their_value(make, value: float,
                                                             dtype: str) -> None:
    a, b = make((3, 2), dtype), make((3, 2), dtype)
    want = np.full((3, 2), value, dtype=np.dtype(dtype))
    assert a.dtype == np.dtype(dtype) and np.array_equal(a.asnumpy(), want)
    a[:] = 7
    assert np.array_equal(b.asnumpy(), want)  # b's memory is its own
    assert not np.shares_memory(a._data, b._data)
