"""``sg.amp`` (also ``sg.contrib.amp``): automatic mixed precision, MXNet's ``mx.contrib.amp``.

* :func:`convert_symbol` / :func:`convert_model`: a float32 graph made mixed precision with
  ``amp_cast``/``amp_multicast`` from the op lists (:mod:`symgraph.frontend.amp.lists`).
* :class:`LossScaler`, :func:`init`, :func:`init_trainer`, :func:`scale_loss`, :func:`unscale`:
  dynamic loss scaling of a Gluon Trainer, for float16.
* ``Module.fit(..., amp='float16'|'bfloat16')`` and ``symgraph train --amp`` use the same pieces.

Weights stay float32 in a converted graph (the casts sit in the graph); for networks whose
weights are narrow themselves, optimizers take ``multi_precision=True`` (float32 master weights).
See docs/amp.md.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

from ...core.base import AttrError
from .convert import convert_model, convert_symbol, remove_amp_cast
from .lists import (check_target, list_conditional_fp32_ops, list_fp32_ops,
                    list_loss_output_functions, list_lp16_fp32_ops, list_lp16_ops,
                    list_widest_type_cast)
from .loss_scaler import LossScaler

__all__ = ["convert_symbol", "convert_model", "remove_amp_cast", "LossScaler", "init",
           "init_trainer", "scale_loss", "unscale", "list_lp16_ops", "list_fp32_ops",
           "list_lp16_fp32_ops", "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions", "target_dtype"]

_STATE: dict[str, Any] = {"target": None}


def init(target_dtype: str = "float16", target_precision_ops: Optional[list] = None,
         conditional_fp32_ops: Optional[list] = None, fp32_ops: Optional[list] = None) -> None:
    """Turn AMP on for this process (MXNet's ``amp.init``): records the target dtype and the
    lists, and allows :func:`init_trainer`. Unlike MXNet, ``sg.sym``/``sg.nd``/Gluon functions
    are not rewrapped, so a Gluon network computes in the dtype of its parameters and inputs
    (``net.cast('float16')`` with ``multi_precision=True``); a symbolic graph is converted
    with :func:`convert_symbol` (:func:`convert_traced` with these lists) or by
    ``Module.fit(amp=...)``."""
    if _STATE["target"] is None:
        _STATE.update(target=check_target(target_dtype), lp16=target_precision_ops,
                      conditional=conditional_fp32_ops, fp32=fp32_ops)


def target_dtype() -> Optional[str]:
    """The dtype :func:`init` turned on, or None."""
    return _STATE["target"]


def convert_traced(sym: Any) -> Any:
    """``sym`` converted with :func:`init`'s lists (unchanged when AMP is off)."""
    if _STATE["target"] is None:
        return sym
    return convert_symbol(sym, _STATE["target"], _STATE["lp16"], _STATE["fp32"],
                          _STATE["conditional"])


def init_trainer(optimizer_or_trainer: Any) -> None:
    """Give a Gluon Trainer a dynamic loss scaler (MXNet's ``amp.init_trainer``): its ``step``
    then skips updates whose gradients overflowed (and halves the scale)."""
    if _STATE["target"] is None:
        raise AttrError("amp.init_trainer: AMP is not initialized; call sg.amp.init() first")
    if not hasattr(optimizer_or_trainer, "_amp_loss_scaler"):  # a Gluon Trainer (Gluon is
        # a layer above: its Trainer is known by the slot it keeps for the scaler)
        raise AttrError(f"amp.init_trainer: AMP works with a Gluon Trainer, got "
                        f"{type(optimizer_or_trainer).__name__}")
    optimizer_or_trainer._amp_loss_scaler = LossScaler()
    optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale


@contextlib.contextmanager
def scale_loss(loss: Any, optimizer_or_trainer: Any) -> Iterator[Any]:
    """``with amp.scale_loss(loss, trainer) as scaled: scaled.backward()``: yields the loss (or
    list of losses) times the loss scale, and sets the trainer to divide it out."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise AttrError("amp.scale_loss: the loss scaler is not initialized; call "
                        "sg.amp.init_trainer(trainer) first")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [x * scaler.loss_scale for x in loss]
    else:
        yield loss * scaler.loss_scale


def unscale(optimizer_or_trainer: Any) -> None:
    """Divide the loss scale out of the gradients now (to clip or inspect them); the trainer's
    next step then applies no further loss scale (MXNet's ``amp.unscale``)."""
    if not hasattr(optimizer_or_trainer, "_amp_loss_scaler"):  # a Gluon Trainer (Gluon is
        # a layer above: its Trainer is known by the slot it keeps for the scaler)
        raise AttrError(f"amp.unscale: AMP works with a Gluon Trainer, got "
                        f"{type(optimizer_or_trainer).__name__}")
    trainer = optimizer_or_trainer
    for p in trainer._params:
        if p.grad_req != "null":
            for g in p.list_grad():
                g[:] = g.asnumpy() * trainer._scale
    trainer._scale = 1.0
