"""Examples of the elementwise math ops: each a one-line call on a few values whose result
can be checked by eye (a square root of perfect squares, sines of multiples of pi...)."""
from __future__ import annotations

from ._text import call as _call


# op: (input values, printed result); the call is sg.nd.<op>(sg.nd.array(values))
UNARY: dict[str, tuple[str, str]] = {
    "negative": ("[1, -2, 3]", "[-1.  2. -3.]"),
    "exp": ("[0, 1, 2]", "[1.     2.7183 7.3891]"),
    "log": ("[1, np.e, np.e ** 2]", "[0. 1. 2.]"),
    "sqrt": ("[1, 4, 9]", "[1. 2. 3.]"),
    "rsqrt": ("[1, 4, 16]", "[1.   0.5  0.25]"),
    "square": ("[1, 2, -3]", "[1. 4. 9.]"),
    "reciprocal": ("[1, 2, 4]", "[1.   0.5  0.25]"),
    "abs": ("[-1, 2, -3]", "[1. 2. 3.]"),
    "tanh": ("[0, 1]", "[0.     0.7616]"),
    "sigmoid": ("[-1, 0, 1]", "[0.2689 0.5    0.7311]"),
    "relu": ("[-1, 0, 2]", "[0. 0. 2.]"),
    "softrelu": ("[0, 1]", "[0.6931 1.3133]"),
    "softsign": ("[-1, 0, 3]", "[-0.5   0.    0.75]"),
    "log1p": ("[0, 1]", "[0.     0.6931]"),
    "expm1": ("[0, 1]", "[0.     1.7183]"),
    "sign": ("[-2, 0, 3]", "[-1.  0.  1.]"),
    "sin": ("[0, np.pi / 2]", "[0. 1.]"),
    "cos": ("[0, np.pi]", "[ 1. -1.]"),
    "tan": ("[0, np.pi / 4]", "[0. 1.]"),
    "arcsin": ("[0, 1]", "[0.     1.5708]"),
    "arccos": ("[1, 0]", "[0.     1.5708]"),
    "arctan": ("[0, 1]", "[0.     0.7854]"),
    "sinh": ("[0, 1]", "[0.     1.1752]"),
    "cosh": ("[0, 1]", "[1.     1.5431]"),
    "arcsinh": ("[0, 1]", "[0.     0.8814]"),
    "arccosh": ("[1, 2]", "[0.    1.317]"),
    "arctanh": ("[0, 0.5]", "[0.     0.5493]"),
    "degrees": ("[0, np.pi]", "[  0. 180.]"),
    "radians": ("[0, 180]", "[0.     3.1416]"),
    "log10": ("[1, 10, 100]", "[0. 1. 2.]"),
    "log2": ("[1, 2, 8]", "[0. 1. 3.]"),
    "cbrt": ("[1, 8, 27]", "[1. 2. 3.]"),
    "rcbrt": ("[1, 8, 64]", "[1.   0.5  0.25]"),
    "gamma": ("[1, 2, 5]", "[ 1.  1. 24.]"),
    "gammaln": ("[1, 3, 5]", "[0.     0.6931 3.1781]"),
    "erf": ("[0, 1]", "[0.     0.8427]"),
    "erfinv": ("[0, 0.5]", "[0.     0.4769]"),
    "floor": ("[-1.5, 1.5]", "[-2.  1.]"),
    "ceil": ("[-1.5, 1.5]", "[-1.  2.]"),
    "rint": ("[-1.5, 1.5, 2.5]", "[-2.  1.  2.]"),  # halves go down (MXNet's rint)
    "round": ("[-1.5, 1.5, 2.5]", "[-2.  2.  3.]"),  # halves go away from zero
    "trunc": ("[-1.5, 1.5]", "[-1.  1.]"),
    "fix": ("[-1.5, 1.5]", "[-1.  1.]"),
    "logical_not": ("[0, 1, 2]", "[1. 0. 0.]"),
}

# op: (lhs, rhs, printed result, shape); the call is sg.nd.<op>(sg.nd.array(lhs), ...(rhs))
BINARY: dict[str, tuple[str, str, str, str]] = {
    "broadcast_add": ("[[1], [2]]", "[10, 20, 30]", "[[11. 21. 31.]\n [12. 22. 32.]]", "2x3"),
    "broadcast_sub": ("[[10], [20]]", "[1, 2, 3]", "[[ 9.  8.  7.]\n [19. 18. 17.]]", "2x3"),
    "broadcast_mul": ("[[1], [2]]", "[1, 2, 3]", "[[1. 2. 3.]\n [2. 4. 6.]]", "2x3"),
    "broadcast_div": ("[[6], [12]]", "[1, 2, 3]", "[[ 6.  3.  2.]\n [12.  6.  4.]]", "2x3"),
    "broadcast_power": ("[[2], [3]]", "[0, 1, 2]", "[[1. 2. 4.]\n [1. 3. 9.]]", "2x3"),
    "broadcast_maximum": ("[[1], [5]]", "[2, 4, 6]", "[[2. 4. 6.]\n [5. 5. 6.]]", "2x3"),
    "broadcast_minimum": ("[[1], [5]]", "[2, 4, 6]", "[[1. 1. 1.]\n [2. 4. 5.]]", "2x3"),
    "broadcast_equal": ("[[1], [2]]", "[1, 2, 3]", "[[1. 0. 0.]\n [0. 1. 0.]]", "2x3"),
    "broadcast_not_equal": ("[[1], [2]]", "[1, 2, 3]", "[[0. 1. 1.]\n [1. 0. 1.]]", "2x3"),
    "broadcast_greater": ("[[1], [2]]", "[1, 2, 3]", "[[0. 0. 0.]\n [1. 0. 0.]]", "2x3"),
    "broadcast_greater_equal": ("[[1], [2]]", "[1, 2, 3]",
                                "[[1. 0. 0.]\n [1. 1. 0.]]", "2x3"),
    "broadcast_lesser": ("[[1], [2]]", "[1, 2, 3]", "[[0. 1. 1.]\n [0. 0. 1.]]", "2x3"),
    "broadcast_lesser_equal": ("[[1], [2]]", "[1, 2, 3]", "[[1. 1. 1.]\n [0. 1. 1.]]", "2x3"),
    "broadcast_logical_and": ("[[0], [1]]", "[0, 1, 2]", "[[0. 0. 0.]\n [0. 1. 1.]]", "2x3"),
    "broadcast_logical_or": ("[[0], [1]]", "[0, 1, 2]", "[[0. 1. 1.]\n [1. 1. 1.]]", "2x3"),
    "broadcast_logical_xor": ("[[0], [1]]", "[0, 1, 2]", "[[0. 1. 1.]\n [1. 0. 0.]]", "2x3"),
    "broadcast_hypot": ("[3, 5, 8]", "[4, 12, 15]", "[ 5. 13. 17.]", "3"),
    "broadcast_mod": ("[7, 8, 9]", "[3]", "[1. 2. 0.]", "3"),
    "elemwise_add": ("[1, 2, 3]", "[4, 5, 6]", "[5. 7. 9.]", "3"),
    "elemwise_sub": ("[4, 5, 6]", "[1, 2, 3]", "[3. 3. 3.]", "3"),
    "elemwise_mul": ("[1, 2, 3]", "[4, 5, 6]", "[ 4. 10. 18.]", "3"),
    "elemwise_div": ("[4, 10, 18]", "[1, 2, 3]", "[4. 5. 6.]", "3"),
}

EXAMPLES: dict[str, str] = {
    **{op: _call(f"sg.nd.{op}(sg.nd.array({x}))", y, str(len(y.strip("[]").split())))
       for op, (x, y) in UNARY.items()},
    **{op: _call(f"sg.nd.{op}(sg.nd.array({a}), sg.nd.array({b}))", y, shape)
       for op, (a, b, y, shape) in BINARY.items()},
    "clip": _call("sg.nd.clip(sg.nd.array([-1, 1, 3]), a_min=0, a_max=2)", "[0. 1. 2.]", "3"),
    "Activation": _call("sg.nd.Activation(sg.nd.array([-1, 2]), act_type='relu')",
                        "[0. 2.]", "2"),
    # 0.5 x^2 where |x| < 1, |x| - 0.5 elsewhere (sigma = scalar = 1)
    "smooth_l1": _call("sg.nd.smooth_l1(sg.nd.array([-2, 0.5, 3]), scalar=1.0)",
                       "[1.5   0.125 2.5  ]", "3"),
    # clip(0.2 x + 0.5, 0, 1)
    "hard_sigmoid": _call("sg.nd.hard_sigmoid(sg.nd.array([-3, 0, 1]))",
                          "[0.  0.5 0.7]", "3"),
    "add_n": _call("sg.nd.add_n(a, b, c)", "[ 9. 12.]", "2",
                   ("a, b, c = sg.nd.array([1, 2]), sg.nd.array([3, 4]), sg.nd.array([5, 6])",)),
}
