"""Running symbols and optimizers for tests (``mx.test_utils``): ``simple_forward``,
``check_consistency`` (one symbol on several contexts and dtypes gives the same outputs and
gradients), ``check_speed``, ``compare_optimizer`` and ``same_symbol_structure``.

Example::

    >>> import numpy as np, symgraph as sg
    >>> from symgraph.interop.test_utils import simple_forward
    >>> simple_forward(sg.sym.var("x") * 2, x=np.ones(2, np.float32))
    array([2., 2.], dtype=float32)
"""
from __future__ import annotations

import json
import time
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.context import Context
from ...runtime.ndarray import NDArray, array, waitall
from .compare import assert_almost_equal, compare_ndarray_tuple, get_tols
from .data import default_context


def simple_forward(sym: Any, ctx: Optional[Context] = None, is_train: bool = False,
                   **inputs: np.ndarray) -> Union[np.ndarray, list[np.ndarray]]:
    """Forward ``sym`` on ``inputs`` (numpy arrays by argument name); the output as a numpy
    array, or a list of them for several outputs."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: array(v, ctx) for k, v in inputs.items()}, grad_req="null")
    outs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outs[0] if len(outs) == 1 else outs


def _fill_inputs(exes: list, arg_params: dict, aux_params: dict, scale: float,
                 use_uniform: bool, rand_type: Any, grad_req: Any) -> None:
    """Random arguments (drawn in name order, so a seed reproduces them) and zero auxiliary
    states, the same in every executor."""
    for name, arr in sorted(exes[0].arg_dict.items()):
        if name not in arg_params:
            arg_params[name] = (np.random.uniform(-0.92 * scale, 0.92 * scale, arr.shape)
                                if use_uniform else
                                np.random.normal(size=arr.shape, scale=scale)).astype(rand_type)
    for name in exes[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for g in exe.grad_arrays:
                if g is not None:
                    g[:] = 0


def _narrower(dt1: Any, dt2: Any) -> np.dtype:
    return np.dtype(dt1) if np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else np.dtype(dt2)


def _compare_runs(exes: list, gt: dict, gt_idx: int, names: list, with_grads: bool,
                  tols: tuple, equal_nan: bool, raise_on_err: bool) -> None:
    """Compare every run but the ground truth's with ``gt``, output and (``with_grads``)
    gradient by name. An array narrower than its run's main dtype (a float32 gamma gradient
    in a float16 run) is held to the narrower dtype's tolerance."""
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    for i, exe in enumerate(exes):
        arrays = exe.outputs + (exe.grad_arrays if with_grads else [])
        for name, got in zip(names, arrays):
            want = gt.get(name)
            if i == gt_idx or want is None or got is None:
                continue
            rtol, atol = tols
            low_got = _narrower(got.dtype, dtypes[i])
            low_gt = _narrower(want.dtype, dtypes[gt_idx])
            if low_got != got.dtype or low_gt != want.dtype:
                rtol, atol = get_tols(np.zeros(1, low_got), np.zeros(1, low_gt), rtol, atol)
            try:
                assert_almost_equal(got, want, rtol=rtol, atol=atol,
                                    names=(f"ctx {i} {name}", "ground truth"),
                                    equal_nan=equal_nan)
            except AssertionError as exc:
                if raise_on_err:
                    raise
                print(exc)


def check_consistency(sym: Any, ctx_list: Sequence[Mapping[str, Any]], scale: float = 1.0,
                      grad_req: Any = "write", arg_params: Optional[dict] = None,
                      aux_params: Optional[dict] = None, rtol: Any = None, atol: Any = None,
                      raise_on_err: bool = True, ground_truth: Optional[dict] = None,
                      equal_nan: bool = False, use_uniform: bool = False,
                      rand_type: Any = np.float64) -> dict[str, NDArray]:
    """Run ``sym`` (or one symbol per entry) bound as each ``ctx_list`` entry says
    (``simple_bind`` keywords: ``ctx``, input shapes, ``type_dict``) on the same random
    inputs, and compare every output and gradient with the most precise run (or
    ``ground_truth``). Returns the ground truth by output and argument name."""
    if len(ctx_list) < 2:
        raise ValueError("check_consistency: needs at least two contexts to compare")
    syms = [sym] * len(ctx_list) if not isinstance(sym, (list, tuple)) else list(sym)
    out_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    if any(s.list_arguments() != arg_names or s.list_outputs() != out_names for s in syms):
        raise ValueError("check_consistency: the symbols differ in arguments or outputs")
    exes = [s.simple_bind(grad_req=grad_req, **dict(c)) for s, c in zip(syms, ctx_list)]
    _fill_inputs(exes, {} if arg_params is None else arg_params,
                 {} if aux_params is None else aux_params, scale, use_uniform, rand_type,
                 grad_req)
    sizes = [np.dtype(exe.outputs[0].dtype).itemsize for exe in exes]
    gt_idx = sizes.index(max(sizes))
    for exe in exes:
        exe.forward(is_train=False)
    gt = dict(ground_truth) if ground_truth is not None else \
        {n: o.copy() for n, o in zip(out_names, exes[gt_idx].outputs)}
    _compare_runs(exes, gt, gt_idx, out_names, False, (rtol, atol), equal_nan, raise_on_err)
    if grad_req == "null":
        return gt
    for exe in exes:
        exe.forward(is_train=True)
    narrow = [np.dtype(o.dtype) for o in exes[0].outputs]
    for exe in exes:
        narrow = [_narrower(o.dtype, d) for o, d in zip(exe.outputs, narrow)]
    heads = [o.asnumpy().astype(d) for o, d in zip(exes[0].outputs, narrow)]
    for exe, spec in zip(exes, ctx_list):
        exe.backward([array(h, spec.get("ctx"), o.dtype) for h, o in zip(heads, exe.outputs)])
    if ground_truth is None:
        gt.update({n: o.copy() for n, o in zip(out_names, exes[gt_idx].outputs)})
        gt.update({n: None if g is None else g.copy()
                   for n, g in zip(arg_names, exes[gt_idx].grad_arrays)})
    _compare_runs(exes, gt, gt_idx, out_names + arg_names, True, (rtol, atol), equal_nan,
                  raise_on_err)
    return gt


def check_speed(sym: Any, location: Optional[dict] = None, ctx: Optional[Context] = None,
                N: int = 20, grad_req: Any = None, typ: str = "whole",  # noqa: N803
                **kwargs: Any) -> float:
    """Seconds per run of ``sym``: forward and backward (``typ='whole'``) or forward only
    (``'forward'``), averaged over ``N`` runs after one warm-up. ``location``: input arrays
    by name; else random inputs of the shapes in ``kwargs``."""
    if typ not in ("whole", "forward"):
        raise ValueError(f"check_speed: typ={typ!r}, expected 'whole' or 'forward'")
    ctx = ctx or default_context()
    shapes = kwargs if location is None else {k: np.shape(v) for k, v in location.items()}
    exe = sym.simple_bind(ctx, grad_req=grad_req or "write", **shapes)
    if location is None:
        location = {k: np.random.normal(size=a.shape) for k, a in exe.arg_dict.items()}
    for name, value in location.items():
        exe.arg_dict[name][:] = np.asarray(value).astype(exe.arg_dict[name].dtype)

    def once() -> None:
        exe.forward(is_train=typ == "whole")
        if typ == "whole":
            exe.backward(out_grads=exe.outputs)
    once()
    waitall()
    tic = time.perf_counter()
    for _ in range(N):
        once()
    waitall()
    return (time.perf_counter() - tic) / N


def compare_optimizer(opt1: Any, opt2: Any, shape: Any, dtype: Any, w_stype: str = "default",
                      g_stype: str = "default", rtol: float = 1e-4, atol: float = 1e-5,
                      compare_states: bool = True, ntensors: int = 1) -> None:
    """Apply one update of ``opt1`` and of ``opt2`` to the same random weight and gradient
    and compare the results (states too, with ``compare_states``). ``shape`` as a list:
    ``opt2`` updates the ``ntensors`` tensors in one call, ``opt1`` one by one."""
    if (w_stype, g_stype) != ("default", "default"):
        from ...core.base import AttrError
        raise AttrError(f"compare_optimizer: w_stype={w_stype!r}, g_stype={g_stype!r}: sparse "
                        f"storage does not exist in symgraph; only 'default'")
    ctx = default_context()
    shapes = shape if isinstance(shape, list) else [shape]

    def uniform(s: Any) -> np.ndarray:
        return np.random.uniform(size=s).astype(dtype)
    w_np, g_np = [uniform(s) for s in shapes], [uniform(s) for s in shapes]
    w1, g1 = [array(w, ctx, dtype) for w in w_np], [array(g, ctx, dtype) for g in g_np]
    w2, g2 = [array(w, ctx, dtype) for w in w_np], [array(g, ctx, dtype) for g in g_np]
    if not isinstance(shape, list):
        s1 = opt1.create_state_multi_precision(0, w1[0])
        s2 = opt2.create_state_multi_precision(0, w2[0])
        if compare_states:
            compare_ndarray_tuple(s1, s2)
        opt1.update_multi_precision(0, w1[0], g1[0], s1)
        opt2.update_multi_precision(0, w2[0], g2[0], s2)
        if compare_states:
            compare_ndarray_tuple(s1, s2, rtol=rtol, atol=atol)
        assert_almost_equal(w1[0], w2[0], rtol=rtol, atol=atol, names=("opt1", "opt2"))
        return
    states2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, states2)
    for i in range(ntensors):
        s1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], s1)
        if compare_states:
            compare_ndarray_tuple(s1, states2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1: Any, sym2: Any) -> bool:
    """Whether the JSON nodes of two symbols run the same ops, node by node."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(a["op"] == b["op"] for a, b in zip(nodes1, nodes2))
