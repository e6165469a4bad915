"""The ``symgraph`` logger, which every training message goes to (MXNet logs to the root logger).

It propagates to the root logger, so ``logging.basicConfig`` shows its messages; silence them
with ``logging.getLogger("symgraph").setLevel(logging.WARNING)`` without touching other libraries.
"""
from __future__ import annotations

import logging

LOGGER = logging.getLogger("symgraph")
