"""Large step scratch placed in the arena (``compiler/scratch_plan``, ``cuda/plan``): every
buffer of a relocated step lies where no slot live at that step has bytes, the program's
arena grows by less than the scratch it takes in, and small scratch stays in the shared
region."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from symgraph.compiler.memory_plan import lifetimes, slot_bytes
from symgraph.compiler.scratch_plan import _first_fit, place_scratch
from symgraph.runtime.cuda import plan as cuda_plan
from symgraph.runtime.cuda.actions import Gemm, Kernel, flat_actions

S = sg.sym


def _schedule():
    h = S.var("data")
    for i in range(3):
        h = S.Activation(S.Convolution(h, num_filter=8, kernel=(3, 3), pad=(1, 1),
                                       name=f"c{i}"), act_type="relu")
    # a column sum (two stages through scratch, no Choice) beside the convolutions' Choices
    cols = S.sum(S.reshape(h, shape=(-1, 8)) * 3, axis=0)
    net = S.Group([S.SoftmaxOutput(S.FullyConnected(h, num_hidden=4, name="fc"), name="softmax"),
                   S.MakeLoss(S.sum(S.square(cols)))])
    reqs = {n: ("null" if n in ("data", "softmax_label") else "write")
            for n in net.list_arguments()}
    return net.simple_bind(sg.cpu(), grad_req=reqs, data=(64, 3, 32, 32))._train.schedule


def _refs(acts):
    for a in flat_actions(acts):
        if isinstance(a, Kernel):
            yield from a.args
        elif isinstance(a, Gemm):
            yield from (a.a, a.b, a.c)


def test_first_fit_takes_the_lowest_gap() -> None:
    assert _first_fit([], 100) == 0
    assert _first_fit([(0, 512), (1024, 2048)], 512) == 512
    assert _first_fit([(0, 512), (1024, 2048)], 513) == 2048
    assert _first_fit([(300, 400)], 256) == 0
    assert _first_fit([(0, 300)], 10) == 512  # (aligned up)


def test_relocated_scratch_overlaps_no_live_slot(monkeypatch) -> None:
    sch = _schedule()
    before = cuda_plan.lower_schedule(sch, 132)
    assert before.scratch_bytes > 0 and before.arena_bytes == sch.plan.arena_bytes
    monkeypatch.setattr(cuda_plan, "ARENA_SCRATCH", 1)
    low = cuda_plan.lower_schedule(sch, 132)
    first, last = lifetimes(sch)
    moved = 0
    for k, acts in enumerate(low.actions):
        arena = [r for r in _refs(acts) if r.kind == "arena"]
        moved += bool(arena)
        live = [(sch.plan.offset[s], sch.plan.offset[s] + slot_bytes(sch, s))
                for s in sch.plan.offset if first[s] <= k <= last[s]]
        for r in arena:
            lo = r.index + r.offset
            assert all(lo >= hi or lo < start for start, hi in live), (k, r, live)
    # every step with scratch (no keys or state here) but those that time a Choice when the
    # program is prepared: then the arena's bytes may still hold earlier steps' values
    had = [any(r.kind == "scratch" for r in _refs(acts)) and not cuda_plan._chooses(acts)
           for acts in before.actions]
    now = [any(r.kind == "arena" for r in _refs(acts)) for acts in low.actions]
    assert moved >= 2 and had == now
    chooses = [k for k, acts in enumerate(low.actions) if cuda_plan._chooses(acts)]
    assert chooses and not any(now[k] for k in chooses)
    assert low.scratch_bytes <= before.scratch_bytes  # (the Choices keep sizing it)
    assert low.arena_bytes + low.scratch_bytes <= before.arena_bytes + before.scratch_bytes
    # the same kernels either way: only where the scratch lives changed
    assert sorted(k.name for k in low.kernels) == sorted(k.name for k in before.kernels)


def test_place_scratch_offsets_are_per_step() -> None:
    sch = _schedule()
    sizes = {k: 4096 for k in range(len(sch.steps))}
    at = place_scratch(sch, sch.plan, sizes)
    assert set(at) == set(sizes) and all(v % 256 == 0 for v in at.values())
    assert min(at.values()) < max(at.values())  # free bytes differ from step to step
    assert np.all(np.array(list(at.values())) <= sch.plan.arena_bytes)
