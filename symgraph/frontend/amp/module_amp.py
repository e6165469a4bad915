"""AMP inside ``Module`` (``Module.fit(..., amp='float16'|'bfloat16')``).

The module binds a converted copy of its symbol (``convert_symbol``; parameters stay float32,
the casts are in the graph), and its own symbol, parameters and checkpoints stay float32.

float16 adds dynamic loss scaling without rebinding when the scale changes: the data input of
each loss output (SoftmaxOutput, the regression outputs, MakeLoss) goes through
``_amp_grad_scale(data, _amp_loss_scale)``, an identity whose gradient is multiplied by the
``(1,)`` input ``_amp_loss_scale``, which the module sets before each step. Every update first
checks the gradients: an overflow skips the step and halves the scale (:class:`LossScaler`);
otherwise the optimizer runs with ``rescale_grad / scale``. bfloat16 has float32's range and
needs no scaling.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ...core.graph import Entry, Node, rewrite, variable
from ...core.log import LOGGER
from ..symbol import Symbol
from .convert import convert_symbol
from .lists import check_target, list_loss_output_functions
from .loss_scaler import LossScaler

SCALE_NAME = "_amp_loss_scale"
LOSS_OPS = ("MakeLoss",)  # besides list_loss_output_functions


def _scale_losses(sym: Symbol, target: str) -> tuple[Symbol, bool]:
    """``sym`` with the data input of every loss output scaled in backward; and whether any
    loss output was found."""
    losses = set(list_loss_output_functions(target)) | set(LOSS_OPS)
    heads = {e.node for e in sym.outputs_ if e.node.op in losses}
    scale = Entry(variable(SCALE_NAME, {"__shape__": "(1,)", "__dtype__": "float32"}))

    def visit(node: Node) -> Optional[Node]:
        if not any(node.name == h.name and node.op == h.op for h in heads):
            return None
        wrapped = Node("_amp_grad_scale", f"{node.name}_amp_grad_scale", inputs=(
            node.inputs[0], scale))
        return node.with_inputs((Entry(wrapped),) + tuple(node.inputs[1:]))
    return Symbol(rewrite(sym.graph(), visit).outputs), bool(heads)


class ModuleAmp:
    """A module's AMP setting: the dtype, the bound symbol, the loss scaler (float16)."""

    def __init__(self, target_dtype: str) -> None:
        self.target = check_target(target_dtype)
        self.scaler: Optional[LossScaler] = None

    def symbol(self, sym: Symbol) -> Symbol:
        """The symbol to bind in place of ``sym``."""
        out = convert_symbol(sym, self.target)
        if self.target != "float16":
            return out
        out, found = _scale_losses(out, self.target)
        if found:
            self.scaler = self.scaler or LossScaler()
        else:
            LOGGER.warning("AMP float16: the symbol has no loss output (%s); training without "
                           "loss scaling", ", ".join(list_loss_output_functions(self.target)))
        return out

    def bind_extras(self) -> tuple[dict, dict, dict]:
        """(grad_req, shapes, dtypes) of the scale input, if there is one."""
        if self.scaler is None:
            return {}, {}, {}
        return {SCALE_NAME: "null"}, {SCALE_NAME: (1,)}, {SCALE_NAME: np.float32}

    def after_bind(self, exe: Any) -> None:
        """Write the current scale into a new executor."""
        if self.scaler is not None:
            exe.arg_dict[SCALE_NAME][:] = np.array([self.scaler.loss_scale], np.float32)

    def update(self, exe: Any, optimizer: Any, grads: list, run: Callable[[], None]) -> bool:
        """One update through the loss scaler: ``run()`` (the module's plain update) unless the
        gradients overflowed; returns whether the step was applied."""
        if self.scaler is None:
            run()
            return True
        used = self.scaler.loss_scale
        if self.scaler.has_overflow(grads):
            self.after_bind(exe)
            return False
        base = optimizer.rescale_grad
        optimizer.rescale_grad = base / used
        try:
            run()
        finally:
            optimizer.rescale_grad = base
        if self.scaler.loss_scale != used:
            self.after_bind(exe)
        return True
