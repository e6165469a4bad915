"""Sphinx configuration of symgraph's documentation site.

Build it with ``python3 -m sphinx -W -b html docs docs/_build/html`` (the ``docs`` extra installs
Sphinx, MyST and the Furo theme). The operator reference is generated from the op registry by
``_ext/opref.py`` each build; the API reference comes from the docstrings through autodoc.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the checkout's symgraph, not an installed copy

project = "symgraph"
author = "the symgraph authors"
copyright = "the symgraph authors, Apache-2.0"
release = version = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "opref",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# numpy-style docstrings throughout; keep the signatures' types (the op functions carry them)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
# Docstrings cross-reference names in prose (``Symbol``, ``NDArray``); unresolved ones are
# left as plain text rather than warnings.
nitpicky = False

html_theme = "furo"
html_title = "symgraph"
html_static_path = ["_static"]
html_css_files = ["symgraph.css"]
html_theme_options = {"sidebar_hide_name": False, "navigation_with_keys": True}
pygments_style = "friendly"
# The sidebar is built for every page: listing each documented class and function in it (Sphinx's
# default) made it, and the build, several times larger.
toc_object_entries = False

# `type` in an annotation is Python's builtin. Sphinx's python domain would look for a documented
# `*.type` instead and link it to one of the kvstores' `type` properties (ambiguously: a warning).
# Spelled `builtins.type`, it names no documented object and stays plain text.
_BUILTIN_TYPE = re.compile(r"(?<=: )type\b|(?<=-> )type\b|(?<=\[)type\b|(?<=\| )type\b"
                           r"|(?<=, )type(?=\])")


def _builtin_type(app, what, name, obj, options, signature, return_annotation):
    fix = (lambda s: _BUILTIN_TYPE.sub("builtins.type", s) if s else s)
    if return_annotation == "type":
        return_annotation = "builtins.type"
    return fix(signature), fix(return_annotation)


def setup(app):
    app.connect("autodoc-process-signature", _builtin_type)
