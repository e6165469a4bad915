"""Checks MXNet 1.9.1's ``Block`` makes on its attributes: an attribute holding a Block or a
Parameter keeps that type (TypeError otherwise; None, which MXNet refuses, clears it), and
``collect_params`` warns about Blocks held in a plain list, tuple or dict, which are not
registered as children (their parameters would be left out). Also how a layer's op error
names its node, and the check of ``collect_params``' pattern."""
from __future__ import annotations

import re
import warnings
from typing import Any, Optional

from ..core.base import AttrError, SymgraphError
from .parameter import Parameter


def check_attr_type(block: Any, name: str, value: Any, block_type: type) -> None:
    """TypeError when ``block.<name>``, now a Block (``block_type``, passed in by the module
    that defines it) or Parameter, would become another type.

    Example: ``b.child = nn.Dense(2)`` then ``b.child = (2,)`` raises TypeError."""
    existing = block.__dict__.get(name)
    if value is None:  # (clearing the attribute, e.g. a layer's activation, is allowed)
        return
    if isinstance(existing, (block_type, Parameter)) and not isinstance(value, type(existing)):
        raise TypeError(f"{type(block).__name__}.{name}: changing the attribute's type from "
                        f"{type(existing).__name__} to {type(value).__name__} is not allowed")


def _holds_unregistered(data: Any, children: set, block_type: type) -> bool:
    if isinstance(data, (list, tuple)):
        return any(_holds_unregistered(v, children, block_type) for v in data)
    if isinstance(data, dict):
        return any(_holds_unregistered(v, children, block_type) for v in data.values())
    return isinstance(data, block_type) and id(data) not in children


def warn_unregistered_containers(block: Any, block_type: type) -> None:
    """Warn for each attribute of ``block`` that is a container holding Blocks
    (``block_type``) that are not its registered children."""
    children = {id(c) for c in block._children.values()}
    for key, value in block.__dict__.items():
        if key.startswith("__") or key == "_children" or \
                not isinstance(value, (list, tuple, dict)):
            continue
        if _holds_unregistered(value, children, block_type):
            warnings.warn(f'"{type(block).__name__}.{key}" is an unregistered container with '
                          f"Blocks: Blocks inside a list, tuple or dict are not registered "
                          f"automatically; register them with register_child() or use "
                          f"nn.Sequential/nn.HybridSequential", stacklevel=3)


def named_error(exc: SymgraphError, prefix: str) -> SymgraphError:
    """An op call's error with the node named as the traced graph names it: a layer calls its
    op ``name='fwd'``, which an imperative call keeps bare (``fwd`` -> ``dense0_fwd``)."""
    msg = str(exc)
    if msg.startswith("fwd ("):
        try:
            return type(exc)(prefix + msg)
        except TypeError:  # an error type with another signature: keep it as it is
            return exc
    return exc


def check_regex(select: Optional[str]) -> None:
    """AttrError naming the pattern when ``select`` is not a regular expression."""
    if select is None:
        return
    try:
        re.compile(select)
    except re.error as exc:
        raise AttrError(f"collect_params: select {select!r} is not a regular expression "
                        f"({exc})") from None
