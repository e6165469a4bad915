"""The site builds with warnings as errors, and holds what a reader looks for: every public op
has a page with its attributes, the API reference documents the classes, tutorials are there."""
from __future__ import annotations

import re
from pathlib import Path

import symgraph  # noqa: F401  (registers the ops)
from symgraph.core.registry import all_ops


def _text(page: Path) -> str:
    return re.sub(r"<[^>]+>", " ", page.read_text())


def test_build_is_warning_free(built_site) -> None:
    html, log = built_site
    assert "WARNING" not in log and (html / "index.html").exists()


def test_every_op_has_a_page(built_site) -> None:
    html, _ = built_site
    missing = [n for n in all_ops()
               if not (html / "ops" / f"op_{re.sub(r'[^A-Za-z0-9_]', '_', n)}.html").exists()]
    assert missing == []
    index = (html / "ops" / "index.html").read_text()
    assert "op_Convolution.html" in index and "op_softmax.html" in index


def test_op_page_lists_attributes_with_types_and_defaults(built_site) -> None:
    text = " ".join(_text(built_site[0] / "ops" / "op_Convolution.html").split())
    for fact in ("num_filter", "kernel", "tuple[int, ...]", "required", "num_group", "1024",
                 "Lowering family", "float16"):
        assert fact in text, fact
    assert "Inputs" in text and "Differentiable" in text


def test_api_reference_documents_the_classes(built_site) -> None:
    html, _ = built_site
    for page, name in [("module", "Module"), ("gluon", "HybridBlock"), ("symbol", "Symbol"),
                       ("ndarray", "NDArray"), ("optimizer", "Adam"), ("metric", "Accuracy"),
                       ("io", "NDArrayIter")]:
        text = _text(html / "api" / f"{page}.html")
        assert re.search(rf"class\s+symgraph\.[\w.]*\s*{name}\b", text), (page, name)


def test_tutorials_and_contributor_notes_are_built(built_site) -> None:
    html, _ = built_site
    pages = ["getting_started", "tutorials/gluon", "tutorials/migrating", "performance",
             "architecture"]
    assert [p for p in pages if not (html / f"{p}.html").exists()] == []
