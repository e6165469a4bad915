"""MXNet's model parallelism (``group2ctx`` / ``Module(group2ctxs=...)``) over CPU contexts:
arrays on their group's context, results equal to the ungrouped graph and to float64 numpy;
placements that cannot run refused by name."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, BindError
from symgraph.runtime.placement import device_groups


def _chain() -> sg.sym.Symbol:
    with sg.AttrScope(ctx_group="dev1"):
        net = (sg.sym.var("a") + sg.sym.var("b")) * 3.0
    with sg.AttrScope(ctx_group="dev2"):
        net = net * sg.sym.var("c")
    return net


def test_simple_bind_places_arrays_and_computes_float64_values() -> None:
    exe = _chain().simple_bind(sg.cpu(0), a=(2, 3), b=(2, 3), c=(2, 3),
                               group2ctx={"dev1": sg.cpu(1), "dev2": sg.cpu(2)})
    assert [exe.arg_dict[n].context for n in "abc"] == [sg.cpu(1), sg.cpu(1), sg.cpu(2)]
    assert exe.grad_dict["c"].context == sg.cpu(2)
    rng = np.random.default_rng(0)
    vals = {n: rng.uniform(-1, 1, (2, 3)) for n in "abc"}
    for n, v in vals.items():
        exe.arg_dict[n][:] = v
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, (vals["a"] + vals["b"]) * 3 * vals["c"], rtol=1e-5,
                               atol=1e-6)
    head = rng.uniform(-1, 1, (2, 3))
    exe.backward([sg.nd.array(head)])
    want = {"a": 3 * vals["c"] * head, "b": 3 * vals["c"] * head,
            "c": (vals["a"] + vals["b"]) * 3 * head}
    for n in "abc":
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), want[n], rtol=1e-5, atol=1e-6)


def test_bind_accepts_arrays_on_group_contexts_only_when_asked() -> None:
    args = {n: sg.nd.ones((2,), ctx=sg.cpu(1 if n != "c" else 0)) for n in "abc"}
    with pytest.raises(BindError, match="argument a: array is on cpu\\(1\\), executor on cpu"):
        _chain().bind(sg.cpu(0), args)
    exe = _chain().bind(sg.cpu(0), args, group2ctx={"dev1": sg.cpu(1)})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), [6.0, 6.0])


@pytest.mark.parametrize("where", [sg.gpu(0), sg.gpu(1)])
def test_gpu_placements_beside_another_device_are_refused(where) -> None:
    with pytest.raises(BindError, match="group 'dev2' is placed on gpu"):
        _chain().simple_bind(sg.cpu(0), a=(2,), b=(2,), c=(2,), group2ctx={"dev2": where})


def test_bad_group2ctx_values_are_refused() -> None:
    with pytest.raises(AttrError, match="group2ctx\\['dev1'\\]: expected a Context"):
        _chain().simple_bind(sg.cpu(0), a=(2,), b=(2,), c=(2,), group2ctx={"dev1": "cpu1"})
    with pytest.raises(AttrError, match="2 contexts for 3 devices"):
        device_groups({"dev1": [sg.cpu(1), sg.cpu(2)]}, 3)
    with pytest.raises(AttrError, match="a list of 1 dicts for 2 devices"):
        device_groups([{"dev1": sg.cpu(1)}], 2)


def test_device_groups_forms() -> None:
    assert device_groups(None, 2) == [None, None]
    assert device_groups({"g": sg.cpu(3)}, 2) == [{"g": sg.cpu(3)}, {"g": sg.cpu(3)}]
    assert device_groups({"g": [sg.cpu(3), sg.cpu(4)]}, 2) == [{"g": sg.cpu(3)},
                                                              {"g": sg.cpu(4)}]


@pytest.mark.parametrize("contexts,groups", [
    ([sg.cpu(0)], {"dev1": sg.cpu(1), "dev2": sg.cpu(2)}),
    ([sg.cpu(0), sg.cpu(1)], [{"dev1": sg.cpu(2), "dev2": sg.cpu(3)},
                              {"dev1": sg.cpu(4), "dev2": sg.cpu(5)}]),
])
def test_module_input_gradients(contexts, groups) -> None:
    with sg.AttrScope(ctx_group="dev1"):
        a = sg.sym.var("a") * 2
    with sg.AttrScope(ctx_group="dev2"):
        c = a * sg.sym.var("b")
    mod = sg.mod.Module(c, data_names=["a", "b"], label_names=None, context=contexts,
                        group2ctxs=groups)
    mod.bind(data_shapes=[("a", (4, 3)), ("b", (4, 3))], inputs_need_grad=True)
    mod.init_params()
    rng = np.random.default_rng(1)
    xa, xb = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))
    mod.forward(sg.io.DataBatch(data=[sg.nd.array(xa), sg.nd.array(xb)]), is_train=True)
    mod.backward([sg.nd.ones((4, 3))])
    ga, gb = mod.get_input_grads()
    np.testing.assert_allclose(ga.asnumpy(), 2 * xb, rtol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), 2 * xa, rtol=1e-6)
    if len(contexts) == 1:
        assert (ga.context, gb.context) == (sg.cpu(1), sg.cpu(2))


def test_bucketing_module_places_each_bucket() -> None:
    def sym_gen(key):
        with sg.AttrScope(ctx_group="dev1"):
            net = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=4, name="fc1")
        with sg.AttrScope(ctx_group="dev2"):
            net = sg.sym.FullyConnected(net, num_hidden=key, name=f"fc2_{key}")
        return net, ("data",), None
    mod = sg.mod.BucketingModule(sym_gen, default_bucket_key=3, context=[sg.cpu(0)],
                                 group2ctxs=[{"dev1": sg.cpu(1), "dev2": sg.cpu(2)}])
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=None)
    mod.init_params()
    x = np.random.default_rng(2).uniform(-1, 1, (2, 5))
    mod.forward(sg.io.DataBatch(data=[sg.nd.array(x)], bucket_key=3), is_train=False)
    arg = mod.get_params()[0]
    hidden = x @ arg["fc1_weight"].asnumpy().T.astype(np.float64) + arg["fc1_bias"].asnumpy()
    want = hidden @ arg["fc2_3_weight"].asnumpy().T + arg["fc2_3_bias"].asnumpy()
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), want, rtol=1e-5, atol=1e-6)
    exe = mod._curr_module._exec
    assert exe.arg_dict["fc1_weight"].context == sg.cpu(1)
    assert exe.arg_dict["fc2_3_weight"].context == sg.cpu(2)
