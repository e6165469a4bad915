"""Op documentation from the registry: help() and inspect.signature of every op function show
its inputs and parameters with type, default, choices and a description; .pyi stubs are up to
date (regenerate with ``python -m symgraph.interop.stubs``)."""
from __future__ import annotations

import inspect
import pydoc

import pytest

import symgraph as sg
from symgraph.frontend import opdoc
from symgraph.core import registry
from symgraph.interop import stubs
from symgraph.core.attrs import REQUIRED

OPS = sorted(n for n, op in registry.all_ops().items() if "api" not in op.extra)


def _documented_params(op):
    return [(k, p) for k, p in op.params.items()
            if k.isidentifier() and k not in ("name", "attr")]


@pytest.mark.parametrize("name", OPS)
def test_signature_and_help_show_every_parameter(name):
    op, fn = registry.get_op(name), getattr(sg.sym, name)
    sig = inspect.signature(fn)
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    inputs = opdoc.input_names(op)
    if op.variadic:
        assert next(iter(sig.parameters.values())).kind is inspect.Parameter.VAR_POSITIONAL
    else:
        assert list(sig.parameters)[:len(inputs)] == list(inputs)
        for n in inputs:
            assert f"{n} : Symbol" in text
    for key, param in _documented_params(op):
        p = sig.parameters[key]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.annotation is not p.empty
        if key != op.variadic:
            assert (p.default is p.empty) == (param.default is REQUIRED), key
            if param.default is not REQUIRED:
                assert p.default == param.default
        desc = opdoc.param_doc(op, key, param)
        assert desc, f"{name}.{key} has no description (Param.doc or opdoc.PARAM_DOCS)"
        assert f"{key} : " in text and desc in text
        for choice in param.choices:
            assert repr(choice) in text
    assert {"name", "attr"} <= set(sig.parameters) and sig.return_annotation is sg.sym.Symbol


def test_convolution_help_reads_like_mxnet():
    text = pydoc.render_doc(sg.sym.Convolution, renderer=pydoc.plaintext)
    assert "kernel: tuple[int, ...]" in text and "num_filter: int" in text
    assert "kernel : tuple[int, ...], required" in text
    assert "num_group : int, default 1" in text
    pooling = pydoc.render_doc(sg.sym.Pooling, renderer=pydoc.plaintext)
    assert "pool_type : {'max', 'avg', 'sum'}, default 'max'" in pooling
    assert "Literal['max', 'avg', 'sum']" in str(inspect.signature(sg.sym.Pooling))


def test_signature_matches_calls():
    sig = inspect.signature(sg.sym.FullyConnected)
    bound = sig.bind(sg.sym.var("x"), num_hidden=3, name="fc")
    out = sg.sym.FullyConnected(*bound.args, **bound.kwargs)
    assert out.list_arguments() == ["x", "fc_weight", "fc_bias"]
    with pytest.raises(TypeError):
        sig.bind(sg.sym.var("x"))  # num_hidden is required


def test_nd_front_end_documentation():
    """What the sg.nd front end gets from document(): NDArray types and an ``out`` keyword."""
    op = registry.get_op("FullyConnected")

    def fn(*args, out=None, **kwargs):
        return None
    opdoc.document(fn, op, front_end="nd")
    sig = inspect.signature(fn)
    assert fn.__name__ == "FullyConnected" and "out" in sig.parameters
    assert sig.return_annotation is sg.nd.NDArray and "attr" not in sig.parameters
    assert "out : NDArray, optional" in fn.__doc__
    real = inspect.signature(sg.nd.FullyConnected)  # sg.nd's functions get the same
    assert real == sig and "num_hidden : int, required" in sg.nd.FullyConnected.__doc__


def test_stubs_are_up_to_date():
    assert stubs.out_of_date() == [], "run: python -m symgraph.interop.stubs"
    assert "def FullyConnected(\n    data: Optional[NDArray] = ...," in stubs.module_stub(sg.nd)
    text = stubs.module_stub(sg.sym)
    compile(text, "symbol.pyi", "exec")
    assert "def Convolution(\n    data: Optional[Symbol] = ...,\n" in text
    assert "    *,\n    kernel: tuple[int, ...],\n" in text and "\nflatten = Flatten\n" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_every_nd_function_documents_its_parameters():
    """sg.nd's functions get the same registry documentation as sg.sym's, for every op."""
    missing = []
    for name in OPS:
        op, fn = registry.get_op(name), getattr(sg.nd, name)
        sig, doc = inspect.signature(fn), fn.__doc__ or ""
        if "out" not in sig.parameters or sig.return_annotation is not sg.nd.NDArray:
            missing.append((name, "signature"))
        for key, param in _documented_params(op):
            p = sig.parameters.get(key)
            if p is None or p.annotation is p.empty or f"{key} : " not in doc \
                    or opdoc.param_doc(op, key, param) not in doc:
                missing.append((name, key))
    assert not missing, missing
