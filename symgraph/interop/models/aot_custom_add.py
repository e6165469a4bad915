"""The seed's MindSpore AOT example on symgraph: ``custom_add`` with a Python ``bprop``.

``python -m symgraph.interop.models.aot_custom_add --ctx cpu|gpu`` builds the library (gcc for the CPU twin
``custom_add.c``, nvcc for the seed's ``custom_add.cu``), prints the sum ``[4. 4. 4.]`` and the
gradient with respect to the first input ``[3. 2. 1.]``. As in the seed, ``bprop`` returns
``(y,)``: that is what the seed prints, not the true derivative of ``x + y`` (which is ``dout``);
``correct_bprop`` is the real one and passes the numeric gradient check in the tests.
"""
from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

import numpy as np

import symgraph as sg

HERE = Path(__file__).resolve().parent
COMMANDS = {
    "cpu": ["gcc", "-shared", "-fPIC", "-O2", "-o", "{out}", str(HERE / "custom_add.c")],
    "gpu": ["nvcc", "--shared", "-Xcompiler", "-fPIC", "-o", "{out}", str(HERE / "custom_add.cu")],
}


def build_library(device: str, out_dir: str) -> str:
    """Compile the CPU or GPU library into ``out_dir`` (skipped when up to date)."""
    out = os.path.join(out_dir, f"custom_add_{device}.so")
    src = Path(COMMANDS[device][-1])
    if not os.path.exists(out) or os.path.getmtime(out) < src.stat().st_mtime:
        subprocess.run([c.format(out=out) for c in COMMANDS[device]], check=True)
    return out


def seed_bprop(x: sg.sym.Symbol, y: sg.sym.Symbol, out: sg.sym.Symbol,
               dout: sg.sym.Symbol) -> tuple:
    """The seed's bprop: the gradient of x is y (only x's gradient is asked for)."""
    return (y,)


def correct_bprop(x: sg.sym.Symbol, y: sg.sym.Symbol, out: sg.sym.Symbol,
                  dout: sg.sym.Symbol) -> tuple:
    """d(x + y) = (dout, dout)."""
    return (dout, dout)


def allow_library(lib: str) -> str:
    """Put ``CustomAdd`` of ``lib`` on symgraph's allow list with what it does: it reads both
    inputs over the output's element count (so out_shape must equal the inputs' shape), and
    the seed's CUDA kernel reads float32 only (the CPU twin checks the dtype names itself)."""
    from symgraph.compiler.ops.native import has_cuda_code
    dtypes = ("float32",) if has_cuda_code(lib) else ("float32", "float64")
    decl = sg.operator.AotFunction(writes=sg.operator.same_shape, dtypes=dtypes)
    return sg.operator.register_custom_ops_library(lib, {"CustomAdd": decl})


def custom_add(lib: str, bprop=seed_bprop) -> sg.sym.Symbol:
    allow_library(lib)
    x, y = sg.sym.var("x"), sg.sym.var("y")
    return sg.sym.Custom(x, y, func=f"{lib}:CustomAdd", out_shape=lambda a, b: a,
                         out_dtype=np.float32, func_type="aot", bprop=bprop, name="custom_add")


def run(device: str, lib: str) -> tuple[np.ndarray, np.ndarray]:
    """Forward and gradient with respect to x (MindSpore's ``grad_position=(0,)``)."""
    ctx = sg.gpu() if device == "gpu" else sg.cpu()
    t1 = sg.nd.array([1., 2., 3.], ctx)
    t2 = sg.nd.array([3., 2., 1.], ctx)
    exe = custom_add(lib).bind(ctx, {"x": t1, "y": t2}, args_grad={"x": sg.nd.zeros(3, ctx)},
                               grad_req={"x": "write", "y": "null"})
    res = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    return res, exe.grad_dict["x"].asnumpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--build-dir", default=str(HERE / "build"))
    args = ap.parse_args()
    os.makedirs(args.build_dir, exist_ok=True)
    res, grad = run(args.ctx, build_library(args.ctx, args.build_dir))
    print(res)
    print(grad)


if __name__ == "__main__":
    main()
