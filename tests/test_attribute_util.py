"""sg.AttrScope (scoped user attributes, MXNet's hidden keys), sg.util (environment, GPU
count, the np_shape switch) and Context as a with-block default; attribute dicts checked
against MXNet 1.9.1 live where installed."""
from __future__ import annotations

import pickle
import threading

import pytest

import symgraph as sg

from .mxnet_live import mxnet_json

S = sg.sym


def test_scope_reaches_variables_and_ops() -> None:
    with sg.AttrScope(group="4", ctx_group="dev1"):
        v = S.var("v", attr={"group": "1"}, lr_mult=1)
        w = S.var("w")
    assert (v.attr("group"), w.attr("group"), w.attr("ctx_group")) == ("1", "4", "dev1")
    assert v.attr("lr_mult") == v.attr("__lr_mult__") == "1"
    with sg.AttrScope(__mood__="calm"):
        with sg.AttrScope(__deep__="yes"):
            fc = S.FullyConnected(S.var("d"), num_hidden=2, name="fc")
        relu = S.relu(fc)
    assert fc.attr("__mood__") == "calm" and fc.attr("__deep__") == "yes"
    assert relu.attr("__deep__") is None and S.relu(fc).attr("__mood__") is None
    assert fc.attr_dict()["fc_weight"]["__mood__"] == "calm"  # created variables inherit
    assert pickle.loads(pickle.dumps(fc)).tojson() == fc.tojson()


def test_scope_errors_and_threads() -> None:
    with pytest.raises(ValueError, match="string"):
        sg.AttrScope(group=4)
    with sg.AttrScope(__a__="x"):
        with pytest.raises(sg.AttrError, match="user attribute"):
            S.relu(S.var("x"), attr={"plain": "1"})
        seen = []
        t = threading.Thread(target=lambda: seen.append(S.var("t").attr("__a__")))
        t.start()
        t.join()
    assert seen == [None]


def test_np_shape_switch_is_scoped_and_per_thread() -> None:
    assert not sg.is_np_shape()
    with sg.np_shape(True):
        assert sg.is_np_shape() and sg.util.is_np_shape()
        with sg.np_shape(False):
            assert not sg.is_np_shape()
        assert sg.is_np_shape()
    assert sg.set_np_shape(True) is False
    assert sg.set_np_shape(False) is True

    @sg.use_np_shape
    def inside() -> bool:
        return sg.is_np_shape()
    assert inside() and not sg.is_np_shape()


def test_util_environment_and_gpus() -> None:
    sg.util.setenv("SG_UTIL_X", "5")
    assert sg.util.getenv("SG_UTIL_X") == "5"
    sg.util.setenv("SG_UTIL_X", None)
    assert sg.util.getenv("SG_UTIL_X") is None
    assert sg.util.get_gpu_count() == sg.context.num_gpus() >= 0
    with pytest.raises(sg.SymgraphError, match="no GPU 99"):
        sg.util.get_gpu_memory(99)


def test_context_with_block() -> None:
    with sg.cpu(2) as ctx:
        assert sg.current_context() is ctx
        with sg.cpu(5):
            assert sg.current_context() == sg.cpu(5)
        assert sg.nd.ones(1).context == sg.cpu(2)
    assert sg.current_context() == sg.cpu()
    seen = []
    worker = threading.Thread(target=lambda: (setattr(sg.Context, "default_ctx", sg.gpu(4)),
                                              seen.append(sg.Context.default_ctx)))
    worker.start()
    worker.join()
    assert seen == [sg.gpu(4)] and sg.Context.default_ctx == sg.cpu()  # per thread
    assert sg.Context.devtype2str[sg.gpu(1).device_typeid] == "gpu"


def test_scope_assigned_to_the_class_is_per_thread() -> None:
    sg.AttrScope.current = sg.AttrScope(__k__="main")
    try:
        seen = []
        worker = threading.Thread(target=lambda: seen.append(dict(sg.AttrScope.current._attr)))
        worker.start()
        worker.join()
        assert seen == [{}] and S.relu(S.var("q")).attr("__k__") == "main"
    finally:
        sg.AttrScope.current = sg.AttrScope()
    assert S.relu(S.var("q")).attr("__k__") is None


@pytest.mark.mxnet
def test_attr_dicts_match_mxnet() -> None:
    script = (
        "import json, mxnet as mx\n"
        "d = mx.sym.Variable('data', attr={'mood': 'angry'})\n"
        "op = mx.sym.Convolution(data=d, name='conv', kernel=(1, 1), num_filter=1,"
        " attr={'__mood__': 'so so', 'wd_mult': 'x'}, lr_mult=1)\n"
        "with mx.AttrScope(ctx_group='g', force_mirroring='True'):\n"
        "    v = mx.sym.Variable('v', lr_mult=2)\n"
        "print(json.dumps([op.attr_dict(), v.list_attr(), v.attr('ctx_group')]))")
    want = mxnet_json(script, {})
    d = S.Variable("data", attr={"mood": "angry"})
    op = S.Convolution(data=d, name="conv", kernel=(1, 1), num_filter=1,
                       attr={"__mood__": "so so", "wd_mult": "x"}, lr_mult=1)
    with sg.AttrScope(ctx_group="g", force_mirroring="True"):
        v = S.Variable("v", lr_mult=2)
    ours = op.attr_dict()
    for node, attrs in want[0].items():  # MXNet also copies op parameters to the weights
        user = {k: a for k, a in attrs.items() if k.startswith("__") or k in
                ("mood", "lr_mult", "wd_mult")}
        assert {k: ours[node][k] for k in user} == user
    assert v.list_attr() == want[1] and v.attr("ctx_group") == want[2]


def test_base_helpers_of_mxnet_scripts() -> None:
    from symgraph.core.base import _as_list, integer_types, numeric_types, py_str, string_types
    assert _as_list((1, 2)) == (1, 2) and _as_list([1]) == [1] and _as_list(3) == [3]
    assert py_str("é".encode()) == "é" and isinstance("s", string_types)
    assert isinstance(3, integer_types) and not isinstance(3.0, integer_types)
    assert isinstance(2.5, numeric_types) and not isinstance("2", numeric_types)


def test_np_shape_marks_unknown_dimensions_with_minus_one() -> None:
    cat = S.Concat(S.var("x"), S.var("y"), dim=1)
    assert cat.infer_shape_partial(x=(0, 3), y=(0, 2))[1] == [(0, 5)]
    with sg.np_shape(True):
        assert cat.infer_shape_partial(x=(-1, 3), y=(-1, 2))[1] == [(-1, 5)]
        assert cat.infer_shape_partial(x=(4, 3), y=(-1, 2))[0] == [(4, 3), (4, 2)]
