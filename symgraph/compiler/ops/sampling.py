"""Random samplers, MXNet's names: ``_random_<dist>`` (scalar parameters as attributes, the
shape as an attribute), ``_random_<dist>_like`` (the shape of an input), ``_sample_<dist>``
(one parameter set per element of the parameter arrays, ``shape`` samples each),
``_sample_multinomial`` and ``_shuffle``.

Every sampler draws from ``RunCtx.rng`` (``sg.random``), so ``sg.random.seed`` repeats the
draws. Their result is not a function of their inputs: they are ``train_dependent``, which keeps
CSE from merging two draws and constant folding from freezing one. On the GPU every law draws
from the Philox generator (``cuda/lowering_random_draw``): the same laws, other numbers.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ...core import rng as global_rng
from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register, alias as _alias
from . import _random_laws as laws
from ._util import fmt, merge_dims


def generator_of(ctx: RunCtx) -> np.random.Generator:
    return ctx.rng or global_rng.generator()


# Float outputs compute in float (narrow ones stored narrow); integer outputs (randint,
# counts) are stored as they are; float64 has no GPU kernels.
DRAW_DTYPES = ("float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64")


def _lowering(law: str, source: str) -> tuple:
    """Philox kernels of every law (cuda/lowering_random_draw.py)."""
    return ("random_draw", {"law": law, "source": source, "dtypes": DRAW_DTYPES})


# -- _random_<law>: parameters and shape as attributes ----------------------------------------

def _attr_values(law: str, a: Attrs) -> list:
    return [a[k] for k, *_ in laws.LAWS[law].params]


def _attr_shape(law: str, a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """``shape`` when given; without one the consumers decide (MXNet's symbol default)."""
    laws.check_params(law, a)
    if a["shape"] is None:
        return ins, outs
    shape = tuple(a["shape"])
    if outs[0] is not None and tuple(outs[0]) != shape:
        raise ShapeError(f"shape={shape} but the output must have shape {fmt(outs[0])}")
    return ins, [shape]


def _at_shapes(a: Attrs, out_shapes: list) -> Attrs:
    """The attributes with ``shape`` as inferred when the consumers decided it, for the numpy
    reference (``sym.random.normal() + x`` draws one value per element of x, as MXNet)."""
    return a if a["shape"] is not None else a.replace(shape=tuple(out_shapes[0]))


def _attr_type(law: str, a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [np.dtype(a["dtype"] or laws.LAWS[law].dtype)]


def _draw(law: str, params: list, ctx: RunCtx, shape: tuple, dtype: np.dtype) -> np.ndarray:
    values = laws.LAWS[law].draw(generator_of(ctx), *params, shape)
    return np.asarray(values).astype(dtype, copy=False)


def _random_compute(law: str, a: Attrs, xs: list, ctx: RunCtx) -> list:
    shape = tuple(a["shape"]) if a["shape"] is not None else (1,)  # MXNet's nd default
    dtype = np.dtype(a["dtype"] or laws.LAWS[law].dtype)
    return [_draw(law, _attr_values(law, a), ctx, shape, dtype)]


def _like_shape(law: str, a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    laws.check_params(law, a)
    known = ins[0] if ins[0] is not None else outs[0]
    return [known], [known]


def _like_compute(law: str, a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [_draw(law, _attr_values(law, a), ctx, xs[0].shape, xs[0].dtype)]


# -- _sample_<law>: one parameter set per element of the parameter arrays ---------------------

def _sample_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Parameters of one shape P (all alike), output P + shape."""
    tail = tuple(a["shape"])
    known = [tuple(s) for s in ins if s is not None]
    if outs[0] is not None:
        out = tuple(outs[0])
        if len(out) < len(tail) or out[len(out) - len(tail):] != tail:
            raise ShapeError(f"output shape {out} does not end with shape={tail}")
        known.append(out[:len(out) - len(tail)])
    if not known:
        return ins, outs
    params = known[0]
    for s in known[1:]:
        if merge_dims(params, s) is None or s != params:
            raise ShapeError(f"parameter arrays must share one shape, got {fmt(params)} and "
                             f"{fmt(s)}")
    return [params] * len(ins), [params + tail]


def _sample_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    known = next((t for t in ins if t is not None), np.dtype(np.float32))
    return [known if t is None else t for t in ins], [np.dtype(a["dtype"] or "float32")]


def _sample_compute(law: str, a: Attrs, xs: list, ctx: RunCtx) -> list:
    names = laws.SAMPLE_INPUTS[law]
    laws.check_params(law, dict(zip(names, xs)), names)
    tail = tuple(a["shape"])
    lead = xs[0].shape
    params = [np.reshape(x.astype(np.float64), lead + (1,) * len(tail)) for x in xs]
    if law == "negative_binomial":
        params[0] = params[0].astype(np.int64)  # MXNet's k is an integer count
    return [_draw(law, params, ctx, lead + tail, np.dtype(a["dtype"] or "float32"))]


def _law_params(law: laws.Law) -> dict:
    return {k: Param(kind, doc=doc) if default is None  # None: required
            else Param(kind, default, doc=doc) for k, kind, default, doc in law.params}


for _name, _law in laws.LAWS.items():
    register(OpDef(
        f"_random_{_name}",
        {**_law_params(_law), "shape": Param("shape?", None, doc="output shape"),
         "dtype": Param("dtype?", None, doc=f"output dtype ({_law.dtype} if None)"),
         "ctx": Param("str", "", doc="ignored: the executor's context places it")},
        (), partial(_attr_shape, _name), partial(_random_compute, _name), NOT_DIFFERENTIABLE,
        OPAQUE, infer_type=partial(_attr_type, _name), train_dependent=True,
        lowering=_lowering(_name, "attrs"), extra={"at_shapes": _at_shapes},
        doc=f"Samples of the {_name} law ({_law.about}), of shape `shape`."))
    _alias(f"random_{_name}", f"_random_{_name}")
    if _name == "randint":
        continue
    register(OpDef(
        f"_random_{_name}_like", _law_params(_law), ("data",), partial(_like_shape, _name),
        partial(_like_compute, _name), NOT_DIFFERENTIABLE, OPAQUE, train_dependent=True,
        lowering=_lowering(_name, "attrs"),
        doc=f"Samples of the {_name} law ({_law.about}) of data's shape and dtype."))
    register(OpDef(
        f"_sample_{_name}", {"shape": Param("shape", (), doc="samples per parameter element"),
         "dtype": Param("dtype?", None, doc="output dtype (float32 if None)")},
        laws.SAMPLE_INPUTS[_name], _sample_shape, partial(_sample_compute, _name),
        NOT_DIFFERENTIABLE, OPAQUE, infer_type=_sample_type, train_dependent=True,
        lowering=_lowering(_name, "inputs"),
        doc=f"`shape` samples of the {_name} law per element of the parameter arrays "
            f"({', '.join(laws.SAMPLE_INPUTS[_name])}); output shape: parameters' + shape."))
    _alias(f"sample_{_name}", f"_sample_{_name}")
_alias("uniform", "_random_uniform")
_alias("normal", "_random_normal")
