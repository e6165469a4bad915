"""Signatures and docstrings of op functions, generated from the registry (as MXNet does).

:func:`document` gives a front-end function made from an :class:`~symgraph.core.registry.OpDef` its
``__signature__`` and ``__doc__``: every input, then every attribute with its type, default,
choices and description; ``help(sg.sym.Convolution)`` and ``inspect.signature`` show them.
``sg.sym``'s functions are documented by ``symbol.make_op_function`` and ``sg.nd``'s by
``nd_methods.make_nd_function`` (``front_end="nd"``: NDArray types, ``out=``). The Examples
section is the op's entry of :data:`symgraph.compiler.ops.examples.EXAMPLES` (doctest text over ``sg.nd``,
checked by tests/test_docstring_examples.py). A description comes from the
parameter's own ``Param.doc`` when the op gives one, else from :data:`PARAM_DOCS` (MXNet's
parameter names mean the same thing across ops), with :data:`OP_PARAM_DOCS` for the few names
whose meaning depends on the op. ``symgraph/interop/stubs.py`` writes ``.pyi`` stubs from the same
signatures.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Literal, Optional, Union

from ..core.attrs import REQUIRED, Param
from ..core.probe import probe_input_names
from ..runtime.ndarray import NDArray
from ..compiler.ops.examples import EXAMPLES
from ..core.registry import OpDef

P = inspect.Parameter

# Python types shown for each attribute kind of attrs.PARSERS.
KIND_TYPES: dict[str, Any] = {
    "int": int, "float": float, "bool": bool, "str": str, "text": str, "dtype": str,
    "shape": tuple[int, ...], "index_tuple": tuple[Optional[int], ...],
    "int?": Optional[int], "float?": Optional[float], "str?": Optional[str],
    "axis": Union[int, tuple[int, ...], None], "any": Any,
    "shapes": tuple[tuple[int, ...], ...], "dtypes": tuple[str, ...], "subgraph": Any,
}

PARAM_DOCS: dict[str, str] = {
    "dim1": "The first of the two axes to swap.",
    "dim2": "The second of the two axes to swap.",
    "is_ascend": "Sort in ascending order (False: descending).",
    "k": "How many of the largest (or, with is_ascend, smallest) elements to keep.",
    "ret_typ": "What to return: 'value', 'indices', 'both' or 'mask'.",
    "size": "The new size of each broadcast axis (those of size 1 in the input).",
    "lhs_begin": "First axis of the input's shape to replace (None: 0).",
    "lhs_end": "End (exclusive) of the input's axes to replace (None: all).",
    "rhs_begin": "First axis of the other input's shape to take (None: 0).",
    "rhs_end": "End (exclusive) of the other input's axes to take (None: all).",
    "kernel": "Window size per spatial axis: (w,), (h, w) or (d, h, w).",
    "stride": "Step of the window per spatial axis (default 1 on each).",
    "dilate": "Spacing between kernel elements per spatial axis (default 1 on each).",
    "pad": "Zero padding added on both sides of each spatial axis (default 0).",
    "num_filter": "Number of output channels.",
    "num_group": "Number of groups: channels are split into this many independent convolutions.",
    "workspace": "Scratch memory limit in MB (accepted for MXNet compatibility; unused).",
    "no_bias": "Leave out the bias input.",
    "cudnn_tune": "cuDNN algorithm selection (accepted for MXNet compatibility; unused).",
    "cudnn_off": "Do not use cuDNN for this layer.",
    "layout": "Data layout; None is the default, channels on axis 1 (NCW, NCHW, NCDHW).",
    "adj": "Extra rows/columns added to one side of the output (output padding).",
    "target_shape": "Output spatial shape; the padding is derived from it (overrides pad/adj).",
    "num_hidden": "Number of output units.",
    "flatten": "Collapse all axes but the first of the data before the product.",
    "act_type": "Activation function.",
    "pool_type": "Pooling reduction.",
    "global_pool": "Pool over the whole spatial extent (kernel is ignored).",
    "pooling_convention": "Output size rounding: 'valid' floors, 'full' ceils.",
    "count_include_pad": "Average pooling counts padded cells in the divisor.",
    "eps": "Added to the variance for numerical stability.",
    "momentum": "Weight of the old moving average in each update.",
    "fix_gamma": "Treat gamma as 1 (and do not learn it).",
    "use_global_stats": "Normalise with the moving statistics in training too.",
    "output_mean_var": "Also output the batch mean and variance.",
    "axis": "Axis (or axes) the operation works along; negative values count from the end.",
    "axes": "Permutation of the axes (default: reversed).",
    "keepdims": "Keep reduced axes with length 1.",
    "exclude": "Reduce over every axis except the given ones.",
    "scalar": "The scalar operand.",
    "a_min": "Lower bound.",
    "a_max": "Upper bound.",
    "dim": "Axis along which the inputs are joined.",
    "num_args": "Number of inputs.",
    "shape": "Target shape; MXNet's codes apply (0 copies a dimension, -1 infers one, -2, -3, "
             "-4 as in MXNet's Reshape).",
    "reverse": "Apply the special codes of shape from right to left.",
    "dtype": "Data type of the result (numpy name such as 'float32').",
    "p": "Probability of zeroing an element.",
    "mode": "Mode of the operation (see choices).",
    "input_dim": "Size of the vocabulary (number of rows of the weight).",
    "output_dim": "Size of each embedding vector.",
    "sparse_grad": "Ask for a row-sparse gradient (accepted; the gradient is dense).",
    "grad_scale": "Factor applied to the gradient.",
    "ignore_label": "Label value whose samples get no gradient (with use_ignore).",
    "use_ignore": "Give no gradient to samples labelled ignore_label.",
    "multi_output": "Softmax over axis 1 at every other position (n, k, d1, ...).",
    "preserve_shape": "Softmax over the last axis, keeping the data's shape.",
    "normalization": "Divide the gradient by nothing, the batch size, or the number of valid "
                     "labels.",
    "out_grad": "Multiply by the head gradient instead of ignoring it.",
    "smooth_alpha": "Label smoothing: weight moved from the true class to the others.",
    "valid_thresh": "Labels below this count as invalid for normalization='valid'.",
    "temperature": "Divide the input by this before the softmax.",
    "slope": "Slope of the negative part (leaky, elu).",
    "lower_bound": "Lower bound of the random slope (rrelu).",
    "upper_bound": "Upper bound of the random slope (rrelu).",
    "transpose_a": "Use the transpose of the first operand.",
    "transpose_b": "Use the transpose of the second operand.",
    "num_outputs": "Number of equal parts to split into.",
    "squeeze_axis": "Drop the split axis when each part has length 1.",
    "begin": "Start index per axis (None: from the start).",
    "end": "Stop index per axis, exclusive (None: to the end).",
    "step": "Step per axis (None: 1).",
    "repeats": "Number of repetitions of each element.",
    "reps": "Number of copies along each axis.",
    "depth": "Number of classes (length of the one-hot axis).",
    "on_value": "Value at the index.",
    "off_value": "Value elsewhere.",
    "ord": "Order of the norm.",
    "pad_width": "Padding before and after each axis, as a flat tuple (b0, a0, b1, a1, ...).",
    "constant_value": "Fill value in constant mode.",
    "thresh": "Labels below this are not counted.",
    "value": "The constant value.",
    "func_type": "'' for a Python custom op, 'aot' for a compiled kernel.",
    "bprop": "Gradient function of an aot kernel, written with sg.sym ops.",
    "out_shape": "Output shape(s) of an aot kernel, or a function of the input shapes.",
    "out_dtype": "Output dtype(s) of an aot kernel, or a function of the input dtypes.",
    # internal ops (fusion, gradients)
    "exprs": "Scalar expression of each output (fusion).",
    "shapes": "Shape of each output (fusion).",
    "members": "Op names of the fused group.",
    "nodes": "Node names of the fused group.",
    "out_members": "Index in members of the member computing each output of the fused group.",
    "in_members": "Index in members of the member reading each input of the fused group.",
    "head": "GEMM-like producer of the fused group, or None.",
    "extra": "(shape, dtype) of each output of the head after its first, output after the "
             "group's (a BatchNorm head's statistics).",
    "num_inputs": "Number of inputs of the fused group.",
    "name": "Kernel name stem.",
    "pool_kernel": "Pooling window of the fused convolution-activation-pooling op.",
    "mae": "Mean absolute error instead of squared error.",
    "mean": "Average the reduced values instead of summing them.",
}

OP_PARAM_DOCS: dict[tuple[str, str], str] = {
    ("Dropout", "mode"): "'training': drop only in training; 'always': in inference too.",
    ("Dropout", "axes"): "Axes along which the same mask is shared.",
    ("SoftmaxActivation", "mode"): "'instance': softmax over all but the batch axis; "
                                   "'channel': over axis 1.",
    ("pad", "mode"): "How padded cells are filled.",
    ("take", "mode"): "How out-of-range indices are treated.",
    ("reverse", "axis"): "Axes to reverse.",
    ("broadcast_to", "shape"): "Target shape (0 keeps the input's dimension).",
    ("MakeLoss", "normalization"): "Divide the gradient by nothing, the batch size, or the "
                                   "number of valid elements.",
}

INPUT_DOCS: dict[str, str] = {
    "data": "Input data.", "weight": "Weight parameter.", "bias": "Bias parameter.",
    "gamma": "Scale parameter.", "beta": "Shift parameter.",
    "moving_mean": "Moving mean (auxiliary state).",
    "moving_var": "Moving variance (auxiliary state).",
    "label": "Label of each sample.", "lhs": "First operand.", "rhs": "Second operand.",
    "indices": "Indices to look up.", "condition": "Where true take x, else y.",
    "x": "Value where the condition holds.", "y": "Value where it does not.",
}


def param_doc(opdef: OpDef, name: str, param: Param) -> str:
    """The description of one attribute ('' when none is known)."""
    return (param.doc or OP_PARAM_DOCS.get((opdef.name, name)) or PARAM_DOCS.get(name, ""))


def param_type(param: Param) -> Any:
    """A Python type for the attribute: ``Literal[...]`` when it has choices."""
    if param.choices:
        return Literal[tuple(param.choices)]
    return KIND_TYPES.get(param.kind, Any)


def type_text(tp: Any) -> str:
    """How a type reads in a docstring or stub (``tuple[int, ...]``, ``Optional[int]``)."""
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def input_names(opdef: OpDef) -> tuple[str, ...]:
    """Input names with default attributes (``bias`` is listed when ``no_bias`` is False)."""
    return probe_input_names(opdef, {})


# The array class of each front end, for annotations. ``symbol.py`` builds on this module and
# adds its Symbol when imported.
ARRAY_CLASSES: dict[str, type] = {"nd": NDArray}


def _array_class(front_end: str) -> type:
    return ARRAY_CLASSES[front_end]


def signature(opdef: OpDef, front_end: str = "sym") -> inspect.Signature:
    """Inputs (positional or keyword, default None; ``*data`` for variadic ops), then
    attributes as keyword-only parameters with their defaults (``sg.nd`` also takes them
    positionally after the arrays), then ``name``/``attr`` (``sg.sym``) or ``out``/``name``
    (``sg.nd``)."""
    arr = _array_class(front_end)
    params: list[P] = []
    if opdef.variadic:
        params.append(P("data", P.VAR_POSITIONAL, annotation=arr))
    else:
        params += [P(n, P.POSITIONAL_OR_KEYWORD, default=None, annotation=Optional[arr])
                   for n in input_names(opdef)]
    own = {"name", "attr"} if front_end == "sym" else {"out", "name"}
    for name, param in opdef.params.items():
        # an attribute named like an input or the front end's own keywords cannot be passed
        if name.isidentifier() and name not in own and name not in {p.name for p in params}:
            default = P.empty if param.default is REQUIRED else param.default
            tp = param_type(param)
            if name == opdef.variadic:  # the number of inputs is counted when not given
                default, tp = None, Optional[tp]
            params.append(P(name, P.KEYWORD_ONLY, default=default, annotation=tp))
    if front_end == "sym":
        params += [P("name", P.KEYWORD_ONLY, default=None, annotation=Optional[str]),
                   P("attr", P.KEYWORD_ONLY, default=None, annotation=Optional[dict])]
    else:
        params += [P("out", P.KEYWORD_ONLY, default=None, annotation=Optional[arr]),
                   P("name", P.KEYWORD_ONLY, default=None, annotation=Optional[str])]
    return inspect.Signature(params, return_annotation=arr)


def _attr_lines(opdef: OpDef) -> list[str]:
    lines = []
    for name, param in opdef.params.items():
        if not name.isidentifier():
            continue
        kind = (("{" + ", ".join(repr(c) for c in param.choices) + "}") if param.choices
                else type_text(param_type(param)))
        dflt = "required" if param.default is REQUIRED else f"default {param.default!r}"
        if name == opdef.variadic:
            dflt = "default: the number of inputs"
        lines += [f"{name} : {kind}, {dflt}", f"    {param_doc(opdef, name, param)}"]
    return lines


def docstring(opdef: OpDef, front_end: str = "sym") -> str:
    """numpy-style docstring: summary, Parameters (inputs, attributes), Returns, Examples."""
    arr = "Symbol" if front_end == "sym" else "NDArray"
    lines = [opdef.doc or f"The {opdef.name} operator.", "", "Parameters", "----------"]
    if opdef.variadic:
        lines += [f"*data : {arr}", f"    The inputs ({opdef.variadic} of them)."]
    else:
        for n in input_names(opdef):
            lines += [f"{n} : {arr}, optional",
                      f"    {INPUT_DOCS.get(n, 'Input ' + repr(n) + '.')} Missing parameter "
                      f"inputs become variables named NAME_{n}." if front_end == "sym"
                      else f"    {INPUT_DOCS.get(n, 'Input ' + repr(n) + '.')}"]
    lines += _attr_lines(opdef)
    if front_end == "sym":
        lines += ["name : str, optional", "    Name of the node (default: op name + counter).",
                  "attr : dict, optional", "    User attributes of the node (__lr_mult__...)."]
    else:
        lines += ["out : NDArray, optional", "    Array to write the result into.",
                  "name : str, optional", "    Name of the recorded node."]
    lines += ["", "Returns", "-------", arr]
    if opdef.name in EXAMPLES:  # the same sg.nd example serves both front ends
        lines += ["", "Examples", "--------", EXAMPLES[opdef.name].strip("\n")]
    return "\n".join(lines)


def document(fn: Callable, opdef: OpDef, front_end: str = "sym") -> Callable:
    """Give ``fn`` the registry's signature and docstring for ``opdef``; returns ``fn``."""
    fn.__signature__ = signature(opdef, front_end)  # type: ignore[attr-defined]
    fn.__doc__ = docstring(opdef, front_end)
    fn.__name__ = fn.__qualname__ = opdef.name
    return fn
