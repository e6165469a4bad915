"""``python -m symgraph`` is the ``symgraph`` command."""
import sys

from .cli import main

sys.exit(main())
