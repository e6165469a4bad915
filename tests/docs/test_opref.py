"""The operator reference generator (docs/_ext/opref.py) on its own, without Sphinx: what an op
page says is read from the registry and the op's help text."""
from __future__ import annotations

import sys

import pytest

import symgraph as sg
from symgraph.runtime.cuda import lowering  # noqa: F401  (fills the family table)
from symgraph.runtime.cuda.actions import lowering_dtypes, lowering_of
from symgraph.core.registry import all_ops
from tests.docs.pages import DOCS

pytest.importorskip("docutils", reason="the docs extra (pip install -e '.[docs]') builds pages")
sys.path.insert(0, str(DOCS / "_ext"))
import opref  # noqa: E402


def test_example_section_becomes_a_code_block() -> None:
    doc = """Adds.

    Parameters
    ----------
    x : Symbol

    Examples
    --------
    >>> sg.nd.relu(sg.nd.array([-1, 2])).asnumpy()
    array([0., 2.], dtype=float32)
    """
    block = opref.example_block(doc)
    assert block[:2] == ["Example", "-------"] and ".. code-block:: pycon" in block
    assert "   >>> sg.nd.relu(sg.nd.array([-1, 2])).asnumpy()" in block
    assert opref.example_block("No example here.\n\nParameters\n----------\nx : int\n") == []


def test_escaping_leaves_no_markup() -> None:
    assert opref.esc("NAME_data *args `x` |a|") == r"NAME\_data \*args \`x\` \|a\|"
    assert opref.literal("a``b") == "``a' 'b``"


@pytest.mark.parametrize("name", ["Convolution", "relu", "SoftmaxOutput", "Concat"])
def test_page_lists_every_attribute_with_its_default(name: str) -> None:
    op = all_ops()[name]
    page = opref.op_page(name, op, [])
    for attr, param in op.params.items():
        if attr.isidentifier():
            assert f"``{attr}``" in page, attr
    assert f"symgraph.sym.{name}(" in page


def test_gpu_dtypes_come_from_the_lowering_family() -> None:
    """Each page names exactly the dtypes its lowering data lists: byte-moving families run any
    dtype, float families the three floats, some index families integers as well."""
    seen = set()
    for name, op in sorted(all_ops().items()):
        fam, params = lowering_of(op)
        dts = lowering_dtypes(fam, params)
        text = "\n".join(opref.gpu_lines(op))
        assert f"``{fam}``" in text, name
        if fam == "host":  # no kernel, so no device dtypes to name
            assert "no device kernel" in text, name
        elif dts is None:
            assert "any dtype" in text, name
        else:
            for d in ("float32", "float16", "bfloat16", "int32", "int64", "uint8", "int8"):
                assert (f"``{d}``" in text) == (d in dts), (name, d)
        seen.add(None if dts is None else "int32" in dts)
    assert seen == {None, True, False}  # all three kinds occur


def test_front_end_pages_leave_ops_to_the_operator_reference() -> None:
    classes, funcs = opref.front_end_names("symgraph.frontend.symbol")
    assert "Symbol" in classes and "var" in funcs and "Group" in funcs
    assert "Convolution" not in funcs and "FullyConnected" not in funcs
    assert callable(sg.sym.Convolution)
