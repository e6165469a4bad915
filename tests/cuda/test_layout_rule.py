"""The rule for ``symgraph/cuda/`` a newcomer can see (docs/architecture.md, "The rule for cuda/"),
checked on the source with ``ast``:

* ``kernels_<x>.py`` hold C templates only: no lowering family, no import of ``actions``;
* ``lowering_<x>.py`` hold lowering functions only: no C (no ``__global__``/``__device__``
  text, no call of the kernel frames), and they never import ``lowering``;
* names pair: every ``kernels_<x>`` has its ``lowering_<x>``, which imports it;
* the grid-stride loop is written once (``codegen.GRID_STRIDE_LOOP``);
* ``lowering.py`` imports every ``lowering_*`` module, so the family table is full.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

CUDA = Path(__file__).resolve().parents[2] / "symgraph" / "runtime" / "cuda"
KERNELS = sorted(CUDA.glob("kernels_*.py"))
LOWERINGS = sorted(CUDA.glob("lowering_*.py"))
C_MARKS = ("__global__", "__device__", "blockIdx", "threadIdx")
FRAMES = {"kernel_source", "grid_stride_kernel", "Rendered"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _imports(tree: ast.Module) -> set[str]:
    """Modules of ``symgraph.cuda`` a file imports (``from .x import`` / ``from . import x``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module)
            else:
                out |= {a.name for a in node.names}
    return out


def _stem(path: Path) -> str:
    return path.stem.split("_", 1)[1]


def test_there_is_something_to_check() -> None:
    assert len(KERNELS) >= 8 and len(LOWERINGS) >= 12


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_kernels_modules_hold_templates_only(path: Path) -> None:
    tree = _tree(path)
    assert "actions" not in _imports(tree), f"{path.name} imports actions"
    families = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                for d in n.decorator_list if isinstance(d, ast.Call)
                and getattr(d.func, "id", "") == "family"]
    assert not families, f"{path.name} registers lowering families {families}"
    assert (CUDA / f"lowering_{_stem(path)}.py").exists(), f"{path.name} has no lowering pair"
    assert path.stem in _imports(_tree(CUDA / f"lowering_{_stem(path)}.py")), \
        f"lowering_{_stem(path)} does not render {path.stem}'s templates"


@pytest.mark.parametrize("path", LOWERINGS, ids=lambda p: p.stem)
def test_lowering_modules_write_no_c(path: Path) -> None:
    tree = _tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            marks = [m for m in C_MARKS if m in node.value]
            assert not marks, f"{path.name}:{node.lineno} writes C ({marks})"
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            assert name not in FRAMES, f"{path.name}:{node.lineno} builds a kernel ({name})"
    assert "lowering" not in _imports(tree), f"{path.name} imports lowering.py"


def test_grid_stride_loop_is_written_once() -> None:
    loop = "i += (long long)blockDim.x * gridDim.x"
    holders = [p.name for p in sorted(CUDA.glob("*.py")) if loop in p.read_text()]
    assert holders == ["codegen.py"], holders


def test_lowering_imports_every_family_module() -> None:
    imported = _imports(_tree(CUDA / "lowering.py"))
    assert {p.stem for p in LOWERINGS} <= imported, {p.stem for p in LOWERINGS} - imported
