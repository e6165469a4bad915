"""Checks against independent references: forward values, and gradients by central differences
in float64 (MXNet's ``mx.test_utils`` names and arguments)."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from .context import Context, cpu
from .ndarray import NDArray, array

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
          grad_req: Any = "write") -> Any:
    args = {k: array(v, ctx, dtype or v.dtype) for k, v in location.items()}
    grads = {k: array(np.zeros_like(v), ctx, dtype or v.dtype) for k, v in location.items()}
    aux_arrays = {k: array(v, ctx, dtype or v.dtype) for k, v in aux.items()}
    return sym.bind(ctx, args, args_grad=grads, grad_req=grad_req,
                    aux_states=aux_arrays or None)


def assert_almost_equal(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-7,
                        names: tuple[str, str] = ("a", "b")) -> None:
    """numpy's allclose with a message giving the worst element."""
    a = a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)
    b = b.asnumpy() if isinstance(b, NDArray) else np.asarray(b)
    if a.shape != b.shape:
        raise AssertionError(f"shape mismatch: {names[0]} {a.shape} vs {names[1]} {b.shape}")
    if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        err = np.abs(a - b) / (atol + rtol * np.abs(b))
        i = np.unravel_index(np.nanargmax(err), err.shape) if err.ndim else ()
        raise AssertionError(f"{names[0]} and {names[1]} differ: worst at {i}: "
                             f"{a[i]} vs {b[i]} (rtol={rtol}, atol={atol}); "
                             f"max abs diff {np.nanmax(np.abs(a - b))}")


def check_symbolic_forward(sym: Any, location: Location, expected: Sequence[np.ndarray],
                           rtol: float = 1e-4, atol: Optional[float] = None,
                           aux_states: Any = None, ctx: Optional[Context] = None,
                           dtype: Any = np.float32, is_train: bool = False) -> list[np.ndarray]:
    """Forward ``sym`` at ``location`` and compare every output with ``expected``."""
    ctx = ctx or cpu()
    loc = _as_dict(sym.list_arguments(), location, "location")
    aux = _as_dict(sym.list_auxiliary_states(), aux_states, "aux_states")
    exe = _bind(sym, loc, aux, ctx, dtype, grad_req="null")
    outs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    for i, (o, e) in enumerate(zip(outs, expected)):
        assert_almost_equal(o, e, rtol, 1e-20 if atol is None else atol,
                            (f"output {i}", "expected"))
    return outs


def check_symbolic_backward(sym: Any, location: Location, out_grads: Sequence[np.ndarray],
                            expected: Any, rtol: float = 1e-5, atol: Optional[float] = None,
                            aux_states: Any = None, grad_req: str = "write",
                            ctx: Optional[Context] = None, dtype: Any = np.float32) -> dict:
    """Backward ``sym`` with head gradients ``out_grads``; compare gradients to ``expected``."""
    ctx = ctx or cpu()
    names = sym.list_arguments()
    loc = _as_dict(names, location, "location")
    aux = _as_dict(sym.list_auxiliary_states(), aux_states, "aux_states")
    exp = _as_dict(names, expected, "expected")
    exe = _bind(sym, loc, aux, ctx, dtype, grad_req=grad_req)
    exe.forward(is_train=True)
    exe.backward([array(g, ctx, dtype) for g in out_grads] if out_grads is not None else None)
    grads = {k: v.asnumpy() for k, v in exe.grad_dict.items()}
    for k, e in exp.items():
        assert_almost_equal(grads[k], e, rtol, 1e-20 if atol is None else atol,
                            (f"gradient of {k}", "expected"))
    return grads


def numeric_grad(exe: Any, location: dict[str, np.ndarray], heads: list[np.ndarray],
                 names: Sequence[str], eps: float, is_train: bool) -> dict[str, np.ndarray]:
    """Central differences of sum_i <output_i, heads_i> with respect to each of ``names``."""
    def objective() -> float:
        outs = exe.forward(is_train=is_train)
        return float(sum(np.sum(o.asnumpy().astype(np.float64) * h) for o, h in zip(outs, heads)))
    grads = {}
    for name in names:
        base = location[name].astype(np.float64)
        g = np.zeros_like(base)
        flat = base.reshape(-1)
        for i in range(flat.size):
            for sign in (1, -1):
                x = flat.copy()
                x[i] += sign * eps
                exe.arg_dict[name][:] = x.reshape(base.shape)
                g.reshape(-1)[i] += sign * objective() / (2 * eps)
        exe.arg_dict[name][:] = base
        grads[name] = g
    return grads


def check_numeric_gradient(sym: Any, location: Location, aux_states: Any = None,
                           numeric_eps: float = 1e-4, rtol: float = 1e-3,
                           atol: Optional[float] = None, grad_nodes: Optional[Sequence[str]] = None,
                           use_forward_train: bool = True, ctx: Optional[Context] = None,
                           dtype: Any = np.float64, seed: int = 0) -> None:
    """Compare symbolic gradients with float64 central differences of a random projection
    of the outputs (raises AssertionError on a mismatch)."""
    ctx = ctx or cpu()
    names = sym.list_arguments()
    loc = {k: v.astype(dtype) for k, v in _as_dict(names, location, "location").items()}
    aux = {k: v.astype(dtype) for k, v in
           _as_dict(sym.list_auxiliary_states(), aux_states, "aux_states").items()}
    grad_nodes = list(grad_nodes or names)
    exe = _bind(sym, loc, aux, ctx, dtype,
                grad_req={n: ("write" if n in grad_nodes else "null") for n in names})
    rng = np.random.default_rng(seed)
    outs = exe.forward(is_train=use_forward_train)
    heads = [rng.normal(size=o.shape) for o in outs]
    exe.backward([array(h, ctx, o.dtype) for h, o in zip(heads, outs)])  # outputs may be narrower
    symbolic = {k: exe.grad_dict[k].asnumpy() for k in grad_nodes}
    aux_saved = {k: v.asnumpy() for k, v in exe.aux_dict.items()}
    numeric = numeric_grad(exe, loc, heads, grad_nodes, numeric_eps, use_forward_train)
    for k, v in aux_saved.items():
        exe.aux_dict[k][:] = v
    for k in grad_nodes:
        assert_almost_equal(symbolic[k], numeric[k], rtol, 1e-6 if atol is None else atol,
                            (f"symbolic gradient of {k}", "numeric"))


def get_mnist(path: Optional[str] = None) -> dict[str, np.ndarray]:
    """MNIST in MXNet's ``get_mnist()`` layout: ``train_data``/``test_data`` float32
    ``(N, 1, 28, 28)`` in [0, 1], ``train_label``/``test_label`` (N,), read from ``path``, else
    ``$SYMGRAPH_DATA``, else ``~/.symgraph/datasets/mnist`` (downloaded there when missing and
    a network is there; DataError naming the folder and files otherwise)."""
    from .gluon.data.vision.datasets import MNIST, default_root
    from .datasets.mnist import load_data
    folder = path if path is not None else default_root("mnist")
    MNIST(root=str(folder), train=True)  # checks the files, downloads or names what is missing
    return load_data(folder)
