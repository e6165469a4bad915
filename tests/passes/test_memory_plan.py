"""memory_plan: no two live values share bytes, in place where allowed, outputs and saved
forward values kept, poisoning catches a plan that frees too early."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from symgraph.runtime.backend import numpy_backend
from symgraph.compiler.memory_plan import ALIGN, lifetimes, memory_plan, slot_bytes
from symgraph.core.registry import RunCtx
from symgraph.compiler.schedule import lower

from .util import declared, random_inputs, run_graph


def _mlp():
    x = sg.sym.var("x")
    h = sg.sym.relu(sg.sym.FullyConnected(x, num_hidden=16, name="fc1"))
    h = sg.sym.tanh(sg.sym.FullyConnected(h, num_hidden=16, name="fc2"))
    return sg.sym.SoftmaxOutput(sg.sym.FullyConnected(h, num_hidden=4, name="fc3"),
                                sg.sym.var("label"), name="sm")


def _check_plan(schedule, plan) -> None:
    first, last = lifetimes(schedule)
    assert set(plan.offset) == set(first)
    assert not set(plan.offset) & set(schedule.variables.values())
    slots = sorted(plan.offset)
    for s in slots:
        assert plan.offset[s] % ALIGN == 0
        assert plan.offset[s] + slot_bytes(schedule, s) <= plan.arena_bytes
    for i, a in enumerate(slots):
        for b in slots[i + 1:]:
            live = first[a] <= last[b] and first[b] <= last[a]
            lo_a, lo_b = plan.offset[a], plan.offset[b]
            overlap = (lo_a < lo_b + slot_bytes(schedule, b)
                       and lo_b < lo_a + slot_bytes(schedule, a))
            shared_in_place = plan.inplace.get(b) == a or plan.inplace.get(a) == b
            assert not (live and overlap and not shared_in_place), (a, b)
    assert plan.arena_bytes <= plan.naive_bytes


def test_training_plan_is_sound_and_smaller() -> None:
    exe = _mlp().simple_bind(sg.cpu(), x=(8, 10), label=(8,))
    sch = exe.schedule
    _check_plan(sch, sch.plan)
    assert sch.plan.arena_bytes < sch.plan.naive_bytes
    first, last = lifetimes(sch)
    n, nf = len(sch.steps), sch.n_forward_steps
    for s in sch.outputs:
        if s in first:
            assert last[s] == n
    saved = [s for s, k in first.items() if k < nf and any(
        s in st.inputs for st in sch.steps[nf:])]
    assert saved and all(last[s] == n for s in saved)


def test_in_place_for_elementwise_chain() -> None:
    x = sg.sym.var("x")
    g = declared(sg.sym.sigmoid(sg.sym.tanh(sg.sym.exp(x) * 0.5)), x=(64, 64))
    sch = lower(g)  # unfused: four elementwise steps
    plan = memory_plan(sch)
    _check_plan(sch, plan)
    assert len(plan.inplace) >= 2
    assert plan.arena_bytes == slot_bytes(sch, sch.outputs[0])
    vals = random_inputs(g)
    want = 1 / (1 + np.exp(-np.tanh(np.exp(vals["x"].astype(np.float64)) * 0.5)))
    np.testing.assert_allclose(run_graph(g, vals)[0], want, rtol=1e-5)


def _program(g):
    sch = lower(g)
    sch.plan = memory_plan(sch)
    return sch, numpy_backend.NumpyProgram(sch)


def _run(sch, program, vals):
    env = program.new_env()
    for node, slot in sch.variables.items():
        program.bind_input(env, slot, sg.nd.array(vals[node.name]))
    program.run(env, 0, len(sch.steps), RunCtx())
    return program.read(env, sch.outputs[0])


def test_poison_catches_a_value_freed_too_early(monkeypatch) -> None:
    monkeypatch.setattr(numpy_backend, "POISON", True)
    x = sg.sym.var("x")
    a = sg.sym.exp(x)
    g = declared(sg.sym.tanh(a) + a, x=(4, 4))  # a is read twice
    sch, program = _program(g)
    vals = random_inputs(g)
    assert not np.isnan(_run(sch, program, vals)).any()
    slot_a = sch.steps[0].outputs[0]
    program._freed[0].append(slot_a)  # pretend a's lifetime ended at its own step
    assert np.isnan(_run(sch, program, vals)).all()


def test_arena_views_really_alias() -> None:
    x = sg.sym.var("x")
    a = sg.sym.exp(x)
    g = declared(sg.sym.tanh(a) + a, x=(4, 4))
    sch, program = _program(g)
    vals = random_inputs(g)
    good = _run(sch, program, vals).copy()
    slot_a, slot_t = sch.steps[0].outputs[0], sch.steps[1].outputs[0]
    sch.plan.offset[slot_t] = sch.plan.offset[slot_a]  # a broken plan: tanh(a) overwrites a
    bad = _run(sch, numpy_backend.NumpyProgram(sch), vals)
    assert not np.allclose(bad, good)


def test_describe_reports_totals() -> None:
    exe = _mlp().simple_bind(sg.cpu(), x=(8, 10), label=(8,))
    text = exe.debug_str()
    plan = exe.schedule.plan
    assert f"planned peak {plan.arena_bytes} bytes, naive {plan.naive_bytes} bytes" in text
    assert "(var)" in text and "@0" in text


def test_views_run_no_step_and_keep_their_bytes_alive() -> None:
    """Reshape/Flatten are zero-copy aliases: no step, and the slot owning the bytes lives as
    long as a view of it is read (otherwise a later step could reuse the bytes first)."""
    x = sg.sym.var("x")
    e = sg.sym.exp(x)
    view = sg.sym.Reshape(e, shape=(-1,))
    later = sg.sym.sum(sg.sym.tanh(x) * 2.0 + 1.0)        # steps between e and its view's reader
    out = sg.sym.broadcast_add(view, later)
    g = declared(out, x=(4, 8))
    sch = lower(g)
    assert "Reshape" not in [st.node.op for st in sch.steps]
    (alias, root), = sch.aliases.items()
    reader = next(k for k, st in enumerate(sch.steps) if alias in st.inputs)
    _, last = lifetimes(sch)
    assert last[root] >= reader
    plan = memory_plan(sch)
    assert alias not in plan.offset
    _check_plan(sch, plan)
    vals = random_inputs(g)
    x64 = vals["x"].astype(np.float64)
    want = np.exp(x64).reshape(-1) + (np.tanh(x64) * 2 + 1).sum()
    np.testing.assert_allclose(run_graph(g, vals)[0], want, rtol=1e-5)
    assert len(lower(g, views=False).steps) == len(sch.steps) + 1
