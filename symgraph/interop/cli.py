"""The ``symgraph`` command: ``train``, ``bench``, ``viz``, ``summary`` (``--help`` on each).

``symgraph train MODEL [options]`` trains one of :mod:`symgraph.models` on MNIST (``--download``
fetches it first); ``symgraph bench MODEL`` times training steps;
``symgraph viz GRAPH.json --shape data=1,1,28,28 -o net.svg`` draws a saved symbol
(``--compiled``: the fused forward schedule it compiles to), writing the ``.dot`` source instead,
with a note, when Graphviz's ``dot`` program is not installed;
``symgraph summary GRAPH.json --shape ...`` prints the layer table;
``symgraph im2rec [--list] PREFIX ROOT`` makes image lists and ``.rec`` files (MXNet's tool).

Bad arguments print one ``PROG: error: ...`` line written in the command's own syntax and exit
with status 2; so do errors raised while running (missing files, bad graphs), never a traceback.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..core.base import ShapeError, SymgraphError
from .cli_args import Parser, positive_float, positive_int
from .viz_render import DOT_INSTALL_HINT
from .models import MODELS

SHAPE_HINT = "--shape NAME=D1,D2,... (e.g. --shape data=1,784)"
# Graphviz output formats accepted by -o when the graphviz package cannot say (it is optional).
FALLBACK_FORMATS = ("svg", "png", "pdf", "jpg", "jpeg", "gif", "ps", "eps", "dot", "gv", "json")


def shape_arg(text: str) -> tuple[str, tuple[int, ...]]:
    """argparse type of ``--shape``: ``data=1,1,28,28`` -> ``('data', (1, 1, 28, 28))``; the
    dimensions may also be written ``1x1x28x28`` or as a Python tuple ``(1,1,28,28)``. An
    empty dimension (``1,,784``) or any other separator is refused, never skipped."""
    name, sep, dims = text.partition("=")
    dims = dims.strip()
    if dims.startswith("(") and dims.endswith(")"):
        dims = dims[1:-1].rstrip(",")  # (784,) is a one-element tuple
    try:
        if not sep or not name:
            raise ValueError
        shape = tuple(int(d) for d in re.split(r"[,x]", dims))  # int('') raises
        if min(shape) < 1:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=D1,D2,... (or D1xD2) with "
                                         f"positive sizes (e.g. --shape data=1,784)") from None
    return name, shape


def parse_shapes(items: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``['data=1,1,28,28']`` -> ``{'data': (1, 1, 28, 28)}``."""
    return dict(shape_arg(item) for item in items)


def graphviz_formats() -> tuple[str, ...]:
    try:
        import graphviz
        return tuple(sorted(graphviz.FORMATS))
    except ImportError:
        return FALLBACK_FORMATS


def output_file(text: str) -> Path:
    """argparse type of ``viz -o``: a file name whose suffix is a Graphviz format."""
    out = Path(text)
    fmt = out.suffix.lstrip(".").lower()
    formats = graphviz_formats()
    if fmt not in formats:
        common = [f for f in FALLBACK_FORMATS if f in formats]
        raise argparse.ArgumentTypeError(
            f"{text!r}: unknown picture format {fmt or '(no suffix)'!r}; use a suffix such as "
            f"{', '.join('.' + f for f in common)}")
    return out


def _shapes_or_error(parser: Parser, args: argparse.Namespace, why: str) -> dict:
    if not args.shape:
        parser.error(f"{why} needs input shapes: give {SHAPE_HINT}")
    return dict(args.shape)


def _load_graph(parser: Parser, args: argparse.Namespace) -> Any:
    """The symbol of ``args.graph``; a ``--shape`` naming none of its inputs is a usage error
    (the library would ignore it and report the input it names as unknown)."""
    from ..frontend import symbol
    net = symbol.load(args.graph)
    inputs = net.list_inputs()
    for name, shape in args.shape:
        if name not in inputs:
            listed = ", ".join(inputs[:12]) + (", ..." if len(inputs) > 12 else "")
            parser.error(f"--shape {name}={','.join(map(str, shape))}: {args.graph} has no "
                         f"input {name!r} (its inputs: {listed})")
    return net


def _cmd_viz(args: argparse.Namespace, parser: Parser) -> int:
    from ..core import fileio
    from . import viz
    from ..core.context import cpu
    out: Path = args.output
    fmt = out.suffix.lstrip(".").lower()
    shapes = _shapes_or_error(parser, args, "--compiled") if args.compiled else dict(args.shape)
    net = _load_graph(parser, args)
    target: Any = net.simple_bind(cpu(), **shapes) if args.compiled else net
    dot = viz.plot_network(target, title=args.title or out.stem, save_format=fmt,
                           shape=shapes or None, hide_weights=not args.show_weights,
                           dpi=args.dpi)
    if fmt in ("dot", "gv"):
        fileio.write_text(out, dot.source)
    elif shutil.which("dot") is None:
        src = out.with_suffix(".dot")
        fileio.write_text(src, dot.source)
        print(f"note: Graphviz's 'dot' program not found ({DOT_INSTALL_HINT}); wrote the DOT "
              f"source to {src} (render it with: dot -T{fmt} {src} -o {out})")
        return 0
    else:
        fileio.write_bytes(out, dot.pipe(format=fmt))
    print(f"wrote {out}")
    return 0


def _cmd_summary(args: argparse.Namespace, parser: Parser) -> int:
    from . import viz
    shapes = _shapes_or_error(parser, args, "summary")
    viz.print_summary(_load_graph(parser, args), shapes)
    return 0


def _cmd_train(args: argparse.Namespace, parser: Parser) -> int:
    from .models import runner
    return runner.run_cli(args)


def _cmd_bench(args: argparse.Namespace, parser: Parser) -> int:
    from .models import runner
    return runner.bench(args)


def _cmd_im2rec(args: argparse.Namespace, parser: Parser) -> int:
    from ..training import im2rec
    return im2rec.run(args)


def _cmd_launch(args: argparse.Namespace, parser: Parser) -> int:
    from ..training.parallel.spawn import launch
    if not args.command:
        parser.error("give the command each rank runs, e.g. symgraph launch -n 2 python3 "
                     "train.py")
    return launch(args.nproc, args.command, args.master_port)


def _add_graph_command(sub: Any, name: str, helptext: str) -> Parser:
    q = sub.add_parser(name, help=helptext, description=helptext)
    q.add_argument("graph", help="symbol JSON file (e.g. PREFIX-symbol.json)")
    q.add_argument("--shape", action="append", default=[], type=shape_arg, metavar="NAME=D1,D2",
                   help="input shape, e.g. data=1,784 or data=1x784 (repeat for several "
                        "inputs)")
    return q


def _add_model_command(sub: Any, name: str, helptext: str) -> Parser:
    q = sub.add_parser(name, help=helptext, description=helptext)
    q.add_argument("model", choices=MODELS, metavar="MODEL",
                   help=f"one of {', '.join(MODELS)} (symgraph.interop.models)")
    q.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu", help="device (default: cpu)")
    return q


def build_parser() -> Parser:
    """The ``symgraph`` argument parser: one subparser per command."""
    from .. import __version__
    from .models import runner
    p = Parser(prog="symgraph", description="symgraph: a define-then-run graph compiler with "
               "MXNet's mx.sym API. Run 'symgraph COMMAND --help' for a command's options.")
    p.add_argument("--version", action="version", version=f"symgraph {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    q = _add_model_command(sub, "train", "train a model on MNIST")
    runner.add_train_options(q, None)
    q.set_defaults(func=_cmd_train, parser=q)
    q = _add_model_command(sub, "bench", "time training steps of a model on random data")
    q.add_argument("--batch-size", type=positive_int, default=64, help="default: 64")
    q.add_argument("--steps", type=positive_int, default=20, help="timed steps (default: 20)")
    q.set_defaults(func=_cmd_bench, parser=q)
    q = _add_graph_command(sub, "viz", "draw a symbol JSON with Graphviz")
    q.add_argument("-o", "--output", type=output_file, default=Path("net.svg"),
                   help="picture file; its suffix picks the format (default: net.svg)")
    q.add_argument("--title", default=None, help="graph title (default: the file's stem)")
    q.add_argument("--show-weights", action="store_true", help="draw parameter variables")
    q.add_argument("--compiled", action="store_true",
                   help="draw the fused forward schedule the graph compiles to (needs --shape)")
    q.add_argument("--dpi", type=positive_int, default=150, help="PNG resolution (default: 150)")
    q.set_defaults(func=_cmd_viz, parser=q)
    q = _add_graph_command(sub, "summary", "print the layer table of a symbol JSON")
    q.set_defaults(func=_cmd_summary, parser=q)
    from ..training import im2rec
    helptext = "make image lists (--list) or pack them into .rec/.idx (MXNet's im2rec)"
    q = sub.add_parser("im2rec", help=helptext, description=helptext)
    im2rec.add_arguments(q)
    q.set_defaults(func=_cmd_im2rec, parser=q)

    q = sub.add_parser("launch", help="run a command as N ranks on this host, with a job key",
                       description="run a command as N ranks on this host; each is given RANK, "
                       "WORLD_SIZE, MASTER_ADDR/PORT and the job's fresh SYMGRAPH_JOB_KEY")
    q.add_argument("-n", "--nproc", type=positive_int, required=True, help="number of ranks")
    q.add_argument("--master-port", type=positive_int, default=0,
                   help="rank 0's port (default: a free one)")
    q.add_argument("command", nargs=argparse.REMAINDER, help="the command each rank runs")
    q.set_defaults(func=_cmd_launch, parser=q)
    return p


def _message(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, ShapeError):  # the library's hint names the Python API
        text = text.replace("give them to infer_shape / simple_bind", f"give {SHAPE_HINT}")
    return f"{type(exc).__name__}: {text}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``symgraph`` console script."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    command: Callable[[argparse.Namespace, Parser], int] = args.func
    try:
        return command(args, args.parser)
    except (SymgraphError, OSError, ImportError) as exc:
        print(f"symgraph {args.cmd}: error: {_message(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
