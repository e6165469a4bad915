"""Module ``state_names`` (inputs kept between forwards, set with ``set_states``, never
initialized or trained) on one and two devices, against numpy float64; and the fresh automatic
names a BucketingModule's ``sym_gen`` gets per bucket."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg


def _net() -> sg.sym.Symbol:
    """out = data W^T + b + state."""
    fc = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc")
    return sg.sym.elemwise_add(fc, sg.sym.var("state"), name="out")


def _module(contexts: list) -> sg.mod.Module:
    mod = sg.mod.Module(_net(), label_names=None, context=contexts, state_names=["state"])
    mod.bind(data_shapes=[("data", (4, 2))], for_training=False)
    sg.random.seed(7)  # the same weights whatever ran before (the checks are relative)
    mod.init_params(sg.init.Uniform(1.0))
    return mod


@pytest.mark.parametrize("n_dev", [1, 2])
def test_states_feed_forward(n_dev: int) -> None:
    mod = _module([sg.cpu(i) for i in range(n_dev)])
    arg, _ = mod.get_params()
    assert sorted(arg) == ["fc_bias", "fc_weight"]  # a state is not a parameter
    w, b = arg["fc_weight"].asnumpy().astype(np.float64), arg["fc_bias"].asnumpy()
    x = np.arange(8.0).reshape(4, 2) / 8
    batch = sg.io.DataBatch(data=[sg.nd.array(x)], label=[])
    mod.set_states(value=2.0)
    mod.forward(batch)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), x @ w.T + b + 2.0, rtol=1e-6)
    s = np.linspace(-1, 1, 12).reshape(4, 3)
    mod.set_states(states=[sg.nd.array(s)])  # one array for the batch: cut per device
    mod.forward(batch)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), x @ w.T + b + s, rtol=1e-6)
    np.testing.assert_allclose(mod.get_states()[0].asnumpy(), s, rtol=1e-6)
    parts = mod.get_states(merge_multi_context=False)[0]
    assert len(parts) == n_dev and sum(p.shape[0] for p in parts) == 4
    mod.set_states(states=[[p * 0 for p in parts]])  # per-device parts, as returned
    mod.forward(batch)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), x @ w.T + b, rtol=1e-6)


def test_bad_states_are_refused_untouched() -> None:
    mod = _module([sg.cpu()])
    mod.set_states(value=1.0)
    with pytest.raises(sg.BindError, match="exactly one of states and value"):
        mod.set_states(states=[np.zeros((4, 3))], value=0.0)
    with pytest.raises(sg.BindError, match=r"state state has shape \(4, 2\), the bound state "
                                           r"\(4, 3\)"):
        mod.set_states(states=[np.zeros((4, 2))])
    with pytest.raises(sg.BindError, match="state name 'nope' is not an argument"):
        sg.mod.Module(_net(), label_names=None, state_names=["nope"])
    assert (mod.get_states()[0].asnumpy() == 1.0).all()


def test_bucket_sym_gen_names_restart_per_bucket() -> None:
    """Unnamed layers of every bucket are ``embedding0``..., so switching buckets shares the
    default bucket's parameters instead of missing ``embedding1_weight``."""
    def sym_gen(seq_len: int):
        emb = sg.sym.Embedding(sg.sym.var("data"), input_dim=10, output_dim=4)
        out = sg.sym.FullyConnected(sg.sym.Reshape(emb, shape=(-1, 4)), num_hidden=2)
        return out, ("data",), None
    mod = sg.mod.BucketingModule(sym_gen, default_bucket_key=3)
    mod.bind([("data", (2, 3))], for_training=False)
    mod.init_params()
    assert mod.symbol.list_arguments()[1] == "embedding0_weight"
    mod.switch_bucket(5, [("data", (2, 5))])
    assert mod.symbol.list_arguments() == ["data", "embedding0_weight",
                                           "fullyconnected0_weight", "fullyconnected0_bias"]
    mod.forward(sg.io.DataBatch(data=[sg.nd.ones((2, 5))], label=[], bucket_key=5))
    weights = mod.get_params()[0]
    emb = weights["embedding0_weight"].asnumpy()[1]
    want = emb @ weights["fullyconnected0_weight"].asnumpy().T + weights[
        "fullyconnected0_bias"].asnumpy()
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), np.tile(want, (10, 1)),
                               rtol=1e-5)


def test_total_exec_bytes_counts_the_bound_arrays() -> None:
    """data (4, 2), fc_weight (3, 2), fc_bias (3,), state (4, 3), output (4, 3); float32, no
    gradients (bound for inference)."""
    assert _module([sg.cpu()])._total_exec_bytes == (8 + 6 + 3 + 12 + 12) * 4
