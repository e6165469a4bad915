"""Example networks, each runnable as ``python -m symgraph.interop.models.<name> --ctx cpu --epochs 1``.

Every model module defines ``build() -> Symbol`` and ``RECIPE`` (training hyper-parameters);
:mod:`symgraph.interop.models.runner` trains any of them on MNIST. ``MODELS`` maps CLI names to modules.
"""
from __future__ import annotations

MODELS = ("mlp", "lenet", "simple_cnn", "reorg_lenet", "rtc_softmax_mlp")
