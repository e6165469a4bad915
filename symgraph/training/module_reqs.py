"""The gradient requests of a Module's bind, from MXNet's forms of ``grad_req``."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..core.base import BindError


def module_grad_reqs(arg_names: Sequence[str], param_names: Sequence[str],
                     fixed: Sequence[str], data_names: Sequence[str], for_training: bool,
                     inputs_need_grad: bool, grad_req: Any) -> dict[str, str]:
    """One request per argument, as MXNet 1.9.1's executor group makes them. A string applies
    to the trained parameters (and to the data with ``inputs_need_grad``); a list gives one per
    argument; a dict overrides the defaults (``write`` for those, ``null`` for the rest).
    Nothing is requested without ``for_training``.

    >>> module_grad_reqs(["data", "w", "label"], ["w"], [], ["data"], True, True,
    ...                  {"data": "add"})
    {'data': 'add', 'w': 'write', 'label': 'null'}
    """
    reqs = {n: "null" for n in arg_names}
    if not for_training:
        return reqs
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise BindError(f"bind: grad_req has {len(grad_req)} entries for the "
                            f"{len(arg_names)} arguments {list(arg_names)}")
        return dict(zip(arg_names, grad_req))
    default = "write" if isinstance(grad_req, Mapping) else grad_req
    reqs.update({n: default for n in param_names if n not in fixed})
    if inputs_need_grad:
        reqs.update({n: default for n in data_names})
    if isinstance(grad_req, Mapping):
        reqs.update(grad_req)
    return reqs
