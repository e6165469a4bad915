"""Helpers for pass tests: declared graphs, running a graph with or without passes."""
from __future__ import annotations

from typing import Optional

import numpy as np

import symgraph as sg
import symgraph.compiler.passes as P
from symgraph.core.attrs import Attrs, format_value
from symgraph.runtime.backend import numpy_backend
from symgraph.core.graph import Graph, Node, rewrite
from symgraph.compiler.memory_plan import memory_plan
from symgraph.core.registry import RunCtx
from symgraph.compiler.schedule import lower


def declared(sym, dtype: str = "float32", **shapes) -> Graph:
    """``sym``'s graph with every variable's shape and dtype baked in, as the executor does."""
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    by_name = dict(zip(sym.list_arguments() + sym.list_auxiliary_states(),
                       arg_shapes + aux_shapes))

    def bake(n: Node) -> Optional[Node]:
        if not n.is_variable:
            return None
        extra = dict(n.extra, __shape__=format_value(tuple(by_name[n.name])), __dtype__=dtype)
        return Node(n.op, n.name, n.attrs, (), Attrs(extra))
    return rewrite(sym.graph(), bake)


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    from symgraph.core.types.infer_shape import declared_shape
    return {v.name: rng.uniform(-1, 1, declared_shape(v)).astype(v.extra["__dtype__"])
            for v in graph.variables()}


def run_graph(graph: Graph, values: dict[str, np.ndarray], plan: bool = True) -> list[np.ndarray]:
    """Lower ``graph`` (optionally with a memory plan) and run it on the numpy backend."""
    schedule = lower(graph)
    if plan:
        schedule.plan = memory_plan(schedule)
    program = numpy_backend.compile(schedule)
    env = program.new_env()
    for node, slot in schedule.variables.items():
        program.bind_input(env, slot, sg.nd.array(values[node.name], dtype=values[node.name].dtype))
    program.run(env, 0, len(schedule.steps), RunCtx())
    return [np.array(program.read(env, schedule.slot_of[e])) for e in graph.outputs]


def ops_of(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes() if not n.is_variable]


def train_results(sym, shapes: dict, enabled: bool, seed: int = 0,
                  out_grads: bool = True) -> tuple[list, dict]:
    """Outputs and gradients of one forward/backward with passes on or off."""
    old = P.ENABLED
    P.ENABLED = enabled
    try:
        exe = sym.simple_bind(sg.cpu(), **shapes)
    finally:
        P.ENABLED = old
    rng = np.random.default_rng(seed)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-1, 1, arr.shape).astype(arr.dtype)
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
    heads = [sg.nd.array(rng.uniform(-1, 1, o.shape).astype(o.dtype)) for o in outs] \
        if out_grads else None
    exe.backward(heads)
    return outs, {k: g.asnumpy().copy() for k, g in exe.grad_dict.items()}


def assert_same(a: tuple[list, dict], b: tuple[list, dict]) -> None:
    for x, y in zip(a[0], b[0]):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        np.testing.assert_allclose(a[1][k], b[1][k], rtol=1e-4, atol=1e-5, err_msg=k)
