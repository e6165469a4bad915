"""The graph core, the bottom layer: the IR (``graph``), the op registry (``registry``,
``attrs``, ``expr``), types on the IR (``types/``), applying ops to graph entries (``build``),
and what every layer needs (``base`` errors, ``config`` settings, ``context``, ``dtypes``,
``fileio``, naming). Imports nothing from the layers above.
"""
