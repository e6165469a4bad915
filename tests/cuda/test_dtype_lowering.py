"""No silent host path: a step whose dtype its GPU lowering does not declare is a BindError
naming the node, op and dtype; SYMGRAPH_ALLOW_HOST=1 runs it on the host with one warning per
op and dtype. Checked by lowering alone (no GPU: ``lower_schedule`` is pure Python)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import BindError
from symgraph.runtime.cuda import compiler, lowering
from symgraph.runtime.cuda.actions import FLOAT32_ONLY, Host, Kernel, flat_actions, lowering_dtypes
from symgraph.runtime.cuda.plan import lower_schedule

S = sg.sym


def _schedule(sym, dtype: str, **shapes):
    exe = sym.simple_bind(sg.cpu(), type_dict={k: dtype for k in shapes}, **shapes)
    return exe._train.schedule


def _mlp():
    h = S.FullyConnected(S.var("data"), num_hidden=8, name="fc1")
    return S.sum(S.Activation(h, act_type="relu", name="relu1"), name="total")


def test_declared_dtypes() -> None:
    assert lowering_dtypes("gemm", {}) == FLOAT32_ONLY  # default: float32 only
    assert lowering_dtypes("cast", {}) is None  # byte families: any dtype
    assert lowering_dtypes("gemm", {"dtypes": ("float32", "bfloat16")}) == \
        frozenset({"float32", "bfloat16"})
    assert lowering_dtypes("gemm", {"dtypes": "any"}) is None


def _sums():
    x = S.var("data")
    return S.Group([S.sum(x, axis=0, name="total0"), S.sum(x, axis=1, name="total1")])


def test_undeclared_dtype_is_a_bind_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMGRAPH_ALLOW_HOST", raising=False)
    sch = _schedule(_sums(), "float64", data=(4, 5))
    with pytest.raises(BindError) as err:
        lower_schedule(sch, 132)
    msg = str(err.value)
    assert msg.startswith("total0 (sum): ") and "float64" in msg
    assert "SYMGRAPH_ALLOW_HOST" in msg


def test_allow_host_warns_once_per_op_and_dtype(monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("SYMGRAPH_ALLOW_HOST", "1")
    monkeypatch.setattr(lowering, "_WARNED", set())
    sch = _schedule(_sums(), "float64", data=(4, 5))
    with caplog.at_level(logging.WARNING, logger="symgraph"):
        low = lower_schedule(sch, 132)
        lower_schedule(sch, 132)
    hosts = [a.step.node.op for acts in low.actions for a in flat_actions(acts)
             if isinstance(a, Host)]
    assert hosts.count("sum") == 2
    warned = [r.getMessage() for r in caplog.records if "(sum)" in r.getMessage()]
    assert len(warned) == 1 and "float64" in warned[0]  # once for both steps, both lowerings


def test_float32_graph_has_no_host_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMGRAPH_ALLOW_HOST", raising=False)
    low = lower_schedule(_schedule(_mlp(), "float32", data=(4, 5)), 132)
    assert not any(isinstance(a, Host) for acts in low.actions for a in flat_actions(acts))


def test_describe_marks_steps() -> None:
    sch = _schedule(_mlp(), "float32", data=(4, 5))
    lines = sch.describe({0: "host"}).splitlines()
    assert lines[0].endswith("[host]") and not lines[1].endswith("[host]")


@pytest.mark.gpu
def test_debug_str_marks_host_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_ALLOW_HOST", "1")
    exe = _mlp().simple_bind(sg.gpu(0), type_dict={"data": "float64"}, data=(4, 5))
    text = exe.debug_str()
    assert any("_fused" in ln and ln.endswith("[host]") for ln in text.splitlines())
    exe.forward(is_train=True, data=sg.nd.array(np.ones((4, 5)), dtype="float64"))


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_integer_labels_pick_runs_on_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gluon's SoftmaxCrossEntropyLoss picks by int32 labels: pick and its scatter read the
    integer index in its own type (they used to take the host path silently)."""
    monkeypatch.delenv("SYMGRAPH_ALLOW_HOST", raising=False)
    d, i = S.var("d"), S.var("i")
    y = S.sum(S.pick(S.log_softmax(d), i, axis=-1))
    exe = y.simple_bind(sg.cpu(), type_dict={"d": "float32", "i": "int32"}, d=(8, 4), i=(8,))
    actions = [a for s in (exe._infer.schedule, exe._train.schedule)
               for acts in lower_schedule(s, 132).actions for a in flat_actions(acts)]
    assert not [a for a in actions if isinstance(a, Host)]
    source = compiler.module_source([a.kernel for a in actions if isinstance(a, Kernel)])
    assert "const int* __restrict__ idx" in source
    assert compiler.run_nvcc(source, "sm_90", compiler.find_nvcc())[:4] == b"\x7fELF"


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_amp_multicast_lowers_to_casts(monkeypatch: pytest.MonkeyPatch) -> None:
    """amp_multicast (any dtype, declared) is one cast kernel or copy per input pair."""
    monkeypatch.delenv("SYMGRAPH_ALLOW_HOST", raising=False)
    a, b = S.var("a"), S.var("b")
    y = S.Group(list(S.amp_multicast(a, b, num_outputs=2)))
    exe = y.simple_bind(sg.cpu(), type_dict={"a": "float16", "b": "float32"}, a=(4,), b=(4,))
    acts = [x for acts in lower_schedule(exe._infer.schedule, 132).actions
            for x in flat_actions(acts)]
    assert not [x for x in acts if isinstance(x, Host)]
    kernels = [x.kernel for x in acts if isinstance(x, Kernel)]
    assert len(kernels) == 1  # a: float16 -> float32; b: a copy
    source = compiler.module_source(kernels)
    assert compiler.run_nvcc(source, "sm_90", compiler.find_nvcc())[:4] == b"\x7fELF"
