"""Every public op function (``sg.sym``/``sg.nd`` and their ``contrib``/``linalg`` namespaces),
every function of their ``random``/``image`` namespaces and every public Gluon class or function
carries an Examples section, and every example runs under doctest with the output it shows.

Examples assume ``import symgraph as sg`` and ``import numpy as np``; numpy prints with
``precision=4, suppress=True`` (set here, restored after) so float output is stable. Ops share
their example with their aliases and a model family shares one, so each distinct example
runs once.
"""
from __future__ import annotations

import doctest
import inspect
from types import ModuleType
from typing import Any, Iterator

import numpy as np
import pytest

import symgraph as sg
from symgraph import gluon
from symgraph.core import registry

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _op_functions() -> Iterator[tuple[str, Any]]:
    """(public spelling, function) of every registry op users reach, in both front ends."""
    known = set(registry.all_ops()) | set(registry.all_aliases())
    for front, label in ((sg.sym, "sym"), (sg.nd, "nd")):
        for name in front.__all__:
            if name in known and not name.startswith("_"):
                yield f"{label}.{name}", getattr(front, name)
        for sub in ("contrib", "linalg"):
            for name, fn in vars(getattr(front, sub)).items():
                if f"_{sub}_{name}" in known or name in known:
                    yield f"{label}.{sub}.{name}", fn


def _namespace_functions() -> Iterator[tuple[str, Any]]:
    """(public spelling, function) of the ``random`` and ``image`` namespaces' functions."""
    for front, label in ((sg.sym, "sym"), (sg.nd, "nd")):
        for sub in ("random", "image"):
            for name, fn in vars(getattr(front, sub)).items():
                if not name.startswith("_") and inspect.isfunction(fn) \
                        and fn.__module__.startswith("symgraph"):
                    yield f"{label}.{sub}.{name}", fn


OP_FUNCTIONS = dict(_op_functions())
NAMESPACE_FUNCTIONS = dict(_namespace_functions())
# ``hint`` spellings (sg.sym.flatten) keep the canonical op's name in __name__
CANONICAL = sorted({registry.canonical(fn.__name__) for fn in OP_FUNCTIONS.values()})

GLUON_MODULES: tuple[ModuleType, ...] = (
    gluon, gluon.nn, gluon.rnn, gluon.loss, gluon.data, gluon.data.vision,
    gluon.data.vision.transforms, gluon.contrib.nn, gluon.contrib.cnn, gluon.contrib.rnn,
    gluon.contrib.data,
    gluon.contrib.estimator, gluon.model_zoo.vision)


def _gluon_objects() -> dict[str, Any]:
    """Public classes and functions defined in symgraph.gluon, by their first public path."""
    found: dict[int, tuple[str, Any]] = {}
    for mod in GLUON_MODULES:
        for name, obj in vars(mod).items():
            if (name.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj))
                    or not getattr(obj, "__module__", "").startswith("symgraph.gluon")
                    or (inspect.isclass(obj) and issubclass(obj, BaseException))):
                continue
            found.setdefault(id(obj), (f"{mod.__name__}.{name}", obj))
    return dict(found.values())


GLUON = _gluon_objects()


@pytest.fixture
def printoptions() -> Iterator[None]:
    old = np.get_printoptions()
    np.set_printoptions(precision=4, suppress=True)
    try:
        yield
    finally:
        np.set_printoptions(**old)


def _run_examples(doc: str, name: str) -> None:
    test = doctest.DocTestParser().get_doctest(
        doc, {"sg": sg, "np": np}, name, None, 0)
    assert test.examples, f"{name}: no doctest lines (>>>) in its docstring"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def _examples_section(doc: str | None) -> str:
    """The text after the docstring's ``Examples`` heading ('' when there is none)."""
    head = "Examples\n"
    text = inspect.cleandoc(doc or "")
    i = text.find(head)
    return text[i + len(head):] if i >= 0 and ">>>" in text[i:] else ""


def test_every_public_op_function_has_an_example() -> None:
    missing = sorted(n for n, fn in OP_FUNCTIONS.items() if not _examples_section(fn.__doc__))
    assert not missing, f"{len(missing)} op functions without an Examples section: {missing}"


@pytest.mark.parametrize("op", CANONICAL)
def test_op_example_runs(op: str, printoptions: None) -> None:
    fn = getattr(sg.nd._internal, op)
    _run_examples(_examples_section(fn.__doc__), f"sg.nd.{op}")


def test_every_random_and_image_function_has_an_example() -> None:
    missing = sorted(n for n, fn in NAMESPACE_FUNCTIONS.items()
                     if not _examples_section(fn.__doc__))
    assert not missing, f"{len(missing)} functions without an Examples section: {missing}"


NAMESPACE_EXAMPLES = {text: name for name, fn in sorted(NAMESPACE_FUNCTIONS.items())
                      for text in [_examples_section(fn.__doc__)] if text}


@pytest.mark.parametrize("text", sorted(NAMESPACE_EXAMPLES), ids=lambda t: NAMESPACE_EXAMPLES[t])
def test_random_and_image_example_runs(text: str, printoptions: None) -> None:
    _run_examples(text, NAMESPACE_EXAMPLES[text])


def test_every_gluon_name_has_an_example() -> None:
    missing = sorted(n for n, obj in GLUON.items() if not _examples_section(obj.__doc__))
    assert not missing, f"{len(missing)} Gluon names without an Examples section: {missing}"


def _distinct_gluon_examples() -> dict[str, str]:
    """Example text by the first name showing it (a model family shares one example)."""
    first: dict[str, str] = {}
    for name in sorted(GLUON):
        first.setdefault(_examples_section(GLUON[name].__doc__), name)
    first.pop("", None)
    return {name: text for text, name in first.items()}


GLUON_EXAMPLES = _distinct_gluon_examples()


@pytest.mark.parametrize("name", sorted(GLUON_EXAMPLES))
def test_gluon_example_runs(name: str, printoptions: None) -> None:
    _run_examples(GLUON_EXAMPLES[name], name)


def test_a_wrong_example_fails() -> None:
    """The checker is not vacuous: a wrong expected value is reported."""
    with pytest.raises(AssertionError, match="Expected"):
        _run_examples(">>> sg.nd.sqrt(sg.nd.array([4.0]))\n[3.]\n<NDArray 1 @cpu(0)>\n", "bad")
