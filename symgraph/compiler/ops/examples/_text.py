"""The one helper the example tables share."""
from __future__ import annotations


def call(expr: str, shown: str, shape: str, setup: tuple[str, ...] = ()) -> str:
    """Doctest text: ``setup`` statements, then ``expr`` and the NDArray it prints
    (``shown`` values, ``shape`` as MXNet writes it: ``2x3``)."""
    lines = "".join(f">>> {s}\n" for s in setup)
    return lines + f">>> {expr}\n{shown}\n<NDArray {shape} @cpu(0)>\n"
