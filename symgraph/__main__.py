"""``python -m symgraph`` is the ``symgraph`` command."""
import sys

from .interop.cli import main

sys.exit(main())
