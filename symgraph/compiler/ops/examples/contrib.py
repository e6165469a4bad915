"""Examples of the smaller contrib ops: spectral, attention products, straight-through
estimators, masking, and the output layers whose forward pass is the identity."""
from __future__ import annotations

from ._text import call

# self-attention input (seq 2, batch 1, heads 1 x (q, k, v) of width 1): q 1, 4; k 2, 5; v 3, 6
QKV = "qkv = sg.nd.array([[[1, 2, 3]], [[4, 5, 6]]])"
# encoder keys and values (seq 2, batch 1, (k, v)): k 1, 3; v 10, 20
KV = "kv = sg.nd.array([[[1, 10]], [[3, 20]]])"

EXAMPLES: dict[str, str] = {
    # DFT of [1, 2] is [3, -1], written as interleaved (real, imaginary) pairs
    "_contrib_fft": call("sg.nd.contrib.fft(sg.nd.array([[1, 2]]))", "[[ 3.  0. -1.  0.]]",
                         "1x4"),
    # unnormalised, as in MXNet: 2 * [1, 2]
    "_contrib_ifft": call("sg.nd.contrib.ifft(sg.nd.array([[3, 0, -1, 0]]))", "[[2. 4.]]",
                          "1x2"),
    # out[h[i]] += s[i] * x[i]: out[0] = 1 + 3, out[1] = -2
    "_contrib_count_sketch": call("sg.nd.contrib.count_sketch(sg.nd.array([[1, 2, 3]]), "
                                  "sg.nd.array([[0, 1, 0]]), sg.nd.array([[1, -1, 1]]), "
                                  "out_dim=2)", "[[ 4. -2.]]", "1x2"),
    # q_i * k_j / sqrt(1): [[1 * 2, 1 * 5], [4 * 2, 4 * 5]]
    "_contrib_interleaved_matmul_selfatt_qk": call(
        "sg.nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=1)",
        "[[[ 2.  5.]\n  [ 8. 20.]]]", "1x2x2", (QKV,)),
    # step 0 takes v_0 = 3, step 1 averages 3 and 6
    "_contrib_interleaved_matmul_selfatt_valatt": call(
        "sg.nd.contrib.interleaved_matmul_selfatt_valatt(qkv, sg.nd.array([[[1, 0], "
        "[0.5, 0.5]]]), heads=1)", "[[[3. ]]\n<BLANKLINE>\n [[4.5]]]", "2x1x1", (QKV,)),
    # query 2 against keys 1 and 3
    "_contrib_interleaved_matmul_encdec_qk": call(
        "sg.nd.contrib.interleaved_matmul_encdec_qk(sg.nd.array([[[2]]]), kv, heads=1)",
        "[[[2. 6.]]]", "1x1x2", (KV,)),
    # the mean of values 10 and 20
    "_contrib_interleaved_matmul_encdec_valatt": call(
        "sg.nd.contrib.interleaved_matmul_encdec_valatt(kv, sg.nd.array([[[0.5, 0.5]]]), "
        "heads=1)", "[[[15.]]]", "1x1x1", (KV,)),
    # a x^2 + b x + c with (a, b, c) = (1, 2, 3)
    "_contrib_quadratic": call("sg.nd.contrib.quadratic(sg.nd.array([1, 2]), a=1, b=2, c=3)",
                               "[ 6. 11.]", "2"),
    "_contrib_gradientmultiplier": call(
        "sg.nd.contrib.gradientmultiplier(sg.nd.array([1, 2]), scalar=-1)  "
        "# forward: identity; backward scales the gradient", "[1. 2.]", "2"),
    "_contrib_round_ste": call("sg.nd.contrib.round_ste(sg.nd.array([-1.4, 0.6, 2.7]))  "
                               "# backward passes the gradient straight through",
                               "[-1.  1.  3.]", "3"),
    "_contrib_sign_ste": call("sg.nd.contrib.sign_ste(sg.nd.array([-2, 0, 3]))",
                              "[-1.  0.  1.]", "3"),
    # rows whose index entry is nonzero
    "_contrib_boolean_mask": call("sg.nd.contrib.boolean_mask(sg.nd.array([[1, 2], [3, 4], "
                                  "[5, 6]]), sg.nd.array([0, 1, 1]))",
                                  "[[3. 4.]\n [5. 6.]]", "2x2"),
    "stack": call("sg.nd.stack(sg.nd.array([1, 2]), sg.nd.array([3, 4]), axis=1)",
                  "[[1. 3.]\n [2. 4.]]", "2x2"),
    "SVMOutput": call("sg.nd.SVMOutput(sg.nd.array([[1, -2]]), sg.nd.array([0]))  "
                      "# forward: identity; backward: hinge-loss gradient",
                      "[[ 1. -2.]]", "1x2"),
    "IdentityAttachKLSparseReg": call(
        "sg.nd.IdentityAttachKLSparseReg(sg.nd.array([[0.25, 0.75]]), "
        "moving_avg=sg.nd.full((2,), 0.1))  # forward: identity; backward adds the KL "
        "sparsity penalty", "[[0.25 0.75]]", "1x2"),
}
