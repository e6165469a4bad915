"""The direct tensor-core convolution (``kernels_conv_mma``): which geometries it takes, that its
sources compile for sm_90 (no GPU needed), and on the GPU that a channels-last float16 /
bfloat16 network whose convolutions all run the generated branch gives the numpy backend's
float32 outputs and gradients (every forward, data and weight-gradient call through the direct
kernels)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.core.expr import call, inp
from symgraph.runtime.cuda.kernels_conv_mma import mma_fits, render_conv_mma
from symgraph.runtime.cuda.kernels_conv_mma_filter import render_conv_mma_filter, render_filter_sum
from symgraph.compiler.ops.geometry import ConvWindow

from .narrow import NARROW, assert_close, rounded

S = sg.sym


def _window(c: int, f: int, k: int, **kw: Any) -> ConvWindow:
    g = ConvWindow(n=3, c=c, spatial=(5, 7), kernel=(k, k), stride=(1, 1),
                   pad=((k - 1) // 2,) * 2, dilate=(1, 1), out=(5, 7), filters=f, groups=1,
                   channel_last=True)
    return replace(g, **kw)


@pytest.mark.parametrize("g,dtype,call,fits", [
    (_window(16, 16, 3), "bfloat16", "data", True),
    (_window(32, 16, 1), "float16", "filter", True),
    (_window(16, 32, 5), "bfloat16", "forward", True),
    (_window(3, 16, 3), "bfloat16", "forward", True),  # an image's channels, zero-padded
    (_window(3, 16, 3), "bfloat16", "filter", True),
    (_window(3, 16, 3), "bfloat16", "data", False),  # it would write 3 of 16 channels
    (_window(16, 16, 3), "float32", "forward", False),  # no tensor-core float32 here
    (_window(16, 16, 3, channel_last=False), "bfloat16", "forward", False),
    (_window(64, 16, 3), "bfloat16", "forward", False),  # wide layers stay with cuDNN
    (_window(16, 8, 3), "bfloat16", "forward", False),  # a fragment is 16 output channels
    (_window(16, 16, 3, stride=(2, 2)), "bfloat16", "forward", False),
    (_window(16, 16, 3, pad=(0, 0)), "bfloat16", "forward", False),
    (_window(16, 16, 3, dilate=(2, 2)), "bfloat16", "forward", False),
    (_window(16, 16, 3, groups=2), "bfloat16", "forward", False),
    (_window(32, 32, 5), "bfloat16", "forward", False),  # 64 KB of staged weights
    (_window(32, 32, 3), "bfloat16", "forward", True),
    (_window(32, 32, 3), "bfloat16", "filter", False),  # 96 sums a thread: cuDNN is faster
])
def test_which_geometries_fit(g: ConvWindow, dtype: str, call: str, fits: bool) -> None:
    assert mma_fits(g, dtype, call) is fits


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_sources_compile_for_sm90() -> None:
    windows = (_window(16, 16, 3), _window(32, 16, 1), _window(16, 32, 5), _window(3, 16, 3))
    kernels = [render_conv_mma(g, dt, tr) for g in windows
               for dt in ("bfloat16", "float16") for tr in (False, True) if g.c >= 16 or not tr]
    mask_of_sum = call("gt", inp(1), 0.0) * (inp(0) + inp(2))  # ReLU's mask, a residual's dy
    kernels += [render_conv_mma(g, "bfloat16", True, mask_of_sum, 2) for g in windows[:3]]
    kernels += [k for g in windows for dt in ("bfloat16", "float16")
                for k in (render_conv_mma_filter(g, dt), render_filter_sum(g, 6 * g.kh, dt))
                if mma_fits(g, dt, "filter")]
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    for k in kernels:
        assert k.name.encode() in cubin


def _net() -> Any:
    """Three convolutions (C -> 16 3x3, 16 -> 32 3x3 with a bias, 32 -> 16 1x1) with ReLUs:
    each one's data gradient is needed, so every forward and data call runs."""
    x = S.Variable("data")
    x = S.relu(S.Convolution(x, num_filter=16, kernel=(3, 3), pad=(1, 1), no_bias=True,
                             name="c1"))
    x = S.relu(S.Convolution(x, num_filter=32, kernel=(3, 3), pad=(1, 1), name="c2"))
    return S.Convolution(x, num_filter=16, kernel=(1, 1), no_bias=True, name="c3")


def _run(ctx: Any, args: dict, head: np.ndarray, dtype: Any) -> tuple[np.ndarray, dict, Any]:
    sym = _net()
    arrays = {k: sg.nd.array(v, ctx, dtype) for k, v in args.items()}
    grads = {k: sg.nd.zeros(v.shape, ctx, dtype) for k, v in args.items()}
    exe = sym.bind(ctx, arrays, args_grad=grads, grad_req="write")
    out = exe.forward(is_train=True)[0]
    exe.backward([sg.nd.array(head, ctx, dtype)])
    return out.asnumpy(), {k: g.asnumpy() for k, g in grads.items()}, exe


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", sorted(NARROW))
@pytest.mark.parametrize("channels", [16, 3])
def test_direct_kernel_matches_float32_cpu(dtype: str, channels: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """With 3 input channels (an image's, zero-padded to 16 as loaded), the first layer's data
    gradient is not a direct kernel's (it would write 3 of 16 channels)."""
    from symgraph.runtime.cuda import backend, conv_choice
    from symgraph.runtime.cuda.actions import Kernel, flat_actions
    monkeypatch.setattr(conv_choice, "choose", lambda act, *_: act.fallback)
    rng = np.random.default_rng(3)
    shapes = {"data": (3, channels, 5, 7), "c1_weight": (16, channels, 3, 3),
              "c2_weight": (32, 16, 3, 3),
              "c2_bias": (32,), "c3_weight": (16, 32, 1, 1)}
    args = {k: rounded(rng.normal(size=s) * (0.3 if k != "data" else 1.0), dtype)
            for k, s in shapes.items()}
    head = rounded(rng.normal(size=(3, 16, 5, 7)), dtype)
    want, want_grads, _ = _run(sg.cpu(), args, head, np.float32)
    got, got_grads, exe = _run(sg.gpu(0), args, head, NARROW[dtype])
    program = exe._train.program
    assert isinstance(program, backend.CudaProgram)
    names = [a.kernel.name for acts in program.actions for a in flat_actions(acts, "fallback")
             if isinstance(a, Kernel)]
    mma = [a for acts in program.actions for a in flat_actions(acts, "fallback")
           if isinstance(a, Kernel) and "conv_mma" in a.kernel.name]
    assert len(mma) == (9 if channels == 16 else 8), names  # forward, data, filter calls
    # conv2's data gradient goes through conv1's ReLU: that mask is applied as it is stored
    assert any(len(a.args) > 3 for a in mma), [a.kernel.name for a in mma]
    assert_close(got, want, dtype, "conv net output")
    for k in shapes:
        assert_close(got_grads[k], want_grads[k], dtype, f"conv net gradient of {k}")
