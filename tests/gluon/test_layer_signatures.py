"""Gluon layers list their arguments: no ``*args`` in a signature users see, and the
names, order and defaults of MXNet 1.9.1's (read live where MXNet is installed)."""
from __future__ import annotations

import inspect
from typing import Any

import pytest

from symgraph import gluon

from ..mxnet_live import mxnet_json

MODULES = (gluon.nn, gluon.rnn, gluon.loss, gluon.contrib.nn, gluon.contrib.rnn,
           gluon.data.vision.transforms)


def _layers() -> dict[str, type]:
    return {f"{mod.__name__.split('.', 1)[1]}.{name}": obj
            for mod in MODULES for name, obj in vars(mod).items()
            if not name.startswith("_") and inspect.isclass(obj)
            and issubclass(obj, gluon.Block)}


def _params(cls: type) -> list[tuple[str, Any]]:
    """(name, repr of default) of the named arguments, ``**kwargs`` left out."""
    return [(p.name, None if p.default is p.empty else repr(p.default))
            for p in list(inspect.signature(cls).parameters.values())
            if p.kind is p.POSITIONAL_OR_KEYWORD]


def test_no_layer_takes_star_args() -> None:
    starred = sorted(n for n, cls in _layers().items()
                     if any(p.kind is p.VAR_POSITIONAL
                            for p in inspect.signature(cls).parameters.values()))
    assert not starred, f"layers whose signature has *args: {starred}"


MX_SCRIPT = r"""
import inspect, json, sys
from mxnet import gluon
out = {}
for name in json.load(sys.stdin):
    mod, cls = name.rsplit('.', 1)
    obj = gluon
    for part in mod.split('.'):
        obj = getattr(obj, part)
    ps = inspect.signature(getattr(obj, cls).__init__).parameters.values()
    out[name] = [(p.name, None if p.default is p.empty else repr(p.default))
                 for p in ps if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != 'self']
print(json.dumps(out))
"""

CONV_POOL = [f"nn.{kind}{n}D{suffix}" for kind, suffix in
             (("Conv", ""), ("Conv", "Transpose"), ("MaxPool", ""), ("AvgPool", ""))
             for n in (1, 2, 3)]
GLOBAL = [f"nn.Global{kind}Pool{n}D" for kind in ("Max", "Avg") for n in (1, 2, 3)]


@pytest.mark.mxnet
def test_conv_and_pool_signatures_are_mxnets() -> None:
    names = CONV_POOL + GLOBAL + ["nn.ReflectionPad2D"]
    theirs = mxnet_json(MX_SCRIPT, names)
    layers = _layers()
    for name in names:
        assert [list(p) for p in _params(layers[f"gluon.{name}"])] == theirs[name], name


@pytest.mark.parametrize("name", CONV_POOL + GLOBAL + ["nn.ReflectionPad2D"])
def test_conv_and_pool_help_describes_every_argument(name: str) -> None:
    cls = _layers()[f"gluon.{name}"]
    doc = inspect.getdoc(cls) or ""
    described = {n.strip() for line in doc.splitlines() if " : " in line
                 and not line.startswith(" ") for n in line.split(" : ")[0].split(",")}
    missing = [p for p, _ in _params(cls) if p not in described]
    assert not missing, f"{name}: no Parameters entry for {missing}"


def test_positional_arguments_land_where_mxnet_puts_them() -> None:
    """MXNet's positional order: AvgPool2D/3D and MaxPool3D take ceil_mode before layout,
    the transposed convolutions output_padding after padding."""
    import symgraph as sg
    x = sg.nd.array([[[[1, 2], [3, 4]]]])
    # padding 1, ceil_mode False, layout NCHW, count_include_pad False: each 2x2 window
    # holds one real cell, so the average without the padding is that cell
    got = gluon.nn.AvgPool2D(2, 2, 1, False, "NCHW", False)(x).asnumpy()
    assert got.tolist() == [[[[1.0, 2.0], [3.0, 4.0]]]]
    # ceil_mode True: a 3-wide axis pooled by 2 with stride 2 gives 2 windows, not 1
    assert gluon.nn.MaxPool3D(2, 2, 0, True)(sg.nd.ones((1, 1, 3, 3, 3))).shape == \
        (1, 1, 2, 2, 2)
    # output_padding 1: (2 - 1) * 2 - 2 * 1 + 3 + 1 = 4 per spatial axis
    deconv = gluon.nn.Conv2DTranspose(1, 3, 2, 1, 1, in_channels=1)
    deconv.initialize()
    assert deconv(sg.nd.ones((1, 1, 2, 2))).shape == (1, 1, 4, 4)
