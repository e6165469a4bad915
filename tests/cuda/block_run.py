"""Run generated kernels on the CPU with real block sizes, for kernels that say they work with
any block size (``kernels_conv_pool.BLOCK_SIZE_FREE``): ``host_run`` runs them with one thread
only, which leaves their cooperation (shared memory, ``__syncthreads``) unchecked.

The module is compiled as host C++ with ``host_run``'s prelude, except that ``threadIdx`` is
per host thread and ``blockIdx``/``blockDim``/``gridDim`` are set per launch: each block of a
launch runs as ``block`` ``std::thread`` s meeting at a ``std::barrier`` for every
``__syncthreads`` (blocks one after another, so the static ``__shared__`` arrays are the
block's own). ``__shfl_xor_sync`` is an exchange through a block-wide slot array between two
barriers, so a kernel using it must call it with every thread of the block (as a kernel whose
row loop is uniform over the block does); other shuffles are not emulated.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

import numpy as np

from symgraph.runtime.cuda.codegen import NARROW_HELPER, Rendered
from symgraph.runtime.cuda.compiler import module_source

from .host_run import HOST_NARROW, HOST_PRELUDE, compile_host

_FIXED = "static const sg_dim3 blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};"
_SYNC = "static inline void __syncthreads() {}"
_XOR = "template <class T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }"
THREADED = r"""
#include <barrier>
#include <thread>
#include <vector>
static sg_dim3 blockIdx, blockDim, gridDim;
static thread_local sg_dim3 threadIdx;
static std::barrier<>* sg_bar;
static inline void __syncthreads() { sg_bar->arrive_and_wait(); }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) {
    static unsigned long long slot[1024];
    unsigned long long u = 0;
    memcpy(&u, &v, sizeof(T));
    slot[threadIdx.x] = u;
    __syncthreads();
    u = slot[threadIdx.x ^ (unsigned)o];
    __syncthreads();
    T r;
    memcpy(&r, &u, sizeof(T));
    return r;
}
template <class F> static void sg_launch(unsigned grid, unsigned block, F body) {
    gridDim.x = grid; blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        std::barrier<> bar(block);
        sg_bar = &bar;
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < block; ++t)
            ts.emplace_back([=] { threadIdx.x = t; body(); });
        for (auto& t : ts) t.join();
    }
}
"""
Launch = tuple[Rendered, int, int, Sequence[str]]  # kernel, grid, block, buffer names


def run_threaded(launches: Sequence[Launch], inputs: dict[str, np.ndarray],
                 outputs: dict[str, tuple[int, np.dtype]], tmp: Path) -> dict[str, np.ndarray]:
    """Run ``launches`` in order over named buffers: ``inputs`` (arrays, read from files) and
    ``outputs`` (name -> (element count, dtype), zeroed, returned)."""
    assert all(HOST_PRELUDE.count(c) == 1 for c in (_FIXED, _SYNC, _XOR))
    prelude = HOST_PRELUDE.replace(_FIXED, "").replace(_SYNC, "").replace(_XOR, "")
    sizes = {k: v.nbytes for k, v in inputs.items()}
    sizes.update({k: n * np.dtype(t).itemsize for k, (n, t) in outputs.items()})
    lines = [f"    unsigned char* {k} = (unsigned char*)calloc({max(n, 1)}, 1);"
             for k, n in sizes.items()]
    for k, v in inputs.items():
        np.ascontiguousarray(v).tofile(tmp / f"{k}.bin")
        lines.append(f'    {{ FILE* f = fopen("{tmp / k}.bin", "rb"); fread({k}, 1, '
                     f"{sizes[k]}, f); fclose(f); }}")
    for kern, grid, block, args in launches:
        assert kern.n_ptr == len(args), kern.name
        sig = ", ".join(["void*"] * len(args) + ["long long"])
        call = f"reinterpret_cast<void (*)({sig})>({kern.name})({', '.join(args)}, 0LL)"
        lines.append(f"    sg_launch({grid}, {block}, [=] {{ {call}; }});")
    for k in outputs:
        lines.append(f'    {{ FILE* f = fopen("{tmp / k}.out", "wb"); fwrite({k}, 1, '
                     f"{sizes[k]}, f); fclose(f); }}")
    main = "int main() {\n" + "\n".join(lines) + "\n    return 0;\n}\n"
    module = module_source([k for k, _, _, _ in launches]).replace(NARROW_HELPER[1], "")
    exe = tmp / "threaded"
    compile_host(prelude + THREADED + HOST_NARROW, module + main, exe,
                 ["-std=c++20", "-O1", "-w", "-pthread"])
    subprocess.run([str(exe)], check=True)
    return {k: np.fromfile(tmp / f"{k}.out", t)[:n] for k, (n, t) in outputs.items()}
