"""Writes rnn-golden.npz: MXNet 1.9.1's fused RNN op (float64) on fixed random inputs, for
every mode, 2 layers, bidirectional, state_outputs=True: outputs and input gradients under
fixed head gradients. Run with MXNet 1.9.1 (numpy 1.23.5):
    /tmp/mxvenv/bin/python tests/data/mxnet/make_rnn_golden.py tests/data/mxnet/rnn-golden.npz
Keys per mode M: M:in:<x|p|h0|c0>, M:head:<k>, M:out:<k>, M:grad:<x|p|h0|c0>."""
import sys

import mxnet as mx
import numpy as np

T, N, I, H, L = 3, 2, 3, 4, 2
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def main(path: str) -> None:
    rng = np.random.RandomState(7)
    arrays = {}
    for mode, g in GATES.items():
        size = sum(2 * (g * H * ((I if k == 0 else 2 * H) + H) + 2 * g * H) for k in range(L))
        ins = {"x": rng.normal(size=(T, N, I)), "p": rng.normal(size=(size,)) * 0.4,
               "h0": rng.normal(size=(2 * L, N, H))}
        if mode == "lstm":
            ins["c0"] = rng.normal(size=(2 * L, N, H))
        nd = {k: mx.nd.array(v, dtype="float64") for k, v in ins.items()}
        for v in nd.values():
            v.attach_grad()
        with mx.autograd.record():
            outs = mx.nd.RNN(*nd.values(), state_size=H, num_layers=L, bidirectional=True,
                             mode=mode, state_outputs=True)
        heads = [rng.normal(size=o.shape) for o in outs]
        mx.autograd.backward(outs, [mx.nd.array(h, dtype="float64") for h in heads])
        for k, v in ins.items():
            arrays[f"{mode}:in:{k}"] = v
            arrays[f"{mode}:grad:{k}"] = nd[k].grad.asnumpy()
        for i, (o, h) in enumerate(zip(outs, heads)):
            arrays[f"{mode}:out:{i}"] = o.asnumpy()
            arrays[f"{mode}:head:{i}"] = h
    np.savez(path, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
