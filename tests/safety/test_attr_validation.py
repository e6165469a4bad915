"""Every op's shape rule validates its attributes, and the error names the
node. MXNet 1.9.1 refuses the same cases (checked with mxnet) unless a test says otherwise."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.attrs import REQUIRED
from symgraph.core.registry import all_ops

S = sg.sym
# Required attributes other than the axis, for the ops that have an axis (by name, else by kind).
REQUIRED_VALUES = {"repeats": 2, "num_outputs": 2, "begin": 0, "num_args": 2}
BY_KIND = {"int": 1, "float": 1.0, "shape": (1,), "str": "", "dtype": "float32", "bool": False}
# Ops whose valid calls need more than that: other attributes, shapes of the other inputs.
EXTRA_ATTRS = {"broadcast_axis": {"size": (2,)}}
OTHER_SHAPES = {"pick": {"node_index": (2,)}}
AXIS_KEYS = ("axis", "axes", "dim")


def _axis_ops() -> list[tuple[str, str]]:
    """Every public op with an axis parameter (backward ops get theirs from a checked op)."""
    return [(name, key) for name, op in sorted(all_ops().items()) if not name.startswith("_")
            for key in AXIS_KEYS if key in op.params]


def _value(kind: str, axis: int, key: str) -> Any:
    if key == "axes":
        return (axis, 0) if axis else (1, 0)  # transpose's permutation, Dropout's shared axes
    return (axis,) if kind in ("shape", "axis") else axis


def _sym(name: str, key: str, axis: int) -> sg.sym.Symbol:
    op = all_ops()[name]
    kw: dict = {key: _value(op.params[key].kind, axis, key)}
    for k, p in op.params.items():
        if p.default is REQUIRED and k not in kw and k != "**":
            kw[k] = REQUIRED_VALUES.get(k, p.choices[0] if p.choices else BY_KIND[p.kind])
    kw.update(EXTRA_ATTRS.get(name, {}))
    fn = getattr(S, name)
    if op.variadic:
        return fn(S.var("in0"), S.var("in1"), name="node", **kw)
    return fn(S.var("in0"), name="node", **kw)


def _valid_shapes(name: str, key: str) -> dict:
    """Input shapes for which axis 0 or 1 works: (2, 4) or (1, 4) (squeeze) for the first
    input, the same for every input inference cannot decide from it."""
    for first in ((2, 4), (1, 4)):
        for axis in (0, 1):
            sym = _sym(name, key, axis)
            try:
                given = {"in0": first, **OTHER_SHAPES.get(name, {})}
                args, _, _ = sym.infer_shape_partial(**given)
                shapes = {n: (s or first)  # (unknown: ())
                          for n, s in zip(sym.list_arguments(), args)}
                sym.infer_shape(**shapes)
                return shapes
            except sg.SymgraphError:
                continue
    raise AssertionError(f"{name}: no valid {key} found; add its required values to "
                         f"REQUIRED_VALUES")


@pytest.mark.parametrize("name, key", _axis_ops())
def test_every_axis_is_checked(name: str, key: str) -> None:
    """A valid axis works; axes 5 and -5 of a 2-D input are a ShapeError naming node,
    attribute and value, raised by shape inference (before anything is allocated)."""
    shapes = _valid_shapes(name, key)
    for bad in (5, -5):
        sym = _sym(name, key, bad)
        text = sym.tojson()
        with pytest.raises(sg.ShapeError) as err:
            sym.simple_bind(sg.cpu(), grad_req="null", **shapes)
        msg = str(err.value)
        assert msg.startswith(f"node ({name}): "), msg
        assert "axis" in msg and str(bad) in msg and "out of range" in msg, msg
        assert sym.tojson() == text


def _bind_error(sym: sg.sym.Symbol, err: type, pattern: str, **shapes: tuple) -> None:
    arrays = {k: sg.nd.array(np.arange(np.prod(s), dtype=np.float32).reshape(s))
              for k, s in shapes.items()}
    before = {k: v.asnumpy().copy() for k, v in arrays.items()}
    text = sym.tojson()
    with pytest.raises(err, match=pattern):
        sym.bind(sg.cpu(), arrays, grad_req="null")
    for k, v in arrays.items():
        np.testing.assert_array_equal(v.asnumpy(), before[k])
    assert sym.tojson() == text


def test_transpose_axes_out_of_range_or_repeated() -> None:
    x = S.var("x")
    _bind_error(S.transpose(x, axes=(0, 5), name="tr"), sg.ShapeError,
                r"tr \(transpose\): axes=\(0, 5\): axis=5 out of range for 2-d input", x=(2, 3))
    _bind_error(S.transpose(x, axes=(1, -1), name="tr"), sg.ShapeError,
                r"tr \(transpose\): axes=\(1, -1\) names an axis twice", x=(2, 3))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_axis_names_the_softmax_node(op: str) -> None:
    """It used to bind and fail in numpy, or name a node of the backward graph."""
    _bind_error(getattr(S, op)(S.var("x"), axis=2, name="sm"), sg.ShapeError,
                rf"sm \({op}\): axis=2 out of range for 2-d input \(allowed -2..1\)", x=(2, 3))
    with pytest.raises(sg.ShapeError, match=rf"^sm \({op}\): axis=-3"):
        getattr(S, op)(S.var("x"), axis=-3, name="sm").simple_bind(sg.cpu(), x=(2, 3))


def test_softmax_temperature_zero() -> None:
    _bind_error(S.softmax(S.var("x"), temperature=0.0, name="sm"), sg.AttrError,
                r"sm \(softmax\): temperature=0.0: must not be 0", x=(2, 3))


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("pad", [(2, 2), (3, 0), (0, 2)])
def test_pooling_pad_must_be_smaller_than_kernel(pool_type: str, pad: tuple) -> None:
    """MXNet refuses pad >= kernel; symgraph returned -inf cells for max pooling."""
    sym = S.Pooling(S.var("x"), kernel=(2, 2), pad=pad, pool_type=pool_type, name="pool")
    _bind_error(sym, sg.AttrError, rf"pool \(Pooling\): pad=\({pad[0]}, {pad[1]}\): must be "
                                   rf"smaller than kernel \(2, 2\)", x=(1, 1, 4, 4))


def test_pooling_pad_below_kernel_is_fine() -> None:
    sym = S.Pooling(S.var("x"), kernel=(2, 2), pad=(1, 1), stride=(2, 2), name="pool")
    exe = sym.simple_bind(sg.cpu(), grad_req="null", x=(1, 1, 4, 4))
    out = exe.forward(x=np.arange(16.).reshape(1, 1, 4, 4))[0].asnumpy()
    assert np.isfinite(out).all() and out.shape == (1, 1, 3, 3)


def test_one_hot_depth() -> None:
    _bind_error(S.one_hot(S.var("i"), depth=-1, name="oh"), sg.AttrError,
                r"oh \(one_hot\): depth=-1: must be >= 0", i=(3,))
    exe = S.one_hot(S.var("i"), depth=2).bind(sg.cpu(), {"i": sg.nd.array([1., 2., 0.])})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [[0, 1], [0, 0], [1, 0]])


@pytest.mark.parametrize("dims, bad", [((0, 3), "input_dim=0"), ((-2, 3), "input_dim=-2"),
                                       ((4, -1), "output_dim=-1"), ((4, 0), "output_dim=0")])
def test_embedding_sizes(dims: tuple, bad: str) -> None:
    sym = S.Embedding(S.var("i"), input_dim=dims[0], output_dim=dims[1], name="emb")
    with pytest.raises(sg.AttrError, match=rf"emb \(Embedding\): {bad}: must be >= 1"):
        sym.simple_bind(sg.cpu(), i=(3,))


def test_clip_bounds_in_order() -> None:
    _bind_error(S.clip(S.var("x"), a_min=2.0, a_max=1.0, name="cl"), sg.AttrError,
                r"cl \(clip\): a_min=2.0: exceeds a_max=1.0", x=(2, 3))


def test_other_ranges() -> None:
    with pytest.raises(sg.AttrError, match=r"bn \(BatchNorm\): eps=-1.0: must be >= 0"):
        S.BatchNorm(S.var("x"), eps=-1.0, name="bn").simple_bind(sg.cpu(), x=(2, 3))
    with pytest.raises(sg.AttrError, match=r"so \(SoftmaxOutput\): smooth_alpha=2.0: must lie"):
        S.SoftmaxOutput(S.var("x"), smooth_alpha=2.0, name="so").simple_bind(sg.cpu(), x=(2, 3))
    with pytest.raises(sg.AttrError, match=r"sc \(SliceChannel\): num_outputs=0: must be >= 1"):
        S.SliceChannel(S.var("x"), num_outputs=0, name="sc")


@pytest.mark.parametrize("shape, err, pattern", [
    ((-3, 2), sg.ShapeError, r"variable x: dimension -3 is negative"),
    ((2.5,), sg.ShapeError, r"variable x: dimension 2.5 is not an integer"),
    ((2 ** 40, 2 ** 30), sg.ShapeError, r"variable x: shape .* more than the \d+ symgraph can"),
    ((2 ** 20, 2 ** 20), sg.BindError, r"argument x: cannot allocate \(1048576, 1048576\) "
                                       r"float32 \(4096.0 GiB\)")])
def test_simple_bind_shapes(shape: tuple, err: type, pattern: str) -> None:
    with pytest.raises(err, match=pattern):
        (S.var("x") * 2).simple_bind(sg.cpu(), x=shape)


def test_huge_or_negative_op_shapes() -> None:
    x = S.var("x")
    with pytest.raises(sg.ShapeError, match=r"rs \(Reshape\): .*cannot reshape"):
        S.Reshape(x, shape=(2 ** 40, 2 ** 40), name="rs").simple_bind(sg.cpu(), x=(2, 3))
    with pytest.raises(sg.ShapeError, match=r"rs \(Reshape\): .*invalid code -5"):
        S.Reshape(x, shape=(-5, 2), name="rs").simple_bind(sg.cpu(), x=(2, 3))
    with pytest.raises(sg.ShapeError, match=r"tl \(tile\): output: shape .* more than"):
        S.tile(x, reps=(2 ** 31, 2 ** 31), name="tl").simple_bind(sg.cpu(), x=(3,))
    with pytest.raises(sg.ShapeError, match=r"bt \(broadcast_to\): .*\(-2, 3\)"):
        S.broadcast_to(x, shape=(-2, 3), name="bt").simple_bind(sg.cpu(), x=(1, 3))


@pytest.mark.parametrize("shape, pattern", [((-3,), r"dimension -3 is negative"),
                                            ((2.5,), r"dimension 2.5 is not an integer"),
                                            ((2 ** 40, 2 ** 40), r"more than the \d+")])
def test_nd_creation_shapes(shape: tuple, pattern: str) -> None:
    for make in (sg.nd.zeros, sg.nd.ones, sg.nd.empty, lambda s: sg.nd.full(s, 1.0)):
        with pytest.raises(sg.ShapeError, match=rf"array shape: .*{pattern}"):
            make(shape)
