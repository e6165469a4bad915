"""MXNet 1.9.1's legacy operator spellings, as aliases of today's ops.

Checkpoints written by MXNet before 1.0 (``-symbol.json`` files of 2016-era model zoos) name
ops ``_Plus``, ``_MulScalar``, ``Convolution_v1``...; MXNet 1.9.1 still registers these as
aliases (``add_alias`` in ``src/operator``), so they load there, and here they resolve to the
op MXNet maps them to. A graph only ever holds the canonical name (``registry.alias``).
``Convolution_v1`` and ``Pooling_v1`` are separate legacy ops in MXNet whose parameters are a
subset of today's, with the same defaults and results: aliases here, as ``BatchNorm_v1`` is.

Example::

    sg.sym.load_json('{"nodes": [... {"op": "_Plus", ...}], ...}')  # an elemwise_add node
"""
from __future__ import annotations

from ...core.registry import alias, has_op

# legacy spelling -> op MXNet 1.9.1 maps it to (its registered aliases, sparse/numpy ones aside)
LEGACY: dict[str, str] = {
    "_Plus": "elemwise_add", "_plus": "elemwise_add", "_add": "elemwise_add",
    "_Minus": "elemwise_sub", "_minus": "elemwise_sub", "_sub": "elemwise_sub",
    "_Mul": "elemwise_mul", "_mul": "elemwise_mul",
    "_Div": "elemwise_div", "_div": "elemwise_div",
    "_PlusScalar": "_plus_scalar", "_MinusScalar": "_minus_scalar",
    "_RMinusScalar": "_rminus_scalar", "_MulScalar": "_mul_scalar",
    "_DivScalar": "_div_scalar", "_RDivScalar": "_rdiv_scalar",
    "_Mod": "_mod", "_ModScalar": "_mod_scalar", "_RModScalar": "_rmod_scalar",
    "_Power": "_power", "_PowerScalar": "_power_scalar", "_RPowerScalar": "_rpower_scalar",
    "_Maximum": "_maximum", "_MaximumScalar": "_maximum_scalar",
    "_Minimum": "_minimum", "_MinimumScalar": "_minimum_scalar",
    "_Hypot": "_hypot", "_HypotScalar": "_hypot_scalar",
    "_Equal": "_equal", "_EqualScalar": "_equal_scalar",
    "_Not_Equal": "_not_equal", "_NotEqualScalar": "_not_equal_scalar",
    "_Greater": "_greater", "_GreaterScalar": "_greater_scalar",
    "_Greater_Equal": "_greater_equal", "_GreaterEqualScalar": "_greater_equal_scalar",
    "_Lesser": "_lesser", "_LesserScalar": "_lesser_scalar",
    "_Lesser_Equal": "_lesser_equal", "_LesserEqualScalar": "_lesser_equal_scalar",
    "_Logical_And": "_logical_and", "_LogicalAndScalar": "_logical_and_scalar",
    "_Logical_Or": "_logical_or", "_LogicalOrScalar": "_logical_or_scalar",
    "_Logical_Xor": "_logical_xor", "_LogicalXorScalar": "_logical_xor_scalar",
    "_crop_assign": "_slice_assign", "_crop_assign_scalar": "_slice_assign_scalar",
    "_contrib_box_non_maximum_suppression": "_contrib_box_nms",
    "Convolution_v1": "Convolution", "Pooling_v1": "Pooling",
}

# An alias of an op another package has not registered yet would break the front ends' tables:
# this module is imported last, and spellings of absent ops wait until their op exists.
for _old, _new in LEGACY.items():
    if has_op(_new) and not has_op(_old):
        alias(_old, _new)
