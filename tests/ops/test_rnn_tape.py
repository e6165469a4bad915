"""The fused ``RNN`` op keeps its training forward's tape for ``_backward_RNN`` (ops/rnn.py):
a training step runs each layer's forward once, its gradients equal float64 central
differences of the recomputing backward's loss, a backward whose inputs are other buffers
recomputes, and a run context keeps at most ``TAPES_KEPT`` tapes."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.compiler.ops import rnn, rnn_cells
from symgraph.core.attrs import parse_attrs
from symgraph.core.registry import RunCtx, get_op
from symgraph.runtime.cpu import rnn as cpu_rnn

S = sg.sym
T, N, I, H = 4, 3, 2, 3


def _attrs(mode: str, p: float = 0.0) -> dict:
    return dict(state_size=H, num_layers=2, bidirectional=True, mode=mode, p=p,
                state_outputs=True)


def _names(mode: str) -> list[str]:
    return ["data", "params", "state"] + (["cell"] if mode == "lstm" else [])


def _inputs(mode: str, seed: int = 0) -> list[np.ndarray]:
    sym = S.RNN(*[S.var(n) for n in _names(mode)], **_attrs(mode))
    shapes = sym.infer_shape(data=(T, N, I))[0]
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) * 0.6 for s in shapes]


def _count_runs(monkeypatch: pytest.MonkeyPatch) -> list:
    """Calls of either backend's layer forward (the numpy reference's, the compiled one's)."""
    calls: list = []
    for module in (rnn_cells, cpu_rnn):
        real = module.run
        monkeypatch.setattr(module, "run",
                            lambda *a, real=real: (calls.append(1), real(*a))[1])
    return calls


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_a_training_step_runs_the_forward_once(mode: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    xs = _inputs(mode)
    sym = S.RNN(*[S.var(n) for n in _names(mode)], name="rnn", **_attrs(mode))
    exe = sym.bind(sg.cpu(), {n: sg.nd.array(x, dtype=np.float64)
                              for n, x in zip(_names(mode), xs)},
                   args_grad={n: sg.nd.zeros(x.shape, dtype=np.float64)
                              for n, x in zip(_names(mode), xs)})
    calls = _count_runs(monkeypatch)
    heads = [np.random.default_rng(1).normal(size=o.shape) for o in
             exe.forward(is_train=True)]
    exe.backward([sg.nd.array(h, dtype=np.float64) for h in heads])
    assert len(calls) == 4, calls  # 2 layers x 2 directions, the backward recomputing none
    got = {n: exe.grad_dict[n].asnumpy() for n in _names(mode)}

    def loss(values: list[np.ndarray]) -> float:
        outs = rnn._forward(parse_attrs(get_op("RNN").params, _attrs(mode), "rnn"),
                            values, None)[0]
        return float(sum((o * h).sum() for o, h in zip(outs, heads)))
    for k, name in enumerate(_names(mode)):
        flat = xs[k].reshape(-1)
        for j in np.random.default_rng(2).choice(flat.size, size=min(6, flat.size),
                                                 replace=False):
            up, down = [x.copy() for x in xs], [x.copy() for x in xs]
            up[k].reshape(-1)[j] += 1e-6
            down[k].reshape(-1)[j] -= 1e-6
            want = (loss(up) - loss(down)) / 2e-6
            assert got[name].reshape(-1)[j] == pytest.approx(want, rel=1e-5, abs=1e-7), name


def _direct(mode: str, xs: list, state: dict, is_train: bool = True) -> tuple[Any, list]:
    a = parse_attrs(get_op("RNN").params, _attrs(mode), "rnn")
    outs = get_op("RNN").compute(a, xs, RunCtx(is_train=is_train, state=state))
    return a, outs


def test_other_buffers_recompute_with_the_same_result(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    xs, state = _inputs("lstm"), {}
    a, outs = _direct("lstm", xs, state)
    grads = [np.ones_like(o) for o in outs]
    back = get_op("_backward_RNN").compute
    kept = back(a, grads + xs, RunCtx(is_train=True, state=state))
    calls = _count_runs(monkeypatch)
    again = back(a, grads + [x.copy() for x in xs], RunCtx(is_train=True, state=state))
    assert len(calls) == 4  # not the kept tape: the inputs are other buffers
    for k, r in zip(kept, again):
        np.testing.assert_allclose(k, r, rtol=1e-12)


def test_inference_keeps_nothing_and_tapes_are_bounded() -> None:
    state: dict = {}
    _direct("gru", _inputs("gru"), state, is_train=False)
    assert not state.get("RNN tapes")
    for seed in range(rnn.TAPES_KEPT + 3):  # forwards that no backward follows
        _direct("gru", _inputs("gru", seed), state)
    assert len(state["RNN tapes"]) == rnn.TAPES_KEPT
