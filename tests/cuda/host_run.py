"""Run one lowered step's kernels on the CPU, for CI without a GPU.

The step's module is compiled as host C++ by g++ with a prelude that turns ``__global__`` and
``__device__`` into plain functions and fixes the launch at one block of one thread: every
grid-stride kernel then visits all its elements in order and computes exactly what the GPU would.
Library calls run their generated fallback (``Choice.fallback``), with GEMMs as a plain loop.
Kernels that cooperate across threads (warp shuffles, block reductions) compile against stubs but
must not be run here unless written for any block size; :func:`runnable` says whether a step
has any that are not. Narrow floats (``__half``, ``__nv_bfloat16``) are host structs that convert
from float with round-to-nearest-even (as the device's assignment does) and to float only
through ``sg_ld``: a kernel reading a narrow element without ``sg_ld`` does not compile here.
"""
from __future__ import annotations

import atexit
import hashlib
import shutil
import subprocess
import tempfile
from math import prod
from pathlib import Path
from typing import Sequence

import numpy as np

from symgraph.runtime.cuda.actions import Copy, Fill, Gemm, Kernel, Ref, flat_actions, step_context
from symgraph.runtime.cuda.lowering import lower_step
from symgraph.runtime.cuda.codegen import C_TYPES, NARROW_HELPER
from symgraph.runtime.cuda.compiler import module_source
from symgraph.runtime.cuda.kernels_conv_pool import BLOCK_SIZE_FREE
from symgraph.compiler.schedule import Step

HOST_PRELUDE = r"""
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
using std::max; using std::min;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
struct sg_dim3 { unsigned int x; };
static const sg_dim3 blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
struct uint2 { unsigned int x, y; };
struct uint4 { unsigned int x, y, z, w; };
struct float4 { float x, y, z, w; };
static inline uint2 make_uint2(unsigned int a, unsigned int b) { return {a, b}; }
static inline uint4 make_uint4(unsigned int a, unsigned int b, unsigned int c, unsigned int d) {
    return {a, b, c, d};
}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline float cospif(float x) { return (float)cos(3.14159265358979323846 * x); }
static inline void __syncthreads() {}
template <class T> static inline T __shfl_down_sync(unsigned, T v, int) { return v; }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
static inline float atomicAdd(float* p, float v) { const float o = *p; *p += v; return o; }
// A grid barrier's word (kernels_norm.GRID_SYNC): one thread per block touches it, and
// block_run's blocks run one after another, so a plain read and write do.
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) {
    const unsigned int o = *p; *p += v; return o;
}
static inline void __threadfence() {}
template <class T> static inline T __ldcg(const T* p) { return *p; }
#define __launch_bounds__(...)
"""
HOST_NARROW = r"""
struct __half {
    _Float16 v;
    __half() = default;
    __half(float f) : v((_Float16)f) {}
};
struct __nv_bfloat16 {
    unsigned short bits;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) {  // round to nearest even, as __float2bfloat16
        unsigned int u; memcpy(&u, &f, 4);
        bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
};
static inline float sg_ld(__half h) { return (float)h.v; }
static inline float sg_ld(__nv_bfloat16 h) {
    const unsigned int u = (unsigned int)h.bits << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    const unsigned long long o = *p; *p += v; return o;  // 64-bit counters (histogram)
}
template <class T> static inline T atomicAdd(T* p, T v) {
    const T o = *p; *p = T(sg_ld(o) + sg_ld(v)); return o;
}
"""
HOST_GEMM = r"""
// The backend's Gemm action: row-major C[b] = op(A[b]) @ op(B[b]) (+ C[b]), packed batches,
// in the Gemm's dtype T, accumulated in double.
template <class T>
static void host_gemm(bool ta, bool tb, long long m, long long n, long long k, const void* a,
                      const void* b, void* c, long long batch, bool acc) {
    const T* A = (const T*)a; const T* B = (const T*)b; T* C = (T*)c;
    for (long long q = 0; q < batch; ++q, A += m * k, B += k * n, C += m * n)
        for (long long i = 0; i < m; ++i) for (long long j = 0; j < n; ++j) {
            double s = acc ? sg_ld(C[i * n + j]) : 0.0;
            for (long long p = 0; p < k; ++p) {
                const float x = sg_ld(ta ? A[p * m + i] : A[i * k + p]);
                s += (double)x * sg_ld(tb ? B[j * k + p] : B[p * n + j]);
            }
            C[i * n + j] = T((float)s);
        }
}
"""
COOPERATIVE = ("__shfl", "__syncthreads")


def host_compiler() -> str | None:
    return shutil.which("g++")


_PCH: dict[str, Path] = {}


def compile_host(header: str, body: str, exe: Path, flags: Sequence[str]) -> None:
    """g++ ``header + body`` into ``exe``. ``header`` (the fixed preludes) is precompiled once
    per process and flag set: each of the suite's few hundred host programs then costs a
    third of the CPU (the preludes' standard headers were most of a compile)."""
    key = hashlib.sha1("\0".join([header, *flags]).encode()).hexdigest()[:16]
    if key not in _PCH:
        folder = Path(tempfile.mkdtemp(prefix="symgraph-pch-"))
        atexit.register(shutil.rmtree, folder, True)
        (folder / "pre.h").write_text(header)
        subprocess.run([host_compiler(), *flags, "-x", "c++-header", "-o",
                        str(folder / "pre.h.gch"), str(folder / "pre.h")], check=True)
        _PCH[key] = folder / "pre.h"
    src = exe.with_suffix(".cpp")
    src.write_text(f'#include "{_PCH[key]}"\n' + body)
    subprocess.run([host_compiler(), *flags, "-o", str(exe), str(src)], check=True)


def lowered(step: Step, shapes: Sequence, dtypes: Sequence) -> tuple[list, int, int]:
    """(flat actions, scratch bytes, key count) of one schedule step."""
    scratch: list[int] = []
    keys: list[int] = []
    # what a training run executes there, library calls as their generated fallback
    acts = flat_actions(lower_step(step_context(step, shapes, dtypes, 132, scratch, keys)),
                        "fallback")
    return acts, sum(scratch), len(keys)


def runnable(actions: Sequence) -> bool:
    """No cooperative kernel, except those written for any block size (they say so)."""
    return all(isinstance(a, (Copy, Fill, Gemm)) or isinstance(a, Kernel) and
               (BLOCK_SIZE_FREE in a.kernel.source
                or not any(c in a.kernel.source for c in COOPERATIVE)) for a in actions)


def _refs(act: object) -> tuple[Ref, ...]:
    """The buffers an action touches."""
    if isinstance(act, Kernel):
        return act.args
    if isinstance(act, Gemm):
        return (act.a, act.b, act.c)
    return (act.dst, act.src) if isinstance(act, Copy) else (act.dst,)


class _Names:
    """C expression of a buffer reference: its allocation's name, plus its byte offset."""

    def __init__(self, base: dict) -> None:
        self.base = base

    def __getitem__(self, ref: Ref) -> str:
        name = self.base[ref.base]
        return f"({name} + {ref.offset})" if ref.offset else name


def _main(actions: Sequence, buffers: dict, files: dict, outputs: Sequence[Ref]) -> str:
    """A ``main`` that loads the inputs, runs the actions in order and saves the outputs."""
    base = {ref: f"b{k}" for k, ref in enumerate(buffers)}
    name = _Names(base)
    lines = [f"    unsigned char* {base[r]} = (unsigned char*)calloc({max(n, 1)}, 1);"
             for r, n in buffers.items()]
    lines += [f'    {{ FILE* f = fopen("{files[r]}", "rb"); fread({base[r]}, 1, {buffers[r]}, f); '
              "fclose(f); }" for r in files if r not in outputs]
    for a in actions:
        if isinstance(a, Kernel):
            sig = ", ".join(["void*"] * len(a.args) + ["long long"])
            args = ", ".join([name[r] for r in a.args] + [f"{a.n}LL"])
            lines.append(f"    reinterpret_cast<void (*)({sig})>({a.kernel.name})({args});")
        elif isinstance(a, Gemm):
            ops = (f"{str(a.trans_a).lower()}, {str(a.trans_b).lower()}, {a.m}, {a.n}, {a.k}, "
                   f"{name[a.a]}, {name[a.b]}, {name[a.c]}, {a.batch}, "
                   f"{str(a.accumulate).lower()}")
            lines.append(f"    host_gemm<{C_TYPES[a.dtype]}>({ops});")
        elif isinstance(a, Copy):
            lines.append(f"    memcpy({name[a.dst]}, {name[a.src]}, {a.nbytes});")
        else:
            t = C_TYPES[a.dtype]
            lines.append(f"    for (long long i = 0; i < {a.count}; ++i) "
                         f"(({t}*){name[a.dst]})[i] = {t}({float(a.value)!r}f);")
    lines += [f'    {{ FILE* f = fopen("{files[r]}", "wb"); fwrite({base[r]}, 1, {buffers[r]}, f); '
              "fclose(f); }" for r in outputs]
    return "int main() {\n" + "\n".join(lines) + "\n    return 0;\n}\n"


def run_on_host(step: Step, shapes: Sequence, dtypes: Sequence, inputs: Sequence[np.ndarray],
                tmp: Path, keys: Sequence[int] = ()) -> list[np.ndarray]:
    """The step's outputs computed by its lowered kernels, run on the CPU."""
    acts, scratch_bytes, n_keys = lowered(step, shapes, dtypes)
    assert runnable(acts), "step has cooperative kernels"
    slots = list(step.inputs) + list(step.outputs)
    buffers = {Ref("slot", s): prod(shapes[s]) * np.dtype(dtypes[s]).itemsize for s in slots}
    files = {r: tmp / f"{r.kind}{r.index}.bin" for r in buffers}
    for s, x in zip(step.inputs, inputs):
        np.ascontiguousarray(x, dtypes[s]).tofile(files[Ref("slot", s)])
    for k in range(n_keys):
        buffers[Ref("key", k)] = 8
        files[Ref("key", k)] = tmp / f"key{k}.bin"
        np.array([keys[k]], np.uint64).tofile(files[Ref("key", k)])
    for r in {r.base for a in acts for r in _refs(a) if r.kind == "state"}:
        buffers[r] = 256  # program state: zero (calloc), as the backend leaves it
    # A reference with an offset points into the allocation of its base buffer.
    offsets = sorted({r.index for a in acts for r in _refs(a) if r.kind == "scratch"})
    for off in offsets:  # each scratch buffer as its own allocation up to the next one
        buffers[Ref("scratch", off)] = scratch_bytes - off
    outs = [Ref("slot", s) for s in step.outputs]
    kernels = [a.kernel for a in acts if isinstance(a, Kernel)]
    module = module_source(kernels).replace(NARROW_HELPER[1], "")
    exe = tmp / "step"
    compile_host(HOST_PRELUDE + HOST_NARROW, module + HOST_GEMM + _main(acts, buffers, files, outs),
                 exe, ["-O1", "-w"])
    subprocess.run([str(exe)], check=True)
    return [np.fromfile(files[r], dtypes[s]).reshape(shapes[s])
            for r, s in zip(outs, step.outputs)]
