"""Cost of the custom-operator paths on the CPU, against built-in ops doing the same work.

``python -m benchmarks.custom_ops`` prints one row per case: median milliseconds of one
forward+backward over ``--repeat`` runs. Rows:
* softmax loss on (100, 10): the seed's NDArrayOp softmax vs ``SoftmaxOutput``;
* reorg (100, 20, 24, 24): the NDArrayOp reorg vs (nothing built in: reference only);
* add of n float32 values: the aot ``CustomAdd`` (gcc build) vs ``broadcast_add``.
"""
from __future__ import annotations

import argparse
import tempfile

import numpy as np

import symgraph as sg
from symgraph.interop.models.aot_custom_add import build_library, correct_bprop
from symgraph.interop.models.reorg_lenet import NDArrayReorg
from symgraph.interop.models.rtc_softmax_mlp import NDArraySoftmax

from benchmarks.common import host_median_ms


def _time(sym: sg.sym.Symbol, shapes: dict, repeat: int) -> float:
    exe = sym.simple_bind(sg.cpu(), **shapes)
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.integers(0, 10, arr.shape) if name.endswith("label") else \
            rng.normal(size=arr.shape)
    return host_median_ms(lambda: (exe.forward(is_train=True), exe.backward()), repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    S = sg.sym
    x, y = S.var("data"), S.var("y")
    lib = build_library("cpu", tempfile.mkdtemp())
    n = 1 << 20
    rows = [
        ("softmax loss (100,10)", "NDArrayOp", NDArraySoftmax()(data=x, name="softmax"),
         {"data": (100, 10), "softmax_label": (100,)}),
        ("softmax loss (100,10)", "SoftmaxOutput", S.SoftmaxOutput(x, name="softmax"),
         {"data": (100, 10), "softmax_label": (100,)}),
        ("reorg (100,20,24,24)", "NDArrayOp", NDArrayReorg(2)(data=x), {"data": (100, 20, 24, 24)}),
        (f"add {n}", "aot CustomAdd", S.Custom(x, y, func=f"{lib}:CustomAdd", func_type="aot",
                                               out_shape=(n,), out_dtype="float32",
                                               bprop=correct_bprop), {"data": (n,), "y": (n,)}),
        (f"add {n}", "broadcast_add", x + y, {"data": (n,), "y": (n,)}),
    ]
    print(f"{'case':24s} {'implementation':16s} {'fwd+bwd ms (median)':>20s}")
    for case, impl, sym, shapes in rows:
        print(f"{case:24s} {impl:16s} {_time(sym, shapes, args.repeat):20.3f}")


if __name__ == "__main__":
    main()
