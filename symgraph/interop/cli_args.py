"""argparse pieces shared by the ``symgraph`` command (``cli.py``) and the model runner
(``models/runner.py``), in their own module so that neither imports the other's module to get
them."""
from __future__ import annotations

import argparse
import importlib.util
from typing import Any, NoReturn, Optional, Sequence

from ..training.plot import PLOT_HINT


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block): ``symgraph train: error: ...``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


class CurveFlag(argparse.Action):
    """``--curve`` (a flag): refused when parsed if matplotlib is missing, naming the ``plot``
    extra, rather than noted after a whole training."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: Optional[str] = None) -> None:
        if importlib.util.find_spec("matplotlib") is None:
            raise argparse.ArgumentError(self, f"needs matplotlib: {PLOT_HINT}")
        setattr(namespace, self.dest, True)
