"""An input passed as None by name is absent, as in MXNet's generated op functions
(``SequenceReverse(data=x, sequence_length=None)``); a None attribute is still checked."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError


def test_none_input_keyword_is_dropped() -> None:
    x = np.arange(6.0).reshape(3, 2, 1)
    rev = sg.sym.SequenceReverse(data=sg.sym.var("seq"), sequence_length=None,
                                 use_sequence_length=False)
    assert rev.list_arguments() == ["seq"]
    out = rev.bind(sg.cpu(), {"seq": sg.nd.array(x)}).forward()[0].asnumpy()
    np.testing.assert_array_equal(out, x[::-1])
    with pytest.raises(AttrError, match="no_such_attr"):
        sg.sym.SequenceReverse(data=sg.sym.var("seq"), no_such_attr=1)
