"""C libraries with MindSpore's aot ABI for the safety tests, built with gcc into a tmp folder."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[2] / "symgraph" / "interop" / "models"

# A library whose loading leaves a trace: its constructor writes the file named by SG_MARK.
MARKED_SRC = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void mark(void) {
    const char *p = getenv("SG_MARK");
    if (p) { FILE *f = fopen(p, "w"); if (f) { fputs("loaded", f); fclose(f); } }
}
/* out = 2 * x over the output's element count, float32 or float64. */
int Twice(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
          void *stream, void *extra) {
    int64_t n = 1;
    for (int d = 0; d < ndims[1]; ++d) n *= shapes[1][d];
    if (dtypes[0][5] == '6') {
        const double *x = params[0]; double *y = params[1];
        for (int64_t i = 0; i < n; ++i) y[i] = 2 * x[i];
    } else {
        const float *x = params[0]; float *y = params[1];
        for (int64_t i = 0; i < n; ++i) y[i] = 2 * x[i];
    }
    return 0;
}
int Other(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
          void *stream, void *extra) { abort(); return 0; }
"""

# float32 in, float32 out: y = 3 x (declared float32-only).
F32_SRC = r"""
#include <stdint.h>
int Triple32(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
             void *stream, void *extra) {
    int64_t n = 1;
    for (int d = 0; d < ndims[1]; ++d) n *= shapes[1][d];
    const float *x = params[0]; float *y = params[1];
    for (int64_t i = 0; i < n; ++i) y[i] = 3.0f * x[i];
    return 0;
}
"""

# float64 in, float32 out: y = (float)(x * x), a kernel of a mixed-dtype graph.
MIXED_SRC = r"""
#include <stdint.h>
int Square64to32(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                 void *stream, void *extra) {
    int64_t n = 1;
    for (int d = 0; d < ndims[1]; ++d) n *= shapes[1][d];
    const double *x = params[0]; float *y = params[1];
    for (int64_t i = 0; i < n; ++i) y[i] = (float)(x[i] * x[i]);
    return 0;
}
"""


def need_gcc() -> None:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")


def build(folder: Path, name: str, source: str) -> str:
    """Compile ``source`` into ``folder/name.so`` and return its path."""
    need_gcc()
    src = folder / f"{name}.c"
    src.write_text(source)
    out = folder / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(out), str(src)], check=True)
    return str(out)


def build_custom_add(folder: Path, device: str = "cpu") -> str:
    """The project's CustomAdd (models/custom_add.c, or the seed's .cu with nvcc)."""
    if device == "gpu":
        if shutil.which("nvcc") is None:
            pytest.skip("needs nvcc")
        out = folder / "custom_add_gpu.so"
        subprocess.run(["nvcc", "--shared", "-Xcompiler", "-fPIC", "-o", str(out),
                        str(MODELS / "custom_add.cu")], check=True)
        return str(out)
    return build(folder, "custom_add_cpu", (MODELS / "custom_add.c").read_text())
