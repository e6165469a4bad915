"""AMP's op lists (MXNet's ``mx.contrib.amp.lists``), restricted to ops symgraph registers.

* narrow (``list_lp16_ops``): GEMM-like ops that gain from float16/bfloat16 tensor cores;
  their float inputs are cast to the target dtype.
* fp32 (``list_fp32_ops``): ops whose accuracy or range needs float32: softmax and losses,
  normalisations but BatchNorm, reductions, exp/log and friends. BatchNorm runs in the dtype
  that reaches it, as in MXNet's lists: on narrow data its gamma, beta and statistics stay
  float32 (its dtype rule), so it needs no cast pair around it.
* widest (``list_widest_type_cast``): ops with several inputs that must agree, run in the
  widest float type among their inputs (``amp_multicast``).
* conditional fp32 (``list_conditional_fp32_ops``): ``(op, parameter, values)``: fp32 only for
  those parameter values (``Activation(act_type='softrelu')``).

Every other op runs in whatever dtype reaches it. Departures from MXNet 1.9.1's float16 lists:
``dot`` and ``batch_dot`` are narrow (MXNet: widest).
"""
from __future__ import annotations

from ...core.base import AttrError
from ...core.registry import all_aliases, all_ops, has_op

_LP16 = ("Convolution", "Deconvolution", "FullyConnected", "dot", "batch_dot", "RNN")
_FP32 = (
    "softmax", "log_softmax", "softmin", "SoftmaxOutput", "SoftmaxActivation",
    "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput", "SVMOutput",
    "MakeLoss", "softmax_cross_entropy", "smooth_l1", "CTCLoss",
    "LayerNorm", "InstanceNorm", "GroupNorm", "L2Normalization", "LRN",
    "sum", "mean", "prod", "nansum", "nanprod", "norm", "moments",
    "exp", "expm1", "log", "log10", "log2", "log1p", "broadcast_power", "square",
    "reciprocal", "rsqrt", "rcbrt", "gamma", "gammaln", "erfinv", "arccos", "arcsin", "cosh",
    "sinh", "tan", "arctanh", "broadcast_hypot", "argsort", "topk", "Custom")
_WIDEST = (
    "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "broadcast_mod",
    "broadcast_maximum", "broadcast_minimum", "broadcast_equal", "broadcast_not_equal",
    "broadcast_greater", "broadcast_greater_equal", "broadcast_lesser",
    "broadcast_lesser_equal", "broadcast_logical_and", "broadcast_logical_or",
    "broadcast_logical_xor", "elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div",
    "_plus", "_minus", "_mul", "_div", "_mod", "_maximum", "_minimum", "_equal", "_not_equal",
    "_greater", "_greater_equal", "_lesser", "_lesser_equal", "_hypot", "_power",
    "add_n", "Concat", "stack", "where")
_CONDITIONAL = (("Activation", "act_type", ["softrelu"]),
                ("LeakyReLU", "act_type", ["elu", "selu"]))
_LOSS_OUTPUTS = ("SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
                 "MAERegressionOutput")
TARGETS = ("float16", "bfloat16")


def _registered(names: tuple) -> list[str]:
    aliases = all_aliases()
    return [n for n in names if has_op(n) and n not in aliases]


def check_target(target_dtype: object) -> str:
    """``'float16'`` or ``'bfloat16'`` (``bf16``/``fp16`` spellings too); AttrError otherwise."""
    from ...core.dtypes import as_dtype
    try:
        name = as_dtype(target_dtype).name
    except TypeError:
        name = str(target_dtype)
    if name not in TARGETS:
        raise AttrError(f"amp: target_dtype {target_dtype!r} is not one of {list(TARGETS)}")
    return name


def list_lp16_ops(target_dtype: str = "float16") -> list[str]:
    """Ops cast to the target dtype."""
    check_target(target_dtype)
    return _registered(_LP16)


def list_fp32_ops(target_dtype: str = "float16") -> list[str]:
    """Ops cast to float32."""
    check_target(target_dtype)
    return _registered(_FP32)


def list_lp16_fp32_ops(target_dtype: str = "float16") -> list[str]:
    """Ops that run in either precision (every other registered op); may be moved to a list."""
    check_target(target_dtype)
    listed = set(_LP16) | set(_FP32) | set(_WIDEST) | {c[0] for c in _CONDITIONAL}
    return sorted(n for n in _registered(tuple(all_ops())) if n not in listed)


def list_conditional_fp32_ops(target_dtype: str = "float16") -> list[tuple[str, str, list]]:
    """``(op, parameter, values)``: the op is cast to float32 when the parameter has a value."""
    check_target(target_dtype)
    return [c for c in _CONDITIONAL if has_op(c[0])]


def list_widest_type_cast(target_dtype: str = "float16") -> list[str]:
    """Ops run in the widest float type of their inputs (through ``amp_multicast``)."""
    check_target(target_dtype)
    return _registered(_WIDEST)


def list_loss_output_functions(target_dtype: str = "float16") -> list[str]:
    """Loss outputs whose ``grad_scale`` the loss scaler multiplies (imperative use)."""
    check_target(target_dtype)
    return _registered(_LOSS_OUTPUTS)
