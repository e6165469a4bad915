"""The Examples section of each public op's docstring, as doctest text over ``sg.nd``.

One table per family of ops; :data:`EXAMPLES` maps an op's canonical name to its example, and
``symgraph/opdoc.py`` renders it into the ``sg.sym`` and ``sg.nd`` docstrings (aliases share
their target's). Expected outputs are small, worked out by hand, and checked by
tests/test_docstring_examples.py (numpy print options ``precision=4, suppress=True``).
"""
from __future__ import annotations

from . import contrib, detection, elemwise, image, linalg, nn, random, spatial, tensor, update

EXAMPLES: dict[str, str] = {}
for _table in (contrib.EXAMPLES, detection.EXAMPLES, elemwise.EXAMPLES, image.EXAMPLES,
               linalg.EXAMPLES, nn.EXAMPLES, random.EXAMPLES, spatial.EXAMPLES,
               tensor.EXAMPLES, update.EXAMPLES):
    _twice = EXAMPLES.keys() & _table.keys()
    assert not _twice, f"examples given twice: {sorted(_twice)}"
    EXAMPLES.update(_table)
