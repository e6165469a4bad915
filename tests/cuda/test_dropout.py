"""Dropout on the GPU: the Philox-4x32-10 generator against the published known-answer vectors
(compiled for the host by nvcc, so CI checks it without a GPU), and the mask's statistics,
reproducibility and freshness under CUDA graph replay on the device."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.kernels_random import PHILOX_NAME, PHILOX_SOURCE

S = sg.sym
# Random123's kat_vectors for philox4x32_10: (counter, key) -> output.
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_philox_matches_known_answers(tmp_path: Path) -> None:
    calls = "".join(
        f"    r = {PHILOX_NAME}(make_uint4({', '.join(f'{c}u' for c in ctr)}), "
        f"make_uint2({key[0]}u, {key[1]}u));\n"
        '    printf("%u %u %u %u\\n", r.x, r.y, r.z, r.w);\n' for ctr, key, _ in KAT)
    src = tmp_path / "philox.cu"
    src.write_text("#include <cstdio>\n#include <vector_functions.h>\n" + PHILOX_SOURCE
                   + f"int main() {{\n    uint4 r;\n{calls}    return 0;\n}}\n")
    exe = tmp_path / "philox"
    subprocess.run([compiler.find_nvcc(), "-o", str(exe), str(src)], check=True)
    got = [tuple(int(v) for v in ln.split()) for ln in
           subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
           if ln]
    assert got == [want for _, _, want in KAT]


def _dropout_exe(p: float, shape: tuple, **kw: object) -> Any:
    return S.Dropout(S.var("x"), p=p, **kw).simple_bind(sg.gpu(0), x=shape)


@pytest.mark.gpu
def test_gpu_dropout_keep_rate_scale_and_gradient() -> None:
    exe = _dropout_exe(0.25, (256, 100))
    x = np.ones((256, 100), np.float32)
    np.testing.assert_array_equal(exe.forward(is_train=False, x=x)[0].asnumpy(), x)
    a = exe.forward(is_train=True)[0].asnumpy()
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((a == 0).mean() - 0.25) < 0.01  # 25600 draws: 4 standard deviations is 0.011
    assert abs(a.mean() - 1.0) < 0.04
    exe.backward(sg.nd.array(np.full(x.shape, 3.0, np.float32), sg.gpu(0)))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 3.0 * a, rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("graphs", ["1", "0"])
def test_gpu_dropout_reseed_repeats_and_replay_draws_new_masks(
        graphs: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CUDA_GRAPHS", graphs)
    exe = _dropout_exe(0.5, (64, 33))
    x = np.random.default_rng(0).normal(size=(64, 33)).astype(np.float32)
    sg.random.seed(11)
    # runs 1-4: eager, captured, replayed, replayed
    first = [exe.forward(is_train=True, x=x)[0].asnumpy() for _ in range(4)]
    for i in range(4):
        for j in range(i):
            assert not np.array_equal(first[i], first[j]), (i, j)
    sg.random.seed(11)
    again = [exe.forward(is_train=True, x=x)[0].asnumpy() for _ in range(4)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
def test_gpu_dropout_axes_and_always() -> None:
    exe = _dropout_exe(0.5, (40, 6), mode="always", axes=(1,))
    rows = exe.forward(is_train=False, x=np.ones((40, 6), np.float32))[0].asnumpy()
    assert np.all(rows == rows[:, :1])  # one mask value per row, shared along axis 1
    assert 5 < (rows[:, 0] == 0).sum() < 35
