"""Checkpoints of networks built from :mod:`symgraph.rnn` cells: weights are saved per gate
(``unpack_weights``), as MXNet's ``save_rnn_checkpoint`` writes them, and packed back on
load, so the files read in MXNet and the other way."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from ...training.checkpoint import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ["save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def _as_list(cells: Any) -> list:
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def save_rnn_checkpoint(cells: Any, prefix: str, epoch: int, symbol: Any,
                        arg_params: Mapping[str, Any], aux_params: Mapping[str, Any]) -> None:
    """:func:`symgraph.training.model.save_checkpoint` with each cell's weights split per gate.

    Examples
    --------
    >>> cell = sg.rnn.LSTMCell(4, prefix='l_')
    >>> sorted(cell.unpack_weights({'l_i2h_weight': np.zeros((16, 3)),
    ...     'l_i2h_bias': np.zeros(16), 'l_h2h_weight': np.zeros((16, 4)),
    ...     'l_h2h_bias': np.zeros(16)}))[:2]
    ['l_h2h_c_bias', 'l_h2h_c_weight']
    """
    args = dict(arg_params)
    for cell in _as_list(cells):
        args = cell.unpack_weights(args)
    save_checkpoint(prefix, epoch, symbol, args, aux_params)


def load_rnn_checkpoint(cells: Any, prefix: str, epoch: int) -> tuple[Any, dict, dict]:
    """``(symbol, arg_params, aux_params)`` of :func:`save_rnn_checkpoint`, weights packed
    back into the cells' fused ``i2h``/``h2h`` arrays."""
    sym, args, aux = load_checkpoint(prefix, epoch)
    for cell in _as_list(cells):
        args = cell.pack_weights(args)
    return sym, args, aux


def do_rnn_checkpoint(cells: Any, prefix: str, period: int = 1) -> Callable:
    """Epoch-end callback: :func:`save_rnn_checkpoint` every ``period`` epochs (the file
    number is the count of finished epochs)."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
