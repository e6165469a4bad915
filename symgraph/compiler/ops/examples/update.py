"""Examples of the optimizer update ops: one step from a small state, worked out from each
rule's formula (MXNet's). The ops write their states (``mom``, ``mean``...) in place."""
from __future__ import annotations

from ._text import call

W = "w, g = sg.nd.array([1]), sg.nd.array([1])"
W16 = ("w = sg.nd.array([1], dtype='float16')", "g = sg.nd.array([1], dtype='float16')",
       "w32 = sg.nd.array([1])  # the float32 master copy")
TWO = ("w0, g0 = sg.nd.array([1]), sg.nd.array([1])",
       "w1, g1 = sg.nd.array([2]), sg.nd.array([2])")
TWO16 = ("w0, w1 = sg.nd.array([1], dtype='float16'), sg.nd.array([2], dtype='float16')",
         "g0, g1 = w0.copy(), w1.copy()",
         "w32_0, w32_1 = sg.nd.array([1]), sg.nd.array([2])")
MOMS = "m0, m1 = sg.nd.zeros(1), sg.nd.zeros(1)"
# w_i - lr_i g_i with lrs (0.5, 0.25): 1 - 0.5, 2 - 0.5
BOTH = "[[0.5], [1.5]]"


def _both(call_: str, setup: tuple[str, ...]) -> str:
    lines = "".join(f">>> {s}\n" for s in setup)
    return lines + f">>> [w.asnumpy().tolist() for w in {call_}]\n{BOTH}\n"


EXAMPLES: dict[str, str] = {
    # w - lr g
    "sgd_update": call("sg.nd.sgd_update(sg.nd.array([1, 2]), sg.nd.array([0.5, 1]), lr=0.1)",
                       "[0.95 1.9 ]", "2"),
    # mom = momentum mom - lr g; w + mom
    "sgd_mom_update": call("sg.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9)", "[0.9]",
                           "1", (W, "mom = sg.nd.zeros(1)")) + call("mom", "[-0.1]", "1"),
    # mom = momentum mom + g; w - lr (g + momentum mom) = 1 - 0.5 * 1.5
    "nag_mom_update": call("sg.nd.nag_mom_update(w, g, sg.nd.zeros(1), lr=0.5, momentum=0.5)",
                           "[0.25]", "1", (W,)),
    "mp_sgd_update": call("sg.nd.mp_sgd_update(w, g, w32, lr=0.5)", "[0.5]", "1", W16)
    + call("w32", "[0.5]", "1"),
    "mp_sgd_mom_update": call("sg.nd.mp_sgd_mom_update(w, g, sg.nd.zeros(1), w32, lr=0.5, "
                              "momentum=0.9)", "[0.5]", "1", W16),
    "mp_nag_mom_update": call("sg.nd.mp_nag_mom_update(w, g, sg.nd.zeros(1), w32, lr=0.5, "
                              "momentum=0.5)", "[0.25]", "1", W16),
    # mean = 0.5, var = 0.25: w - lr mean / sqrt(var) = 1 - 0.1
    "adam_update": call("sg.nd.adam_update(w, g, sg.nd.zeros(1), sg.nd.zeros(1), lr=0.1, "
                        "beta1=0.5, beta2=0.75)", "[0.9]", "1", (W,)),
    # n = 0.25: w - lr g / sqrt(n) = 1 - 0.2
    "rmsprop_update": call("sg.nd.rmsprop_update(w, g, sg.nd.zeros(1), lr=0.1, gamma1=0.75)",
                           "[0.8]", "1", (W,)),
    # n = 0.5, mean g = 0.5: delta = -lr g / sqrt(n - 0.5 ** 2) = -0.2
    "rmspropalex_update": call("sg.nd.rmspropalex_update(w, g, sg.nd.zeros(1), sg.nd.zeros(1), "
                               "sg.nd.zeros(1), lr=0.1, gamma1=0.5, gamma2=0.0)", "[0.8]", "1",
                               (W,)),
    # z = 1, n = 1: w = -z / ((beta + sqrt(n)) / lr) = -1 / 2
    "ftrl_update": call("sg.nd.ftrl_update(sg.nd.zeros(1), g, sg.nd.zeros(1), sg.nd.zeros(1), "
                        "lr=1.0, lamda1=0.0, beta=1.0)", "[-0.5]", "1", (W,)),
    # v = 0.5, d_t = (1 - 0.5) / lr * sqrt(v / (1 - 0.5)) = 1, z = 0.5 - 1 * w: w = -z / d_t
    "ftml_update": call("sg.nd.ftml_update(w, g, sg.nd.zeros(1), sg.nd.zeros(1), sg.nd.zeros(1), "
                        "lr=0.5, beta1=0.5, beta2=0.5, t=1)", "[0.5]", "1", (W,)),
    # w - lr sign(g)
    "signsgd_update": call("sg.nd.signsgd_update(sg.nd.array([1, 1]), sg.nd.array([-3, 2]), "
                           "lr=0.1)", "[1.1 0.9]", "2"),
    # mom = -(1 - momentum) g = [0.3, -0.2]; w + lr sign(mom)
    "signum_update": call("sg.nd.signum_update(sg.nd.array([1, 1]), sg.nd.array([-3, 2]), "
                          "sg.nd.zeros(2), lr=0.1, momentum=0.9)", "[1.1 0.9]", "2"),
    # bias-corrected mean / sqrt(var) = 2 / 2, plus wd w = 0.5
    "lamb_update_phase1": call("sg.nd.lamb_update_phase1(sg.nd.array([1]), sg.nd.array([2]), "
                               "sg.nd.zeros(1), sg.nd.zeros(1), t=1, wd=0.5)", "[1.5]", "1"),
    "mp_lamb_update_phase1": call("sg.nd.mp_lamb_update_phase1(w, 2 * g, sg.nd.zeros(1), "
                                  "sg.nd.zeros(1), w32, t=1, wd=0.5)", "[1.5]", "1", W16),
    # w - lr (r1 / r2) g with r1 = |w| = 5, r2 = |g| = 1
    "lamb_update_phase2": call("sg.nd.lamb_update_phase2(sg.nd.array([3, 4]), "
                               "sg.nd.array([1, 0]), sg.nd.array([5]), sg.nd.array([1]), "
                               "lr=0.1)", "[2.5 4. ]", "2"),
    "mp_lamb_update_phase2": call("sg.nd.mp_lamb_update_phase2(w, g32, sg.nd.array([1]), "
                                  "sg.nd.array([1]), w32, lr=0.5)", "[0.5]", "1",
                                  W16 + ("g32 = sg.nd.array([1])  # phase 1's float32 output",)),
    "multi_sgd_update": _both("sg.nd.multi_sgd_update(w0, g0, w1, g1, lrs=(0.5, 0.25), "
                              "wds=(0, 0), num_weights=2)", TWO),
    "multi_sgd_mom_update": _both("sg.nd.multi_sgd_mom_update(w0, g0, m0, w1, g1, m1, "
                                  "lrs=(0.5, 0.25), wds=(0, 0), momentum=0.5, num_weights=2)",
                                  TWO + (MOMS,)),
    "multi_mp_sgd_update": _both("sg.nd.multi_mp_sgd_update(w0, g0, w32_0, w1, g1, w32_1, "
                                 "lrs=(0.5, 0.25), wds=(0, 0), num_weights=2)", TWO16),
    "multi_mp_sgd_mom_update": _both(
        "sg.nd.multi_mp_sgd_mom_update(w0, g0, m0, w32_0, w1, g1, m1, w32_1, "
        "lrs=(0.5, 0.25), wds=(0, 0), momentum=0.5, num_weights=2)", TWO16 + (MOMS,)),
    "preloaded_multi_sgd_update": _both(
        "sg.nd.preloaded_multi_sgd_update(w0, g0, w1, g1, sg.nd.array([0.5, 0.25]), "
        "sg.nd.zeros(2), num_weights=2)", TWO),
    "preloaded_multi_sgd_mom_update": _both(
        "sg.nd.preloaded_multi_sgd_mom_update(w0, g0, m0, w1, g1, m1, "
        "sg.nd.array([0.5, 0.25]), sg.nd.zeros(2), momentum=0.5, num_weights=2)",
        TWO + (MOMS,)),
    "preloaded_multi_mp_sgd_update": _both(
        "sg.nd.preloaded_multi_mp_sgd_update(w0, g0, w32_0, w1, g1, w32_1, "
        "sg.nd.array([0.5, 0.25]), sg.nd.zeros(2), num_weights=2)", TWO16),
    "preloaded_multi_mp_sgd_mom_update": _both(
        "sg.nd.preloaded_multi_mp_sgd_mom_update(w0, g0, m0, w32_0, w1, g1, m1, w32_1, "
        "sg.nd.array([0.5, 0.25]), sg.nd.zeros(2), momentum=0.5, num_weights=2)",
        TWO16 + (MOMS,)),
    # lr eta |w| / (|g| + wd |w| + eps) = 0.1 * 2 / 1
    "multi_lars": call("sg.nd.multi_lars(sg.nd.array([0.1]), sg.nd.array([4]), "
                       "sg.nd.array([1]), sg.nd.array([0]), eta=1.0, eps=0.0)", "[0.2]", "1"),
    "multi_sum_sq": call("sg.nd.multi_sum_sq(sg.nd.array([3, 4]), sg.nd.array([1]), "
                         "num_arrays=2)", "[25.  1.]", "2"),
    "all_finite": call("sg.nd.all_finite(sg.nd.array([1, np.inf]))", "[0.]", "1"),
    "multi_all_finite": call("sg.nd.multi_all_finite(sg.nd.array([1]), sg.nd.array([2]), "
                             "num_arrays=2)", "[1.]", "1"),
    "reset_arrays": (">>> a = sg.nd.array([1, 2])\n"
                     ">>> _ = sg.nd.reset_arrays(a, num_arrays=1)\n"
                     ">>> a\n[0. 0.]\n<NDArray 2 @cpu(0)>\n"),
}
