"""C source of the fused multi-tensor optimizer update, printed from an optimizer's
:class:`~symgraph.training.optimizer.UpdateRule` formulas (pure Python: CI renders and compiles it).

One kernel updates every parameter of a network. Its arguments never change between steps, so a
launch (or a CUDA graph holding it) is built once:

* ``table``: one row of ``2 + n_states + 1`` 64-bit words per parameter: element count, weight
  pointer, gradient pointer, state pointers (rewritten only when a pointer changes);
* ``scal``: one row of ``len(rule.scalars)`` floats per parameter, the step's scalar table
  (``Optimizer.step_scalars``), copied to the device before the launch when it changed;
* ``chunks``: ``(parameter, first element)`` per block-sized chunk of work, fixed at bind time,
  so a block never searches for its parameter and small biases cost one short block.

The per-element body is the same ``__device__`` function the elementwise codegen prints from
``expr.PRIMS``, so the GPU and numpy updates come from one formula. Weights and gradients are of
one float dtype (float32, float16 or bfloat16; read through ``sg_ld``, computed in float); the
optimizer states are float32 whatever the weights' dtype.
"""
from __future__ import annotations

from typing import Any, Sequence

from .codegen import (C_TYPES, DTYPE_TAGS, Rendered, THREADS, scalar_fn, dtype_helpers,
                      used_inputs)

CHUNK = THREADS * 8  # elements per chunk: 8 per thread keeps blocks busy, tails short


def kernel_name(rule: Any, dtype: str = "float32") -> str:
    """``fused_<rule>_update_<dtype>``, e.g. ``fused_sgd_mom_update_f32`` (``_bf16``...)."""
    return f"fused_{rule.name}_update_{DTYPE_TAGS.get(dtype, 'f32')}"


def chunk_table(sizes: Sequence[int]) -> list[tuple[int, int]]:
    """``(parameter index, first element)`` of every chunk of ``CHUNK`` elements."""
    return [(p, first) for p, n in enumerate(sizes) for first in range(0, n, CHUNK)]


def render_update(rule: Any, dtype: str = "float32") -> Rendered:
    """The fused update kernel of ``rule`` (inputs ``weight, grad, *states, *scalars``) for
    weights and gradients of ``dtype`` (states float32)."""
    n_arr = 2 + len(rule.states)
    n_scal = len(rule.scalars)
    inputs = used_inputs(rule.formulas)
    fn, helper = scalar_fn(rule.name, rule.formulas, inputs)
    # Arrays are read through the row's pointers; scalars once per chunk into registers.
    types = [C_TYPES[dtype]] * 2 + ["float"] * len(rule.states)
    ptrs = "".join(f"        {t}* a{k} = ({t}*)row[{k + 1}];\n" for k, t in enumerate(types))
    scal = "".join(f"        const float s{k} = sc[{k}];\n"
                   for k in range(n_scal) if n_arr + k in inputs)
    loads = [f"sg_ld(a{i}[i])" if i < n_arr else f"s{i - n_arr}" for i in inputs]
    outs = [f"r{k}" for k in range(len(rule.formulas))]
    # output 0 is the weight, output k the state k - 1: arrays 0 and 2 + (k - 1)
    targets = ["a0"] + [f"a{2 + k}" for k in range(len(rule.states))]
    stores = "".join(f"            {t}[i] = {r};\n" for t, r in zip(targets, outs))
    name = kernel_name(rule, dtype)
    body = (
        "    for (long long c = blockIdx.x; c < n_chunks; c += gridDim.x) {\n"
        "        const long long p = chunks[2 * c], first = chunks[2 * c + 1];\n"
        f"        const unsigned long long* row = table + p * {n_arr + 1}LL;\n"
        "        const long long n = (long long)row[0];\n"
        f"{ptrs}"
        f"        const float* sc = scal + p * {max(n_scal, 1)}LL;\n"
        f"{scal}"
        f"        const long long last = first + {CHUNK}LL < n ? first + {CHUNK}LL : n;\n"
        "        for (long long i = first + threadIdx.x; i < last; i += blockDim.x) {\n"
        + "".join(f"            float {r};\n" for r in outs)
        + f"            {fn}({', '.join(loads + outs)});\n"
        + stores + "        }\n    }\n")
    sig = ("const unsigned long long* table, const float* scal, const long long* chunks, "
           "long long n_chunks")
    src = (f"// {rule.name}: one block per chunk of {CHUNK} elements of one parameter\n"
           f"extern \"C\" __global__ void {name}({sig}) {{\n{body}}}\n")
    return Rendered(name, src, 3, 1, dtype_helpers(dtype) + ((fn, helper),))
