"""Training curves as PNG (matplotlib, optional: without it a one-line note is logged)."""
from __future__ import annotations

import os
from typing import Any, Sequence

from ..core.fileio import atomic_write

PLOT_HINT = "pip install 'symgraph[plot]'"  # the extra that brings matplotlib


def plot_history(history: Sequence[dict], fname: str, logger: Any) -> bool:
    """Plot every ``train-*``/``val-*`` series of ``Module.history`` against the epoch."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning("matplotlib is not installed (%s): no training curve written to %s",
                       PLOT_HINT, fname)
        return False
    keys = sorted({k for rec in history for k in rec if k.startswith(("train-", "val-"))})
    fig, ax = plt.subplots(figsize=(6, 4))
    epochs = [rec["epoch"] + 1 for rec in history]
    for k in keys:
        ax.plot(epochs, [rec.get(k, float("nan")) for rec in history], marker="o", label=k)
    ax.set_xlabel("epoch")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fmt = os.path.splitext(fname)[1].lstrip(".") or "png"
    try:
        atomic_write(fname, lambda f: fig.savefig(f, format=fmt))
    finally:
        plt.close(fig)
    return True
