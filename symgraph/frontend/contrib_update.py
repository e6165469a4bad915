"""``sg.nd.contrib.adamw_update`` and its ``mp_``/``multi_`` forms, ``sg.sym.contrib.adamw_update``
and ``mp_adamw_update``: MXNet 1.9.1's front functions of the AdamW ops
(``compiler/ops/update_adamw.py``). They take ``rescale_grad`` as a number or an array (a number
becomes a one-element array, as MXNet does), and the multi forms take lists of arrays.

Example::

    >>> import symgraph as sg
    >>> ws, gs = [sg.nd.ones((2,)), sg.nd.ones((3,))], [sg.nd.ones((2,)), sg.nd.ones((3,))]
    >>> ms, vs = [sg.nd.zeros((2,)), sg.nd.zeros((3,))], [sg.nd.zeros((2,)), sg.nd.zeros((3,))]
    >>> _ = sg.nd.contrib.multi_adamw_update(ws, gs, ms, vs, 1.0, lrs=[0.1, 0.1],
    ...                                      wds=[0.0, 0.0], etas=[1.0, 1.0], out=ws)
    >>> [round(float(w.asnumpy()[0]), 4) for w in ws]
    [0.6838, 0.6838]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..core.base import AttrError
from ..runtime import ndarray as nd
from ..runtime.ndarray import NDArray
from . import symbol as sym


def _nd_scale(rescale_grad: Any, like: NDArray) -> NDArray:
    if isinstance(rescale_grad, NDArray):
        return rescale_grad.as_in_context(like.context)
    return nd.full((1,), rescale_grad, ctx=like.context)


def _sym_scale(rescale_grad: Any) -> Any:
    return rescale_grad if isinstance(rescale_grad, sym.Symbol) \
        else sym.full(shape=(1,), val=rescale_grad)


def adamw_update(weight: NDArray, grad: NDArray, mean: NDArray, var: NDArray,
                 rescale_grad: Any, lr: float, eta: float, out: Any = None,
                 name: Optional[str] = None, **kwargs: Any) -> Any:
    """One AdamW step (``_adamw_update``); mean and var are updated in place."""
    return nd._internal._adamw_update(weight, grad, mean, var, _nd_scale(rescale_grad, weight),
                                      lr=lr, eta=eta, out=out, name=name, **kwargs)


def mp_adamw_update(weight: NDArray, grad: NDArray, mean: NDArray, var: NDArray,
                    weight32: NDArray, rescale_grad: Any, lr: float, eta: float,
                    out: Any = None, name: Optional[str] = None, **kwargs: Any) -> Any:
    """One AdamW step on a float16 weight with its float32 master ``weight32``."""
    return nd._internal._mp_adamw_update(weight, grad, mean, var, weight32,
                                         _nd_scale(rescale_grad, weight), lr=lr, eta=eta,
                                         out=out, name=name, **kwargs)


def _runs(lists: Sequence[Sequence[NDArray]], size: int, what: str) -> list[NDArray]:
    """The arrays of ``lists`` interleaved per weight (weight, grad, mean, var...)."""
    lengths = {len(x) for x in lists}
    if len(lengths) != 1 or size > min(lengths):
        raise AttrError(f"{what}: the lists of weights, gradients and states must have one "
                        f"length of at least size={size}, got lengths "
                        f"{[len(x) for x in lists]}")
    return [x[i] for i in range(size) for x in lists]


def multi_adamw_update(weights: Sequence[NDArray], grads: Sequence[NDArray],
                       mean: Sequence[NDArray], var: Sequence[NDArray], rescale_grad: Any,
                       lrs: Sequence[float], wds: Sequence[float], etas: Sequence[float],
                       out: Any = None, name: Optional[str] = None, size: int = 0,
                       **kwargs: Any) -> Any:
    """AdamW on several weights at once (``_multi_adamw_update``)."""
    size = size or len(weights)
    flat = _runs((weights, grads, mean, var), size, "multi_adamw_update")
    return nd._internal._multi_adamw_update(
        *flat, _nd_scale(rescale_grad, weights[0]), out=out, num_weights=size, lrs=lrs,
        wds=wds, etas=etas, name=name, **kwargs)


def multi_mp_adamw_update(weights: Sequence[NDArray], grads: Sequence[NDArray],
                          mean: Sequence[NDArray], var: Sequence[NDArray],
                          weights32: Sequence[NDArray], rescale_grad: Any,
                          lrs: Sequence[float], wds: Sequence[float], etas: Sequence[float],
                          out: Any = None, name: Optional[str] = None, size: int = 0,
                          **kwargs: Any) -> Any:
    """Multi-precision AdamW on several weights at once (``_multi_mp_adamw_update``)."""
    size = size or len(weights)
    flat = _runs((weights, grads, mean, var, weights32), size, "multi_mp_adamw_update")
    return nd._internal._multi_mp_adamw_update(
        *flat, _nd_scale(rescale_grad, weights[0]), out=out, num_weights=size, lrs=lrs,
        wds=wds, etas=etas, name=name, **kwargs)


def sym_adamw_update(weight: Any, grad: Any, mean: Any, var: Any, rescale_grad: Any,
                     lr: float, eta: float, name: Optional[str] = None, **kwargs: Any) -> Any:
    """Symbolic ``adamw_update`` (``sg.sym.contrib.adamw_update``)."""
    return sym._internal._adamw_update(weight, grad, mean, var, _sym_scale(rescale_grad),
                                       lr=lr, eta=eta, name=name, **kwargs)


def sym_mp_adamw_update(weight: Any, grad: Any, mean: Any, var: Any, weight32: Any,
                        rescale_grad: Any, lr: float, eta: float, name: Optional[str] = None,
                        **kwargs: Any) -> Any:
    """Symbolic ``mp_adamw_update`` (``sg.sym.contrib.mp_adamw_update``)."""
    return sym._internal._mp_adamw_update(weight, grad, mean, var, weight32,
                                          _sym_scale(rescale_grad), lr=lr, eta=eta, name=name,
                                          **kwargs)


for _fn in (adamw_update, mp_adamw_update, multi_adamw_update, multi_mp_adamw_update):
    setattr(nd.contrib, _fn.__name__, _fn)
sym.contrib.adamw_update = sym_adamw_update
sym.contrib.mp_adamw_update = sym_mp_adamw_update
