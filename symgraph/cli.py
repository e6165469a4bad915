"""The ``symgraph`` command: ``train``, ``viz``, ``summary``, ``bench``.

``symgraph train MODEL [options]`` trains one of ``models/`` on MNIST (options as in
``python -m models.MODEL --help``); ``symgraph viz GRAPH.json --shape data=1,1,28,28 -o net.svg``
draws a saved symbol (writing the ``.dot`` source instead, with a note, when Graphviz's ``dot``
program is not installed); ``symgraph summary GRAPH.json --shape ...`` prints the layer table;
``symgraph bench MODEL`` times training steps.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Optional, Sequence

from .base import SymgraphError


def parse_shapes(items: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``['data=1,1,28,28']`` -> ``{'data': (1, 1, 28, 28)}``."""
    out = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = tuple(int(d) for d in dims.replace("x", ",").split(",") if d)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--shape {item!r}: expected NAME=D1,D2,...") from None
    return out


def _cmd_viz(args: argparse.Namespace) -> int:
    from . import fileio, symbol, viz
    net = symbol.load(args.graph)
    out = Path(args.output)
    fmt = out.suffix.lstrip(".") or "svg"
    dot = viz.plot_network(net, title=args.title or out.stem, save_format=fmt,
                           shape=parse_shapes(args.shape) or None,
                           hide_weights=not args.show_weights)
    if shutil.which("dot") is None:
        src = out.with_suffix(".dot")
        fileio.write_text(src, dot.source)
        print(f"note: Graphviz 'dot' not found; wrote the DOT source to {src} "
              f"(render it with: dot -T{fmt} {src} -o {out})")
        return 0
    fileio.write_bytes(out, dot.pipe(format=fmt))
    print(f"wrote {out}")
    return 0


def _cmd_summary(args: argparse.Namespace) -> int:
    from . import symbol, viz
    viz.print_summary(symbol.load(args.graph), parse_shapes(args.shape))
    return 0


def _model_cmd(name: str, argv: Sequence[str]) -> int:
    try:
        from models.runner import bench_main, main
    except ImportError:
        print("error: the models package is not importable (run from the repository root or "
              "install symgraph)", file=sys.stderr)
        return 2
    return (bench_main if name == "bench" else main)(*argv_split(argv))


def argv_split(argv: Sequence[str]) -> tuple[str, list[str]]:
    if not argv or argv[0].startswith("-"):
        from models import MODELS
        raise SystemExit(f"error: give a model name: {', '.join(MODELS)}")
    return argv[0], list(argv[1:])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="symgraph", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("train", help="train a model on MNIST", add_help=False)
    sub.add_parser("bench", help="time training steps of a model", add_help=False)
    for name, helptext in (("viz", "draw a symbol JSON"), ("summary", "layer table")):
        q = sub.add_parser(name, help=helptext)
        q.add_argument("graph", help="symbol JSON file (e.g. PREFIX-symbol.json)")
        q.add_argument("--shape", action="append", default=[],
                       help="input shape NAME=D1,D2,... (repeatable)")
        if name == "viz":
            q.add_argument("-o", "--output", default="net.svg")
            q.add_argument("--title", default=None)
            q.add_argument("--show-weights", action="store_true")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``symgraph`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("train", "bench"):
        return _model_cmd(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return {"viz": _cmd_viz, "summary": _cmd_summary}[args.cmd](args)
    except (SymgraphError, OSError, argparse.ArgumentTypeError) as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
