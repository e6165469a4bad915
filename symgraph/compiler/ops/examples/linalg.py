"""Examples of the ``linalg`` ops (``sg.nd.linalg.*``) on 2x2 matrices worked out by hand."""
from __future__ import annotations

from ._text import call

A = "a = sg.nd.array([[1, 2], [3, 4]])"
L = "low = sg.nd.array([[1, 0], [2, 3]])  # lower triangular"

EXAMPLES: dict[str, str] = {
    # alpha * a b + beta * c with b the identity and c ones
    "_linalg_gemm": call("sg.nd.linalg.gemm(a, sg.nd.array([[1, 0], [0, 1]]), sg.nd.ones((2, "
                         "2)), alpha=1.0, beta=1.0)", "[[2. 3.]\n [4. 5.]]", "2x2", (A,)),
    "_linalg_gemm2": call("sg.nd.linalg.gemm2(a, sg.nd.array([[1], [1]]))", "[[3.]\n [7.]]",
                          "2x1", (A,)),
    "_linalg_syrk": call("sg.nd.linalg.syrk(a)  # a a^T", "[[ 5. 11.]\n [11. 25.]]", "2x2",
                         (A,)),
    "_linalg_trmm": call("sg.nd.linalg.trmm(low, sg.nd.array([[1], [1]]))", "[[1.]\n [5.]]",
                         "2x1", (L,)),
    "_linalg_trsm": call("sg.nd.linalg.trsm(low, sg.nd.array([[1], [5]]))  # solves low x = b",
                         "[[1.]\n [1.]]", "2x1", (L,)),
    # [[4, 2], [2, 5]] = l l^T
    "_linalg_potrf": call("sg.nd.linalg.potrf(sg.nd.array([[4, 2], [2, 5]]))",
                          "[[2. 0.]\n [1. 2.]]", "2x2"),
    # inverse of l l^T = [[4, 2], [2, 5]]: [[5, -2], [-2, 4]] / 16
    "_linalg_potri": call("sg.nd.linalg.potri(sg.nd.array([[2, 0], [1, 2]]))",
                          "[[ 0.3125 -0.125 ]\n [-0.125   0.25  ]]", "2x2"),
    # a = l q with q's rows orthonormal; the signs are LAPACK's, as in MXNet
    "_linalg_gelqf": call("q", "[[-0.6 -0.8]]", "1x2", (
        "q, l = sg.nd.linalg.gelqf(sg.nd.array([[3, 4]]))",)) + call("l", "[[-5.]]", "1x1"),
    # eigenvalues in ascending order (rows of u are the eigenvectors)
    "_linalg_syevd": call("lam", "[1. 3.]", "2", (
        "u, lam = sg.nd.linalg.syevd(sg.nd.array([[2, 1], [1, 2]]))",)),
    "_linalg_inverse": call("sg.nd.linalg.inverse(sg.nd.array([[4, 7], [2, 6]]))",
                            "[[ 0.6 -0.7]\n [-0.2  0.4]]", "2x2"),
    "_linalg_det": call("sg.nd.linalg.det(a)", "[-2.]", "1", (A,)),
    "_linalg_slogdet": call("sign", "[-1.]", "1", (
        A, "sign, logabsdet = sg.nd.linalg.slogdet(a)")) + call(
        "logabsdet  # log(2)", "[0.6931]", "1"),
    "_linalg_extractdiag": call("sg.nd.linalg.extractdiag(a)", "[1. 4.]", "2", (A,)),
    "_linalg_makediag": call("sg.nd.linalg.makediag(sg.nd.array([1, 2]))",
                             "[[1. 0.]\n [0. 2.]]", "2x2"),
    "_linalg_extracttrian": call("sg.nd.linalg.extracttrian(a)  # lower triangle, row by row",
                                 "[1. 3. 4.]", "3", (A,)),
    "_linalg_maketrian": call("sg.nd.linalg.maketrian(sg.nd.array([1, 3, 4]))",
                              "[[1. 0.]\n [3. 4.]]", "2x2"),
    # log(e) + log(e)
    "_linalg_sumlogdiag": call("sg.nd.linalg.sumlogdiag(sg.nd.array([[np.e, 0], [1, np.e]]))",
                               "[2.]", "1"),
}
