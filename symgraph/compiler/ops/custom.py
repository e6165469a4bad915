"""``Custom``: operators defined outside symgraph, and its backward ``_backward_Custom``.

One registered op covers both kinds of user operator; the kind is data (``func_type``) and picks
a row of ``KINDS``:

* ``""`` (``op_type=...``): a Python ``CustomOpProp`` registered with ``sg.operator.register``
  (or an ``NDArrayOp``); shape/type rules, compute and gradient go to the prop and its operator.
  The gradient is ``_backward_Custom``, an opaque op calling ``CustomOp.backward``.
* ``"aot"`` (``func="lib.so:F"``): a compiled function with MindSpore's ABI
  (``symgraph/ops/custom_aot.py``); the gradient is the user's ``bprop`` built from ``sg.sym``.

Both are opaque steps (fusion stops at them). At run time both go through one function,
``run(attrs, in_arrays, out_arrays, rc, stream)`` on ``sg.nd.NDArray`` wrappers of the
buffers, writing the outputs in place; the numpy backend reaches it through ``compute``, the CUDA
backend through the lowering data ``("callback", {"run": run})``: wrap the step's device
buffers as GPU NDArrays, call ``run`` with its pycuda stream, outside any captured CUDA graph
(outputs of ``_backward_Custom`` must be zeroed first: a backward may leave a gradient alone).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from ...core.attrs import ANY_KEY, Attrs, Param
from ...core.base import (AttrError, DTypeError, ExecutionError, ShapeError, SymgraphError,
                    where_unnamed)
from ...core.context import cpu
from ...core.launch_stream import stream_scope
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from . import custom_aot, custom_host
from ._util import as_shape

PARAMS = {
    "op_type": Param("str", "", doc="name given to sg.operator.register"),
    "func": Param("str", "", doc="'path/lib.so:Function' of an aot kernel"),
    "func_type": Param("str", "", ("", "aot")),
    "num_args": Param("int", 0, doc="number of inputs of an aot kernel"),
    "out_shape": Param("literal", None), "out_dtype": Param("literal", None),
    "bprop": Param("literal", None),
    ANY_KEY: Param("text", doc="keyword arguments of the prop's constructor, as strings"),
}


@dataclass(frozen=True)
class Kind:
    """How one kind of custom op answers the questions the registry asks."""

    inputs: Callable[[Attrs], tuple]
    outputs: Callable[[Attrs], tuple]
    aux: Callable[[Attrs], tuple]
    infer_shape: Callable[[Attrs, list, list], tuple]
    infer_type: Callable[[Attrs, list, list], tuple]
    run: Callable[[Attrs, list, list, RunCtx, Any], None]
    gradient: Callable[[Any], list]


# -- the Python kind (op_type) --------------------------------------------------------------------

# op_type -> constructor of its CustomOpProp; filled by ``sg.operator.register`` (and by
# NDArrayOp objects when first called), read here when a Custom node is built or run.
PROPS: dict[str, Callable[..., Any]] = {}
# Descriptions only (operators live in their executor), and only the most recent ones: a prop
# may hold user objects (an autograd.Function call), which must not live forever.
_PROP_CACHE: "OrderedDict[tuple, Any]" = OrderedDict()
PROP_CACHE_SIZE = 256


def prop_kwargs(attrs: Attrs) -> dict[str, str]:
    """The keyword arguments of the prop's constructor (every attribute not in PARAMS)."""
    return {k: v for k, v in attrs.items() if k not in PARAMS}


def prop_factory(op_type: str) -> Callable[..., Any]:
    """The registered constructor of ``op_type``; AttrError naming the known ones if absent."""
    try:
        return PROPS[op_type]
    except KeyError:
        known = sorted(k for k in PROPS if not k.startswith("_ndarrayop"))
        raise AttrError(f"Custom: op_type {op_type!r} is not registered with "
                        f"sg.operator.register; registered: {known}") from None


def get_prop(attrs: Attrs) -> Any:
    """The (cached) CustomOpProp of a ``Custom`` node's attrs."""
    factory = prop_factory(attrs["op_type"])
    key = (id(factory), attrs)
    prop = _PROP_CACHE.get(key)
    if prop is None:
        prop = _PROP_CACHE[key] = factory(**prop_kwargs(attrs))
        if len(_PROP_CACHE) > PROP_CACHE_SIZE:
            _PROP_CACHE.popitem(last=False)
    else:
        _PROP_CACHE.move_to_end(key)
    return prop


def _here(a: Attrs) -> str:
    """Message prefix naming the op as the user wrote it: an NDArrayOp by its class, not by the
    private op_type it is registered under (adapters set ``user_class``)."""
    cls = getattr(get_prop(a), "user_class", None)
    return f"Custom {cls.__name__}: " if cls is not None else f"Custom op_type {a['op_type']!r}: "


def _user_name(obj: Any) -> str:
    """The name of the class the user wrote behind ``obj`` (a prop or an operator)."""
    return getattr(obj, "user_class", type(obj)).__name__


def _host_check(node: Any) -> None:
    """At a CPU bind: refuse a Python op whose class only runs CUDA kernels (custom_host)."""
    if node.attrs["func_type"] == "":
        custom_host.check_user_class(getattr(get_prop(node.attrs), "user_class", None), node)


def _py_inputs(a: Attrs) -> tuple:
    p = get_prop(a)
    return tuple(p.list_arguments()) + tuple(p.list_auxiliary_states())


def _py_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    p = get_prop(a)
    n = len(p.list_arguments())
    if any(s is None for s in ins[:n]):
        return ins, outs  # MXNet's custom ops infer forward only
    res = p.infer_shape([list(s) for s in ins[:n]])
    what = f"{_here(a)}{_user_name(p)}.infer_shape"
    if not isinstance(res, (tuple, list)) or len(res) not in (2, 3):
        raise ShapeError(f"{what} returned {res!r}; expected (in_shapes, out_shapes[, aux])")
    aux = list(res[2]) if len(res) > 2 else []
    if len(res[0]) != n or len(res[1]) != len(outs) or len(aux) != len(ins) - n:
        raise ShapeError(f"{what} returned {len(res[1])} output, {len(res[0])} input "
                         f"and {len(aux)} aux shapes for {len(outs)} outputs, {n} inputs, "
                         f"{len(ins) - n} aux states")
    return ([as_shape(s, what) for s in list(res[0]) + aux], [as_shape(s, what) for s in res[1]])


def _py_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    p = get_prop(a)
    n = len(p.list_arguments())
    if any(t is None for t in ins[:n]):
        return ins, outs
    res = p.infer_type(list(ins[:n]))
    aux = list(res[2]) if len(res) > 2 else list(ins[n:])
    what = f"{_here(a)}{_user_name(p)}.infer_type"
    if len(res[0]) != n or len(res[1]) != len(outs) or len(aux) != len(ins) - n:
        raise DTypeError(f"{what} returned {len(res[0])} input, {len(res[1])} output and "
                         f"{len(aux)} aux dtypes for {n} inputs, {len(outs)} outputs")
    try:
        return [np.dtype(t) for t in list(res[0]) + aux], [np.dtype(t) for t in res[1]]
    except TypeError:
        raise DTypeError(f"{what} returned {res!r}, which holds a non-dtype") from None


def get_operator(attrs: Attrs, in_data: list, rc: RunCtx) -> Any:
    """The CustomOp of a node for these input shapes/dtypes in one executor (``rc.state``),
    shared by its forward and backward (so state the forward keeps is seen by the backward)
    and freed with the executor, as in MXNet; outside an executor, a fresh one."""
    ctx = in_data[0].context if in_data else cpu()
    shapes = tuple(x.shape for x in in_data)
    dtypes = tuple(x.dtype.name for x in in_data)
    store = rc.state if rc.state is not None else {}
    key = ("Custom", attrs, shapes, dtypes, ctx)
    if key not in store:
        store[key] = get_prop(attrs).create_operator(ctx, [list(s) for s in shapes],
                                                     [np.dtype(t) for t in dtypes])
    return store[key]


def _call_user(a: Attrs, method: Any, args: tuple) -> None:
    """Call ``CustomOp.forward``/``backward``; errors of what it writes name the op. Any
    other exception of the user's code becomes an ExecutionError chained to it, as MXNet
    turns it into an MXNetError."""
    what = f"{_here(a)}{_user_name(method.__self__)}.{method.__name__}"
    try:
        result = method(*args)
    except SymgraphError as exc:
        raise type(exc)(f"{what}: {exc}") from None
    except Exception as exc:  # noqa: BLE001  (the user's code may raise anything)
        raise ExecutionError(f"{what} raised {type(exc).__name__}: {exc}") from exc
    if result is not None:
        raise ExecutionError(f"{what} returned {type(result).__name__} {_short(result)}; it must "
                             f"write its outputs with self.assign(dst, req, value) and return "
                             f"None")


def _short(value: Any) -> str:
    """A one-line, bounded repr for messages."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _py_run(a: Attrs, ins: list, outs: list, rc: RunCtx, stream: Any) -> None:
    n = len(get_prop(a).list_arguments())
    op = get_operator(a, ins[:n], rc)
    _call_user(a, op.forward, (rc.is_train, ["write"] * len(outs), ins[:n], outs, ins[n:]))


def backward_slots(a: Attrs) -> list[tuple[str, int]]:
    """Inputs of ``_backward_Custom``: declared out_grad/out_data dependencies, every input
    (so shapes and the shared operator are known), then the aux states; as (group, index)."""
    p = get_prop(a)
    n_out, n_in = len(p.list_outputs()), len(p.list_arguments())
    og = list(range(n_out))
    ind = list(range(n_out, n_out + n_in))
    od = list(range(n_out + n_in, 2 * n_out + n_in))
    deps = set(p.declare_backward_dependency(og, ind, od))
    slots = [("out_grad", i) for i in og if i in deps]
    slots += [("in_data", i - n_out) for i in ind]
    slots += [("out_data", i - n_out - n_in) for i in od if i in deps]
    return slots + [("aux", i) for i in range(len(p.list_auxiliary_states()))]


def _py_gradient(c: Any) -> list:
    p = get_prop(c.attrs)
    n = len(p.list_arguments())
    groups = {"out_grad": c.ograds, "in_data": c.inputs[:n], "out_data": c.outputs,
              "aux": c.inputs[n:]}
    ins = [groups[g][i] for g, i in backward_slots(c.attrs)]
    grads = c.sym.apply_op("_backward_Custom", ins, dict(c.attrs))
    return list(grads) + [None] * len(p.list_auxiliary_states())


PYTHON = Kind(_py_inputs, lambda a: tuple(get_prop(a).list_outputs()),
              lambda a: tuple(get_prop(a).list_auxiliary_states()), _py_shape, _py_type,
              _py_run, _py_gradient)

AOT = Kind(custom_aot.inputs, custom_aot.outputs, lambda a: (), custom_aot.infer_shape,
           custom_aot.infer_type, custom_aot.run, custom_aot.gradient)

KINDS: dict[str, Kind] = {"": PYTHON, "aot": AOT}


def _kind(a: Attrs) -> Kind:
    return KINDS[a["func_type"]]


# How numpy buffers become the arrays user code receives (``sg.nd.NDArray``) and back: the
# runtime registers them (runtime/ndarray.py), as these ops sit below it.
HOST_ARRAY: dict[str, Callable[[Any], Any]] = {}


def use_host_array(wrap: Callable[[np.ndarray], Any], unwrap: Callable[[Any], Any]) -> None:
    """Make ``wrap`` (numpy -> user array) and ``unwrap`` (its inverse) the arrays user
    operators run on in the numpy references."""
    HOST_ARRAY.update(wrap=wrap, unwrap=unwrap)


def _run_on_numpy(run: Callable, out_shapes: Callable[[list], list]) -> Callable:
    """A numpy ``compute`` from a ``run`` on NDArrays: fresh zeroed outputs, so a failing
    kernel leaves nothing the user can see."""
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        wrap = HOST_ARRAY["wrap"]
        ins = [wrap(np.ascontiguousarray(x)) for x in xs]
        outs = [wrap(np.zeros(s, t)) for s, t in out_shapes(a, ins)]
        run(a, ins, outs, ctx, None)
        return [HOST_ARRAY["unwrap"](o) for o in outs]
    return compute


def _forward_out_shapes(a: Attrs, ins: list) -> list:
    k = _kind(a)
    _, shapes = k.infer_shape(a, [x.shape for x in ins], [None] * len(k.outputs(a)))
    _, dtypes = k.infer_type(a, [x.dtype for x in ins], [None] * len(k.outputs(a)))
    return list(zip(shapes, dtypes))


def run_forward(a: Attrs, ins: list, outs: list, rc: RunCtx, stream: Any) -> None:
    """Run a ``Custom`` node on NDArrays (the device-backend entry point); ``stream`` is the
    executor's pycuda Stream (None on the CPU), which rtc kernels and aot functions use."""
    with stream_scope(stream):
        _kind(a).run(a, ins, outs, rc, stream)


def _gradient(c: Any) -> list:
    return _kind(c.attrs).gradient(c)


def custom_api(apply_op: Callable, symbol_cls: type) -> Callable:
    """``sg.sym.Custom``, made for the front end that builds nodes with ``apply_op`` and
    whose symbols are ``symbol_cls`` (this module sits below ``symbol.py``: it is handed them)."""

    def Custom(*args: Any, name: Optional[str] = None, attr: Optional[dict] = None,
               **kwargs: Any) -> Any:
        """A Python op (``op_type=``, inputs by position or argument name, other keywords
        passed to the prop as strings) or an aot kernel (``func=``, ``func_type="aot"``,
        inputs positionally, ``out_shape``, ``out_dtype``, ``bprop``).

        Examples
        --------
        >>> class Twice(sg.operator.CustomOp):
        ...     def forward(self, is_train, req, in_data, out_data, aux):
        ...         self.assign(out_data[0], req[0], in_data[0] * 2)
        ...     def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        ...         self.assign(in_grad[0], req[0], out_grad[0] * 2)
        >>> @sg.operator.register("twice")
        ... class TwiceProp(sg.operator.CustomOpProp):
        ...     def create_operator(self, ctx, shapes, dtypes):
        ...         return Twice()
        >>> sg.nd.Custom(sg.nd.array([1, 2]), op_type="twice")
        [2. 4.]
        <NDArray 2 @cpu(0)>
        """
        syms = {k: v for k, v in kwargs.items() if isinstance(v, symbol_cls)}
        attrs = {k: v for k, v in kwargs.items() if not isinstance(v, symbol_cls)}
        here = where_unnamed(name, "Custom")
        if attrs.get("func_type") or attrs.get("func"):
            if syms:
                raise AttrError(f"{here}an aot Custom takes its inputs positionally, got "
                                f"keywords {sorted(syms)}")
            return apply_op("Custom", list(args),
                            custom_aot.prepare_attrs(attrs, len(args), here), name, attr)
        if not attrs.get("op_type"):
            raise AttrError(f"{here}give op_type= (a Python operator) or func=/func_type='aot'")
        attrs = {k: v if k in PARAMS else str(v) for k, v in attrs.items()}
        prop = get_prop(Attrs(attrs))
        slots = list(prop.list_arguments()) + list(prop.list_auxiliary_states())
        unknown = sorted(set(syms) - set(slots))
        if unknown or len(args) > len(slots):
            raise AttrError(f"{here}op_type {attrs['op_type']!r} takes inputs {slots}, got "
                            f"{len(args)} positional and keywords {sorted(syms)}")
        inputs = list(args) + [syms.get(s) for s in slots[len(args):]]
        return apply_op("Custom", inputs, attrs, name, attr)
    return Custom


register(OpDef(
    "Custom", PARAMS, lambda a: _kind(a).inputs(a), lambda a, i, o: _kind(a).infer_shape(a, i, o),
    _run_on_numpy(run_forward, _forward_out_shapes), _gradient, OPAQUE,
    infer_type=lambda a, i, o: _kind(a).infer_type(a, i, o),
    aux=lambda a: _kind(a).aux(a), outputs=lambda a: _kind(a).outputs(a),
    lowering=("callback", {"run": run_forward}),
    doc="A user operator: a Python CustomOp/NDArrayOp (op_type) or an aot kernel (func).",
    extra={"api": custom_api, "host_check": _host_check}))


# -- _backward_Custom -----------------------------------------------------------------------------

def _bwd_inputs(a: Attrs) -> tuple:
    return tuple(f"{g}{i}" for g, i in backward_slots(a))


def _bwd_groups(a: Attrs, xs: list) -> dict[str, list]:
    p = get_prop(a)
    sizes = {"out_grad": len(p.list_outputs()), "in_data": len(p.list_arguments()),
             "out_data": len(p.list_outputs()), "aux": len(p.list_auxiliary_states())}
    groups: dict[str, list] = {g: [None] * n for g, n in sizes.items()}
    for (g, i), x in zip(backward_slots(a), xs):
        groups[g][i] = x
    return groups


def _bwd_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, _bwd_groups(a, ins)["in_data"]


def _bwd_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, _bwd_groups(a, ins)["in_data"]


def run_backward(a: Attrs, ins: list, outs: list, rc: RunCtx, stream: Any) -> None:
    """Run ``CustomOp.backward`` of a node on NDArrays; ``outs`` are the (zeroed) input grads."""
    g = _bwd_groups(a, ins)
    op = get_operator(a, g["in_data"], rc)
    with stream_scope(stream):
        _call_user(a, op.backward, (["write"] * len(outs), g["out_grad"], g["in_data"],
                                    g["out_data"], outs, g["aux"]))


register(OpDef(
    "_backward_Custom", PARAMS, _bwd_inputs, _bwd_shape,
    _run_on_numpy(run_backward, lambda a, ins: [(x.shape, x.dtype)
                                                for x in _bwd_groups(a, ins)["in_data"]]),
    NOT_DIFFERENTIABLE, OPAQUE, infer_type=_bwd_type,
    outputs=lambda a: tuple(f"{n}_grad" for n in get_prop(a).list_arguments()),
    lowering=("callback", {"run": run_backward}),
    doc="Gradient of a Python Custom op: calls CustomOp.backward (opaque)."))
