"""Cooperative launches (``cuda/cooperative.py``): the ctypes structures match the CUDA toolkit's
``cuda.h`` (sizes and field offsets printed by a C program compiled against it, no GPU needed),
channel-last BatchNorm's one-kernel steps are the cooperative ones, and on the GPU a program
with them runs, is captured in a CUDA graph and replayed (the ``gpu`` tests of
``test_bn_channel_last.py`` compare its values with numpy)."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

import symgraph as sg
from symgraph.runtime.cuda.actions import Kernel

from .host_run import host_compiler, lowered

CUDA_H = Path("/usr/local/cuda/include/cuda.h")
S = sg.sym

PROGRAM = r"""
#include <cstddef>
#include <cstdio>
#include <cuda.h>
int main() {
    printf("%zu %zu %zu %zu\n", sizeof(CUlaunchAttribute), offsetof(CUlaunchAttribute, value),
           sizeof(CUlaunchAttributeValue), (size_t)CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    printf("%zu %zu %zu %zu %zu\n", sizeof(CUlaunchConfig),
           offsetof(CUlaunchConfig, sharedMemBytes), offsetof(CUlaunchConfig, hStream),
           offsetof(CUlaunchConfig, attrs), offsetof(CUlaunchConfig, numAttrs));
    return 0;
}
"""


@pytest.mark.skipif(not CUDA_H.exists() or host_compiler() is None,
                    reason="needs the CUDA toolkit's cuda.h and g++")
def test_structures_match_cuda_h(tmp_path: Path) -> None:
    from symgraph.runtime.cuda.cooperative import (CU_LAUNCH_ATTRIBUTE_COOPERATIVE, LaunchAttribute,
                                           LaunchConfig)
    src, exe = tmp_path / "layout.cpp", tmp_path / "layout"
    src.write_text(PROGRAM)
    subprocess.run([host_compiler(), f"-I{CUDA_H.parent}", "-o", str(exe), str(src)],
                   check=True)
    attr, config = (line.split() for line in
                    subprocess.run([str(exe)], capture_output=True, text=True,
                                   check=True).stdout.splitlines())
    assert [int(v) for v in attr] == [ctypes.sizeof(LaunchAttribute),
                                      LaunchAttribute.value.offset,
                                      ctypes.sizeof(LaunchAttribute) - LaunchAttribute.value.offset,
                                      CU_LAUNCH_ATTRIBUTE_COOPERATIVE]
    assert [int(v) for v in config] == [ctypes.sizeof(LaunchConfig),
                                        LaunchConfig.sharedMemBytes.offset,
                                        LaunchConfig.hStream.offset, LaunchConfig.attrs.offset,
                                        LaunchConfig.numAttrs.offset]


def test_channel_last_batchnorm_steps_are_cooperative() -> None:
    """Both one-kernel steps launch cooperatively; the NCHW path's kernels do not."""
    for axis, expect in ((3, True), (1, False)):
        sym = S.BatchNorm(S.var("x"), fix_gamma=False, axis=axis, name="bn")
        exe = sym.simple_bind(sg.cpu(), x=(8, 4, 4, 6))
        sch = exe._train.schedule
        for st in sch.steps:
            if st.node.op in ("BatchNorm", "_backward_BatchNorm"):
                acts, _, _ = lowered(st, sch.shapes, sch.dtypes)
                coop = [a.cooperative for a in acts if isinstance(a, Kernel)
                        and "bn_cols_" in a.kernel.name]
                assert coop == ([True] if expect else []), (axis, st.node.op)
                assert all(not a.cooperative for a in acts if isinstance(a, Kernel)
                           and "bn_cols_" not in a.kernel.name)
