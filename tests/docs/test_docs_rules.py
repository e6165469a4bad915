"""The documentation states the project's facts, not the history of how they were reached: no
"issue 14", "session 7", numbered rounds, branch names or "main at <commit>" in docs/ or the
README (the same rule tests/test_source_rules.py applies to code)."""
from __future__ import annotations

import re
from pathlib import Path

from tests.docs.pages import DOCS, ROOT

HISTORY = re.compile(
    r"(?<!-)\b(issue|session|round)s? #?\d+"       # issue 14, session 7 (not --rounds 5)
    r"|\b(first|second|third|fourth|fifth|last|this|that) (round|session)\b"
    r"|\(branch [\w-]+\)|\bbranch `[\w-]+`"        # (branch parity3), branch `bind5`
    r"|\bmain (at|after|before) "                  # main at `a18cf9f`, main after merging
    r"|\bbefore this (change|branch|round|session)\b",
    re.IGNORECASE)
GENERATED = ("_build", "ops")


def doc_files() -> list[Path]:
    """Hand-written pages: docs/ (without generated folders) and the README."""
    files = [p for p in DOCS.rglob("*") if p.suffix in (".md", ".rst")
             and not set(p.relative_to(DOCS).parts[:1]) & set(GENERATED)]
    return sorted(files) + [ROOT / "README.md"]


def history_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line that tells history."""
    return [(k, ln) for k, ln in enumerate(text.splitlines(), 1) if HISTORY.search(ln)]


def test_the_pattern_catches_history_and_spares_facts() -> None:
    told = ["measured in session 7", "(issue 14)", "## After this round (branch parity3)",
            "the third round added LRN", "main at `acbd205` measured 67", "branch `bind5`"]
    facts = ["a JSON round trip keeps attrs", "the generated branch is kept when faster",
             "rounds to nearest", "see the issue tracker",
             "cpu_step.py --rounds 5 --repeats 7"]
    assert [t for t in told if not HISTORY.search(t)] == []
    assert [f for f in facts if HISTORY.search(f)] == []


def test_no_history_in_docs() -> None:
    found = [f"{path.relative_to(ROOT)}:{k}: {line.strip()}"
             for path in doc_files() for k, line in history_lines(path.read_text())]
    assert found == [], "state what is, not how it came to be:\n" + "\n".join(found)


FILE_PATH = re.compile(r"`((?:symgraph|tests|benchmarks)/[\w/.]+\.py)`")


def test_the_file_paths_the_docs_name_exist() -> None:
    """A page that names a source file by its path names one that is there (files move between
    the layer packages; a reader following a stale path finds nothing)."""
    stale = [(p.name, m) for p in doc_files() for m in FILE_PATH.findall(p.read_text())
             if not (ROOT / m).is_file()]
    assert stale == []
    assert FILE_PATH.findall("see `symgraph/training/module.py`") == ["symgraph/training/module.py"]
