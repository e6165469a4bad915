"""Passes ask ops through ``OpDef`` data instead of naming them.

A string literal in a pass that is a registered op name (outside docstrings) is a pass deciding
by name what an op is. Each pass may name only the ops it emits; ``simplify``'s rule table is
the one documented list of op names (its rules are per op by nature).
"""
from __future__ import annotations

import ast
from pathlib import Path

import symgraph  # noqa: F401  (registers the ops)
from symgraph.core.registry import has_op

ROOT = Path(symgraph.__file__).parent
PASSES = sorted((ROOT / "compiler" / "passes").glob("*.py")) + [
    ROOT / "runtime" / "cuda" / "fuse_conv_pool.py"]
EMITS = {  # file -> the ops it makes or rewrites by definition (transposes for fold_casts)
    "absorb_casts.py": {"_fused"},
    "batch_casts.py": {"_transpose_cast", "_multi_transpose_cast"},
    "channel_last.py": {"transpose"},
    "constant_fold.py": {"_constant"},
    "fold_heads.py": {"batch_dot", "transpose", "_mul_scalar", "softmax"},  # the attention it folds
    "fold_casts.py": {"transpose", "_transpose_cast"},
    "fuse_bn_epilogue.py": {"_fused"},
    "fuse_conv_pool.py": {"_conv_act_pool"},
    "fuse_elementwise.py": {"_fused"},
}
RULE_TABLES = {"simplify.py"}


def _literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs}


def test_passes_name_only_the_ops_they_emit() -> None:
    named = {}
    for path in PASSES:
        if path.name in RULE_TABLES or path.name == "__init__.py":
            continue
        ops = {s for s in _literals(path) if has_op(s)} - EMITS.get(path.name, set())
        if ops:
            named[path.name] = sorted(ops)
    assert not named, f"passes naming ops (use OpDef data instead): {named}"


def test_the_scan_sees_an_op_name(tmp_path: Path) -> None:
    f = tmp_path / "p.py"
    f.write_text('"""Convolution in a docstring is fine."""\nX = node.op == "Convolution"\n')
    assert {s for s in _literals(f) if has_op(s)} == {"Convolution"}
