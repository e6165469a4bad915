"""Reading the documentation's source pages: their runnable code blocks, and which pages exist.

A tutorial's fenced blocks whose info string is exactly ``python`` are run, in order, as one
program; blocks written as ``{code-block} python`` (GPU-only, MXNet-side or several machines)
are shown on the page and not run.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_MXNET = re.compile(
    r"^```\{code-block\} python[ \t]*\n:caption: MXNet 1\.9\.1[ \t]*\n(.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL)


def runnable_code(page: Path) -> str:
    """The page's ``python`` blocks joined into one program (each block a paragraph)."""
    return "\n\n".join(m.group(1) for m in _FENCE.finditer(page.read_text()))


def mxnet_code(page: Path) -> list[str]:
    """The page's blocks captioned "MXNet 1.9.1": MXNet code, shown and run only where MXNet
    is installed."""
    return [m.group(1) for m in _MXNET.finditer(page.read_text())]


def tutorial_pages() -> list[Path]:
    """The getting-started page and every tutorial that has code to run."""
    pages = [DOCS / "getting_started.md", *sorted((DOCS / "tutorials").glob("*.md"))]
    return [p for p in pages if runnable_code(p)]
