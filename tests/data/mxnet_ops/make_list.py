"""Write MXNet 1.9.1's public operator list (``mxnet_ops.txt`` beside this script).

Run under an environment with MXNet 1.9.1 installed::

    /tmp/mxvenv/bin/python tests/data/mxnet_ops/make_list.py

An op is public when MXNet's own routing (``mxnet.base._init_op_module``) makes it reachable as
``mx.nd.X``/``mx.sym.X`` or in the ``contrib``, ``linalg``, ``random`` or ``image`` submodules;
numpy (``_np*``), sparse and internal (``_``-prefixed, ``_random_`` samplers included) ops are
left out. Each line holds the registered name then the spelling users call, tab-separated:
``_contrib_fft	contrib.fft``.
"""
from __future__ import annotations

import ctypes
import os

import mxnet as mx
from mxnet import base

SUBMODULES = {"_contrib_": "contrib.", "_linalg_": "linalg.", "_image_": "image.",
              "_random_": "random."}


def registered_names() -> list[str]:
    """Every name MXNet's C API lists, aliases included."""
    size, plist = ctypes.c_uint(), ctypes.POINTER(ctypes.c_char_p)()
    base.check_call(base._LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    return sorted(base.py_str(plist[i]) for i in range(size.value))


def public_spelling(name: str) -> str | None:
    """``name`` as users reach it, or None for numpy, sparse and internal ops (MXNet's rule)."""
    if base._is_np_op(name):
        return None
    prefix = base._get_op_name_prefix(name)
    if prefix == "_random_" and not name.endswith("_like"):
        return None  # routed to _internal: users call the random.* wrappers of the samplers
    if prefix in SUBMODULES:
        return SUBMODULES[prefix] + name[len(prefix):]
    if prefix or name.startswith("_"):
        return None
    return name


def main() -> None:
    assert mx.__version__ == "1.9.1", mx.__version__
    rows = [(n, public_spelling(n)) for n in registered_names()]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxnet_ops.txt")
    with open(out, "w") as f:
        f.write(f"# MXNet {mx.__version__} public operators: registered name, spelling "
                f"(written by make_list.py)\n")
        for name, spelling in rows:
            if spelling is not None:
                f.write(f"{name}\t{spelling}\n")


if __name__ == "__main__":
    main()
