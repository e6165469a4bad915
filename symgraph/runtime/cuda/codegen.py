"""C source for elementwise kernels, printed from the scalar expression DAG (``symgraph.expr``).

A fused group and a single elementwise op are the same thing here: a list of output formulas over
numbered inputs. Two kernel shapes are generated:

* contiguous: every input has the output's size (or is a single element); one thread handles a
  pack of 16 bytes of the widest operand (4 floats, 8 halves) in a grid-stride loop, a scalar
  loop does the tail;
* broadcast: the flat output index is split into coordinates (the shape is baked in as constants,
  so the divisions become multiplications) and each input's offset uses its own strides, 0 on
  broadcast axes.

Each kernel's name carries a hash of its body, so identical kernels are emitted once per module.

The dtype is a parameter: every pointer is spelled with its buffer's C type (:data:`C_TYPES`),
every element read goes through ``sg_ld`` (float for every float type: narrow floats are stored
narrow and computed in float) and stores convert back (``__half``/``__nv_bfloat16`` assignment
from float rounds to nearest). Kernels with narrow buffers carry :data:`NARROW_HELPER`.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from math import prod
from typing import Optional, Sequence

from ...core.expr import Expr, print_formulas, topo

Shape = tuple[int, ...]
THREADS = 256

# numpy dtype name -> C type of a buffer element.
C_TYPES = {"float32": "float", "float64": "double", "float16": "__half",
           "bfloat16": "__nv_bfloat16", "bool": "bool", "int8": "signed char",
           "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short", "int32": "int",
           "uint32": "unsigned int", "int64": "long long", "uint64": "unsigned long long"}
NARROW_C = ("__half", "__nv_bfloat16")
DTYPE_TAGS = {"float16": "f16", "bfloat16": "bf16"}
NARROW_HELPER = ("sg_narrow", "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                 "__device__ __forceinline__ float sg_ld(__half v) { return __half2float(v); }\n"
                 "__device__ __forceinline__ float sg_ld(__nv_bfloat16 v) "
                 "{ return __bfloat162float(v); }\n")
"""Headers and ``sg_ld`` overloads of the narrow floats (``sg_ld(float)`` is in the prelude)."""


def ctype(dtype: str) -> str:
    """C type of a numpy dtype name (``"bfloat16"`` -> ``__nv_bfloat16``)."""
    return C_TYPES[dtype]


def dtype_helpers(*dtypes: str) -> tuple[tuple[str, str], ...]:
    """The helper entries a kernel over buffers of these dtypes needs."""
    return (NARROW_HELPER,) if any(C_TYPES.get(d) in NARROW_C for d in dtypes) else ()


def with_dtype(stem: str, dtype: str) -> str:
    """``stem`` with a tag naming a narrow dtype (``relu_f16``), unchanged for float32."""
    return f"{stem}_{DTYPE_TAGS[dtype]}" if dtype in DTYPE_TAGS else stem


def index_load(element: str, dtype: str) -> tuple[str, str]:
    """(C type, C value) of an index read from ``element`` of numpy dtype ``dtype``: floats
    through ``sg_ld`` (truncated by the caller), integers as they are."""
    if C_TYPES[dtype] in ("float", "double") + NARROW_C:
        return "float", f"sg_ld({element})"
    return "long long", f"(long long){element}"


def ptr(name: str, dtype: str, const: bool = True, restrict: bool = True) -> str:
    """A kernel pointer parameter of a buffer of ``dtype``."""
    return (f"{'const ' if const else ''}{C_TYPES[dtype]}* {'__restrict__ ' if restrict else ''}"
            f"{name}")


def c_float(v: float) -> str:
    """A float literal C reads back exactly."""
    if math.isnan(v):
        return "__int_as_float(0x7fffffff)"
    if math.isinf(v):
        return "__int_as_float(0x7f800000)" if v > 0 else "__int_as_float(0xff800000)"
    return f"{float(v)!r}f"


def expr_to_c(roots: Sequence[Expr], arg: Sequence[str]) -> tuple[list[str], list[str]]:
    """Statements computing ``roots`` from C names ``arg[i]`` of input ``i``.

    Returns (statements, C expression of each root). Shared subexpressions are computed once.
    """
    return print_formulas(roots, arg, lambda p: p.c, c_float, "const float {0} = (float){1};")


def epilogue_store(epilogue: Optional[Expr], dst: str, at: str, value: str,
                   indent: str) -> str:
    """C statements storing ``value`` at ``dst[at]``, through ``epilogue`` when one is given: a
    fused group's formula whose input 0 is that value and input ``k`` the element ``at`` of
    operand ``epi<k>``. A hand-written head kernel then writes the group's result itself instead
    of a scratch buffer that a second elementwise kernel reads back (one trip over memory)."""
    if epilogue is None:
        return f"{indent}{dst}[{at}] = {value};\n"
    n = max(used_inputs([epilogue]), default=0) + 1
    lines, (result,) = expr_to_c([epilogue],
                                 ["head"] + [f"sg_ld(epi{k}[{at}])" for k in range(1, n)])
    body = [f"const float head = {value};"] + lines + [f"{dst}[{at}] = {result};"]
    return f"{indent}{{\n" + "".join(f"{indent}    {ln}\n" for ln in body) + f"{indent}}}\n"


def epilogue_params(n_operands: int, dtype: str = "float32") -> str:
    """Kernel parameters of ``n_operands`` epilogue operands (``epi1``...) of ``dtype``, each
    with a comma."""
    return "".join(ptr(f"epi{k}", dtype) + ", " for k in range(1, n_operands + 1))


def index_type(count: int) -> str:
    """C type of a flat index below ``count``: 32-bit where it fits, since 64-bit divisions by
    baked-in sizes cost several times the instructions and dominate simple kernels."""
    return "unsigned" if count < 2 ** 31 else "unsigned long long"


def used_inputs(roots: Sequence[Expr]) -> list[int]:
    return sorted({int(e.value) for e in topo(roots) if e.op == "input"})


def short_hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def kernel_name(stem: str, body: str) -> str:
    """``sg_<stem>_<hash of body>``: readable, and equal bodies get equal names."""
    clean = "".join(ch if ch.isalnum() else "_" for ch in stem)[:40]
    return f"sg_{clean}_{short_hash(body)}"


@dataclass(frozen=True)
class Rendered:
    """A kernel's source; its parameters are ``n_ptr`` pointers then one ``long long``."""

    name: str
    source: str
    n_ptr: int
    per_thread: int = 1  # elements one thread handles per loop trip (pack lanes: 16 bytes)
    helpers: tuple[tuple[str, str], ...] = ()  # (name, source) of shared __device__ functions


Types = Sequence[str]  # numpy dtype names, one per operand


def _signature(inputs: Sequence[int], in_types: Types, out_types: Types) -> str:
    # No __restrict__: an output may be written over an input (in-place plans, bias add).
    outs = [ptr(f"y{k}", t, False, False) for k, t in enumerate(out_types)]
    ins = [ptr(f"x{i}", in_types[i], True, False) for i in inputs]
    return ", ".join(outs + ins + ["long long n"])


def _types(in_types: Optional[Types], out_types: Optional[Types], n_in: int,
           n_out: int) -> tuple[list[str], list[str]]:
    return (list(in_types or ["float32"] * n_in), list(out_types or ["float32"] * n_out))


def scalar_fn(stem: str, exprs: Sequence[Expr], inputs: Sequence[int]) -> tuple[str, str]:
    """A ``__device__`` function computing all outputs of one element from input values."""
    lines, results = expr_to_c(exprs, [f"v{i}" for i in range(max(inputs, default=-1) + 1)])
    params = [f"float v{i}" for i in inputs] + [f"float& r{k}" for k in range(len(exprs))]
    body = "\n".join(f"    {ln}" for ln in lines + [f"r{k} = {r};" for k, r in enumerate(results)])
    fn = "f_" + short_hash(body + ",".join(params))
    return fn, (f"__device__ __forceinline__ void {fn}({', '.join(params)}) {{\n{body}\n}}\n")


def _pack(dtype: str, lanes: int) -> str:
    return f"sg_pack<{C_TYPES[dtype]}, {lanes}>"


def render_contiguous(stem: str, exprs: Sequence[Expr], scalar_inputs: Sequence[int] = (),
                      n_inputs: int = 0, in_types: Optional[Types] = None,
                      out_types: Optional[Types] = None) -> Rendered:
    """Same-size operands: packs of 16 bytes of the widest operand (``sg_pack``: 4 floats, 8
    halves; narrower operands load the same number of lanes) in a grid-stride loop, then a
    scalar tail. ``scalar_inputs`` are one-element inputs, read once per thread."""
    inputs = used_inputs(exprs)
    nout = len(exprs)
    in_types, out_types = _types(in_types, out_types, max(inputs, default=-1) + 1, nout)
    vector = [i for i in inputs if i not in scalar_inputs]
    widest = max([C_ITEMSIZE[in_types[i]] for i in vector]
                 + [C_ITEMSIZE[t] for t in out_types])
    lanes = 16 // widest
    fn, helper = scalar_fn(stem, exprs, inputs)

    def call(load: dict[int, str], store: list[str]) -> str:
        return f"{fn}({', '.join([load[i] for i in inputs] + store)});"
    vec_loads = "".join(f"        const {_pack(in_types[i], lanes)} a{i} = "
                        f"reinterpret_cast<const {_pack(in_types[i], lanes)}*>(x{i})[i];\n"
                        for i in vector)
    load = {i: (f"s{i}" if i in scalar_inputs else f"sg_ld(a{i}.v[j])") for i in inputs}
    scalars = "".join(f"    const float s{i} = sg_ld(x{i}[0]);\n"
                      for i in scalar_inputs if i in inputs)
    decl = "".join(f"        {_pack(t, lanes)} b{k};\n" for k, t in enumerate(out_types))
    lane_decl = "".join(f"            float c{k};\n" for k in range(nout))
    lane_store = "".join(f"            b{k}.v[j] = c{k};\n" for k in range(nout))
    stores = "".join(f"        reinterpret_cast<{_pack(t, lanes)}*>(y{k})[i] = b{k};\n"
                     for k, t in enumerate(out_types))
    tail_load = {i: (f"s{i}" if i in scalar_inputs else f"sg_ld(x{i}[i])") for i in inputs}
    tail_decl = "".join(f"        float c{k};\n" for k in range(nout))
    tail_store = "".join(f"        y{k}[i] = c{k};\n" for k in range(nout))
    body = (
        f"{scalars}"
        "    const long long step = (long long)blockDim.x * gridDim.x;\n"
        "    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    const long long nv = n / {lanes};\n"
        "    for (long long i = first; i < nv; i += step) {\n"
        f"{vec_loads}{decl}"
        "#pragma unroll\n"
        f"        for (int j = 0; j < {lanes}; ++j) {{\n{lane_decl}"
        f"            {call(load, [f'c{k}' for k in range(nout)])}\n{lane_store}"
        f"        }}\n{stores}"
        "    }\n"
        f"    for (long long i = nv * {lanes} + first; i < n; i += step) {{\n"
        f"{tail_decl}        {call(tail_load, [f'c{k}' for k in range(nout)])}\n{tail_store}"
        "    }\n")
    sig = _signature(inputs, in_types, out_types)
    name = kernel_name(with_dtype(stem, out_types[0]) + "_c", helper + sig + body)
    src = f"extern \"C\" __global__ void {name}({sig}) {{\n{body}}}\n"
    helpers = dtype_helpers(*in_types, *out_types) + ((fn, helper),)
    return Rendered(name, src, nout + len(inputs), lanes, helpers)


C_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "bool": 1, "int8": 1,
              "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
              "uint64": 8}


def strides_for(shape: Shape, out_shape: Shape) -> list[int]:
    """Element strides of ``shape`` aligned right against ``out_shape``; 0 on broadcast axes."""
    lead = len(out_shape) - len(shape)
    strides = [0] * len(out_shape)
    s = 1
    for k in range(len(shape) - 1, -1, -1):
        strides[lead + k] = 0 if shape[k] == 1 and out_shape[lead + k] != 1 else s
        s *= shape[k]
    return strides


def render_broadcast(stem: str, exprs: Sequence[Expr], in_shapes: Sequence[Shape],
                     out_shape: Shape, in_types: Optional[Types] = None,
                     out_types: Optional[Types] = None) -> Rendered:
    """Inputs broadcast to ``out_shape`` by index arithmetic (shape baked in as constants)."""
    inputs = used_inputs(exprs)
    fn, helper = scalar_fn(stem, exprs, inputs)
    nout = len(exprs)
    in_types, out_types = _types(in_types, out_types, len(in_shapes), nout)
    idx = [f"        long long o{i} = 0;" for i in inputs]
    idx.append("        long long r = i;")
    for d in range(len(out_shape) - 1, -1, -1):
        idx.append(f"        {{ const long long c = r % {out_shape[d]}LL; r /= {out_shape[d]}LL;")
        for i in inputs:
            st = strides_for(in_shapes[i], out_shape)[d]
            if st:
                idx.append(f"          o{i} += c * {st}LL;")
        idx.append("        }")
    loads = [f"sg_ld(x{i}[o{i}])" for i in inputs]
    body = (
        "    const long long step = (long long)blockDim.x * gridDim.x;\n"
        "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
        "i += step) {\n" + "\n".join(idx) + "\n"
        + "".join(f"        float c{k};\n" for k in range(nout))
        + f"        {fn}({', '.join(loads + [f'c{k}' for k in range(nout)])});\n"
        + "".join(f"        y{k}[i] = c{k};\n" for k in range(nout)) + "    }\n")
    sig = _signature(inputs, in_types, out_types)
    name = kernel_name(with_dtype(stem, out_types[0]) + "_b", helper + sig + body)
    src = f"extern \"C\" __global__ void {name}({sig}) {{\n{body}}}\n"
    helpers = dtype_helpers(*in_types, *out_types) + ((fn, helper),)
    return Rendered(name, src, nout + len(inputs), 1, helpers)


def render_elementwise(stem: str, exprs: Sequence[Expr], in_shapes: Sequence[Shape],
                       out_shape: Shape, in_types: Optional[Types] = None,
                       out_types: Optional[Types] = None) -> tuple[Rendered, list[int]]:
    """The right kernel for these shapes and dtypes (numpy names per input and output, float32
    by default); also returns which node inputs it reads, in order."""
    n = prod(out_shape)
    inputs = used_inputs(exprs)
    if all(prod(in_shapes[i]) in (n, 1) for i in inputs):
        scalar = [i for i in inputs if prod(in_shapes[i]) == 1 and n != 1]
        return render_contiguous(stem, exprs, scalar, 0, in_types, out_types), inputs
    return render_broadcast(stem, exprs, in_shapes, out_shape, in_types, out_types), inputs


GRID_STRIDE_LOOP = ("    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                    "i < n; i += (long long)blockDim.x * gridDim.x) {\n")
"""The loop every one-thread-per-element kernel runs (``n`` elements, any grid size)."""


def kernel_source(name: str, params: str, body: str) -> str:
    """The C of kernel ``name``: ``extern "C"`` (so the module exports the name as is),
    ``params``, then ``body`` (statements ending in a newline)."""
    return f"extern \"C\" __global__ void {name}({params}) {{\n{body}}}\n"


def grid_stride_kernel(stem: str, key: str, params: str, body: str, n_ptr: int = 2,
                       prelude: str = "", helpers: tuple = ()) -> Rendered:
    """A kernel running ``body`` for each ``i < n`` in a grid-stride loop. ``params``: the
    pointer parameters (``long long n`` is appended); ``prelude``: C before the kernel;
    ``TAG`` in ``body``/``prelude`` becomes the kernel's name (``kernel_name(stem, key)``).
    A narrow float C type in ``params`` brings :data:`NARROW_HELPER` along."""
    tag = kernel_name(stem, key + params)
    if any(t in params for t in NARROW_C) and NARROW_HELPER not in helpers:
        helpers = (NARROW_HELPER,) + tuple(helpers)
    src = (prelude + kernel_source("TAG", f"{params}, long long n",
                                   f"{GRID_STRIDE_LOOP}{body}    }}\n")).replace("TAG", tag)
    return Rendered(tag, src, n_ptr, helpers=helpers)


def grid_for(n_threads: int, sm_count: int, per_sm: int = 16) -> int:
    """Blocks for ``n_threads`` work items: enough to fill the device, no more."""
    return max(1, min((n_threads + THREADS - 1) // THREADS, sm_count * per_sm))
