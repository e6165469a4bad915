"""sg.operator.get_all_registered_operators / get_operator_arguments against MXNet 1.9.1."""
from __future__ import annotations

import pytest

import symgraph as sg
from symgraph.core.base import AttrError

from .mxnet_live import mxnet_json

OPS = ["Activation", "FullyConnected", "Convolution", "Dropout"]


def test_activation_as_mxnet_describes_it() -> None:
    args = sg.operator.get_operator_arguments("Activation")
    assert isinstance(args, sg.operator.OperatorArguments) and args.narg == 2
    assert args.types == ["NDArray-or-Symbol",
                          "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]
    ops = sg.operator.get_all_registered_operators()
    assert "Activation" in ops and "flatten" in ops  # an alias too
    with pytest.raises(AttrError, match="no operator 'NoSuchOp'"):
        sg.operator.get_operator_arguments("NoSuchOp")


@pytest.mark.mxnet
def test_argument_names_match_mxnet() -> None:
    script = ("import json, sys\nfrom mxnet.operator import get_operator_arguments as g\n"
              "print(json.dumps({k: g(k).names for k in json.load(sys.stdin)}))")
    want = mxnet_json(script, OPS)
    got = {k: sg.operator.get_operator_arguments(k).names for k in OPS}
    assert got == want
