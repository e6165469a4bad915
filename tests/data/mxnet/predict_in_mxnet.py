"""Run symgraph checkpoints in MXNet 1.9.1 (child process of tests/test_mxnet_interop.py).

    <mxnet python> predict_in_mxnet.py PREFIX [PREFIX ...]
    <mxnet python> predict_in_mxnet.py --resave IN OUT [IN OUT ...]
                                            (mx.nd.save(OUT, mx.nd.load(IN)) for each pair)

For each prefix, ``mx.model.load_checkpoint(PREFIX, 1)``; every argument the file does not hold
(labels) is bound to zeros of the inferred shape; one inference forward; the outputs are saved
with ``mx.nd.save(PREFIX-mxnet-out.params, [outputs])``. A prefix whose symbol or parameters
MXNet refuses gets ``PREFIX-mxnet-error.txt`` with the message instead, so one bad case does
not hide the others.
"""
from __future__ import annotations

import sys
import traceback

import mxnet as mx


def predict(prefix: str) -> list:
    sym, arg, aux = mx.model.load_checkpoint(prefix, 1)
    known = {k: v.shape for k, v in arg.items()}
    arg_shapes, _, _ = sym.infer_shape(**known)
    args = {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        args[name] = arg[name] if name in arg else mx.nd.zeros(shape)
    exe = sym.bind(mx.cpu(), args=args, aux_states=dict(aux), grad_req="null")
    return exe.forward(is_train=False)


def main(prefixes: list[str]) -> None:
    for prefix in prefixes:
        try:
            mx.nd.save(f"{prefix}-mxnet-out.params", predict(prefix))
        except Exception:  # reported to the test, which fails naming the case
            with open(f"{prefix}-mxnet-error.txt", "w") as f:
                f.write(traceback.format_exc())


if __name__ == "__main__":
    if sys.argv[1] == "--resave":
        for src, dst in zip(sys.argv[2::2], sys.argv[3::2]):
            mx.nd.save(dst, mx.nd.load(src))
    else:
        main(sys.argv[1:])
