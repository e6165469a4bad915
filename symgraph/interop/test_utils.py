"""Checks against independent references: forward values, and gradients by central differences
in float64 (MXNet's ``mx.test_utils`` names and arguments). The comparisons, test inputs,
consistency and speed checks and generator statistics live in ``symgraph.testkit`` and are
all importable from here, as from MXNet's module.

Example::

    >>> import numpy as np, symgraph as sg
    >>> from symgraph.interop.test_utils import check_numeric_gradient
    >>> check_numeric_gradient(sg.sym.var("x") ** 2, [np.array([1.0, -2.0])])
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ..core.context import Context
from ..runtime.ndarray import NDArray, array
from .testkit.compare import (almost_equal, assert_allclose, assert_almost_equal,  # noqa: F401
                              assert_almost_equal_ignore_nan, assert_almost_equal_with_err,
                              assert_exception, collapse_sum_like, compare_ndarray_tuple,
                              default_atols, default_dtype, default_numeric_eps, default_rtols,
                              effective_dtype, get_atol, get_etol, get_rtol, get_tolerance,
                              get_tols, same, same_array)
from .testkit.data import (DummyIter, default_context, discard_stderr,  # noqa: F401
                           environment, get_cifar10, get_mnist_iterator, is_aarch64_run,
                           list_gpus, np_reduce,
                           rand_coord_2d, rand_ndarray, rand_shape_2d, rand_shape_3d,
                           rand_shape_nd, random_arrays, random_sample, random_uniform_arrays,
                           retry, set_default_context)
from .testkit.run import (check_consistency, check_speed, compare_optimizer,  # noqa: F401
                          same_symbol_structure, simple_forward)
from .testkit.stats import (chi_square_check, gen_buckets_probs_with_ppf,  # noqa: F401
                            mean_check, var_check, verify_generator)

__all__ = ["check_numeric_gradient", "check_symbolic_forward", "check_symbolic_backward",
           "numeric_grad", "get_mnist",
           "almost_equal", "assert_allclose", "assert_almost_equal",
           "assert_almost_equal_ignore_nan", "assert_almost_equal_with_err", "assert_exception",
           "collapse_sum_like", "compare_ndarray_tuple", "default_atols", "default_dtype",
           "default_numeric_eps", "default_rtols", "effective_dtype", "get_atol", "get_etol",
           "get_rtol", "get_tolerance", "get_tols", "same", "same_array",
           "DummyIter", "default_context", "discard_stderr", "environment", "get_cifar10",
           "get_mnist_iterator", "is_aarch64_run", "list_gpus", "np_reduce", "rand_coord_2d", "rand_ndarray",
           "rand_shape_2d", "rand_shape_3d", "rand_shape_nd", "random_arrays", "random_sample",
           "random_uniform_arrays", "retry", "set_default_context",
           "check_consistency", "check_speed", "compare_optimizer", "same_symbol_structure",
           "simple_forward", "chi_square_check", "gen_buckets_probs_with_ppf", "mean_check",
           "var_check", "verify_generator"]

Location = Union[Sequence[np.ndarray], Mapping[str, np.ndarray]]


def _as_dict(names: Sequence[str], values: Any, what: str) -> dict[str, np.ndarray]:
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return {k: np.asarray(v.asnumpy() if isinstance(v, NDArray) else v)
                for k, v in values.items()}
    values = list(values)
    if len(values) != len(names):
        raise ValueError(f"{what}: {len(values)} arrays for {len(names)} names {list(names)}")
    return {k: np.asarray(v.asnumpy() if isinstance(v, NDArray) else v)
            for k, v in zip(names, values)}


def _bind(sym: Any, location: dict, aux: dict, ctx: Context, dtype: Any,
          grad_req: Any = "write", grads: Optional[dict] = None) -> Any:
    def nd(v: np.ndarray) -> NDArray:
        return array(v, ctx, v.dtype if dtype is None or dtype == "asnumpy" else dtype)
    args = {k: nd(v) for k, v in location.items()}
    if grads is None:
        grads = {k: np.zeros_like(v) for k, v in location.items()}
    aux_arrays = {k: nd(v) for k, v in aux.items()}
    return sym.bind(ctx, args, args_grad={k: nd(v) for k, v in grads.items()},
                    grad_req=grad_req, aux_states=aux_arrays or None)


def _reqs(names: Sequence[str], grad_req: Any) -> dict[str, str]:
    """``grad_req`` (a string, a list in argument order or a dict) as a dict by name."""
    if isinstance(grad_req, str):
        return {k: grad_req for k in names}
    if isinstance(grad_req, Mapping):
        return {k: grad_req.get(k, "null") for k in names}
    return dict(zip(names, grad_req))


def check_symbolic_forward(sym: Any, location: Location, expected: Sequence[np.ndarray],
                           rtol: Any = None, atol: Any = None,
                           aux_states: Any = None, ctx: Optional[Context] = None,
                           equal_nan: bool = False, dtype: Any = np.float32,
                           is_train: bool = False) -> list[np.ndarray]:
    """Forward ``sym`` at ``location`` and compare every output with ``expected``
    (``dtype="asnumpy"`` keeps each array's own dtype; None tolerances follow the dtypes
    compared, as MXNet's)."""
    ctx = ctx or default_context()
    loc = _as_dict(sym.list_arguments(), location, "location")
    aux = _as_dict(sym.list_auxiliary_states(), aux_states, "aux_states")
    exe = _bind(sym, loc, aux, ctx, dtype, grad_req="null")
    outs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    if isinstance(expected, Mapping):
        expected = [expected[k] for k in sym.list_outputs()]
    for i, (o, e) in enumerate(zip(outs, expected)):
        assert_almost_equal(o, e, rtol, atol, (f"output {i}", "expected"), equal_nan=equal_nan)
    return outs


def check_symbolic_backward(sym: Any, location: Location, out_grads: Any,
                            expected: Any, rtol: Any = None, atol: Any = None,
                            aux_states: Any = None, grad_req: Any = "write",
                            ctx: Optional[Context] = None, grad_stypes: Any = None,
                            equal_nan: bool = False, dtype: Any = np.float32) -> dict:
    """Backward ``sym`` with head gradients ``out_grads``; compare gradients to ``expected``.

    As MXNet's: gradient buffers start random, so ``add`` is checked as the change and
    ``null`` as no change. None tolerances follow the dtypes compared."""
    ctx = ctx or default_context()
    names = sym.list_arguments()
    loc = _as_dict(names, location, "location")
    aux = _as_dict(sym.list_auxiliary_states(), aux_states, "aux_states")
    exp = _as_dict(names, expected, "expected")
    reqs = _reqs(names, grad_req)
    start = {k: np.random.normal(size=v.shape).astype(v.dtype) for k, v in loc.items()}
    exe = _bind(sym, loc, aux, ctx, dtype, grad_req=reqs, grads=start)
    exe.forward(is_train=True)
    if isinstance(out_grads, Mapping):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    elif isinstance(out_grads, (list, tuple)):
        # MXNet's executor reads one head gradient per output and ignores the rest (its own
        # test_prelu passes a gradient for the gamma input too)
        out_grads = list(out_grads)[:len(sym.list_outputs())]
    exe.backward(None if out_grads is None else
                 [g if isinstance(g, NDArray) else _bind_dtype(g, ctx, dtype) for g in out_grads])
    grads = {k: v.asnumpy() for k, v in zip(names, exe.grad_arrays)}
    for k, e in exp.items():
        got = {"write": grads[k], "add": grads[k] - start[k].astype(grads[k].dtype),
               "null": grads[k]}[reqs[k]]
        want = start[k] if reqs[k] == "null" else e
        assert_almost_equal(got, want, rtol, atol, (f"gradient of {k} ({reqs[k]})", "expected"),
                            equal_nan=equal_nan)
    return grads


def _bind_dtype(value: Any, ctx: Context, dtype: Any) -> NDArray:
    v = np.asarray(value)
    return array(v, ctx, v.dtype if dtype is None or dtype == "asnumpy" else dtype)


def numeric_grad(exe: Any, location: dict[str, np.ndarray], heads: list[np.ndarray],
                 names: Sequence[str], eps: float, is_train: bool,
                 aux_states: Optional[dict[str, np.ndarray]] = None) -> dict[str, np.ndarray]:
    """Central differences, f(x + eps/2) - f(x - eps/2) over eps as MXNet's, of
    sum_i <output_i, heads_i> with respect to each of ``names``. Auxiliary states are reset
    to ``aux_states`` before every forward (a training forward may update them)."""
    def objective() -> float:
        for k, v in (aux_states or {}).items():
            exe.aux_dict[k][:] = v
        outs = exe.forward(is_train=is_train)
        return float(sum(np.sum(o.asnumpy().astype(np.float64) * h) for o, h in zip(outs, heads)))
    grads = {}
    for name in names:
        base = np.array(location[name], dtype=np.float64, order="C")  # flat views write through
        g = np.zeros(base.shape, np.float64)
        flat, gflat = base.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            for sign in (1, -1):
                x = flat.copy()
                x[i] += sign * eps / 2
                exe.arg_dict[name][:] = x.reshape(base.shape)
                gflat[i] += sign * objective() / eps
        exe.arg_dict[name][:] = base
        grads[name] = g
    return grads


def check_numeric_gradient(sym: Any, location: Location, aux_states: Any = None,
                           numeric_eps: Optional[float] = None, rtol: Optional[float] = 1e-3,
                           atol: Optional[float] = None, grad_nodes: Any = None,
                           use_forward_train: bool = True, ctx: Optional[Context] = None,
                           grad_stype_dict: Any = None, dtype: Any = np.float64,
                           seed: int = 0) -> None:
    """Compare symbolic gradients with float64 central differences of a random projection
    of the outputs (raises AssertionError on a mismatch). ``grad_nodes``: names, or a dict
    name -> grad_req (``write``, ``add`` or ``null``) as in MXNet. In a ``dtype`` narrower
    than float64, None step and tolerances are MXNet's for that dtype."""
    ctx = ctx or default_context()
    wide = np.dtype(dtype) == np.float64
    numeric_eps = numeric_eps or (1e-4 if wide else default_numeric_eps()[np.dtype(dtype)])
    if not wide:
        rtol, atol = get_tols(np.zeros(0, dtype), np.zeros(0, dtype), rtol, atol)
    rtol = 1e-3 if rtol is None else rtol
    names = sym.list_arguments()
    loc = {k: np.ascontiguousarray(v, dtype=dtype)
           for k, v in _as_dict(names, location, "location").items()}
    aux = {k: np.ascontiguousarray(v, dtype=dtype) for k, v in
           _as_dict(sym.list_auxiliary_states(), aux_states, "aux_states").items()}
    reqs = dict(grad_nodes) if isinstance(grad_nodes, Mapping) else \
        {n: "write" for n in (grad_nodes or names)}
    start = {k: np.zeros_like(v) if reqs.get(k, "null") != "add" else np.ones_like(v)
             for k, v in loc.items()}
    exe = _bind(sym, loc, aux, ctx, dtype, grad_req={n: reqs.get(n, "null") for n in names},
                grads=start)
    rng = np.random.default_rng(seed)
    outs = exe.forward(is_train=use_forward_train)
    heads = [rng.normal(size=o.shape) for o in outs]
    exe.backward([array(h, ctx, o.dtype) for h, o in zip(heads, outs)])  # outputs may be narrower
    symbolic = {k: g.asnumpy() for k, g in zip(names, exe.grad_arrays) if k in reqs}
    numeric = numeric_grad(exe, loc, heads, [k for k in reqs if reqs[k] != "null"],
                           numeric_eps, use_forward_train, aux)
    for k, v in aux.items():
        exe.aux_dict[k][:] = v
    for k, req in reqs.items():
        if req == "null":
            assert_almost_equal(symbolic[k], start[k], 0, 0, (f"gradient of {k} (null)",
                                                              "untouched"))
            continue
        got = symbolic[k] - start[k] if req == "add" else symbolic[k]
        assert_almost_equal(got, numeric[k], rtol, 1e-6 if atol is None else atol,
                            (f"symbolic gradient of {k}", "numeric"))


def get_mnist(path: Optional[str] = None) -> dict[str, np.ndarray]:
    """MNIST in MXNet's ``get_mnist()`` layout: ``train_data``/``test_data`` float32
    ``(N, 1, 28, 28)`` in [0, 1], ``train_label``/``test_label`` (N,), read from ``path``, else
    ``$SYMGRAPH_DATA``, else ``~/.symgraph/datasets/mnist`` (downloaded there when missing and
    a network is there; DataError naming the folder and files otherwise)."""
    from pathlib import Path
    from ..gluon.data.vision.datasets.mnist import check_files, default_root
    from ..training.datasets.mnist import load_data
    folder = Path(os.path.expanduser(path)) if path is not None else default_root("mnist")
    for split in ("train", "test"):  # downloads, or names what is missing and `path`
        check_files(folder, split, who="get_mnist", param="path")
    return load_data(folder)
