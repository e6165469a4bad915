"""Examples of the random samplers and densities. Samples are checked by a property anyone can
verify (their range, or a mean over many draws rounded to the law's mean); densities are
values of the textbook formulas."""
from __future__ import annotations

from ._text import call


def _mean(expr: str, shown: str) -> str:
    """Draw with ``expr`` and show the mean of each row, rounded to integers."""
    return (f">>> x = {expr}\n"
            f">>> [round(v) for v in x.mean(axis=-1).asnumpy().ravel().tolist()]\n{shown}\n")


def _pdf(law: str, params: str, sample: str, shown: str, formula: str) -> str:
    return call(f"sg.nd.random_pdf_{law}(sg.nd.array([[{sample}]]), {params})  # {formula}",
                f"[[{shown}]]", "1x1")


N = "shape=(10000,)"

EXAMPLES: dict[str, str] = {
    "_random_uniform": (">>> x = sg.nd.random_uniform(low=2, high=3, shape=(1000,))\n"
                        ">>> x.shape, 2 <= float(x.min()), float(x.max()) < 3\n"
                        "((1000,), True, True)\n"),
    "_sample_uniform": (">>> x = sg.nd.sample_uniform(sg.nd.array([0, 10]), "
                        "sg.nd.array([1, 11]), shape=(100,))\n"
                        ">>> x.shape, float(x[0].max()) < 1, float(x[1].min()) >= 10\n"
                        "((2, 100), True, True)\n"),
    "_random_normal": _mean(f"sg.nd.random_normal(loc=5, scale=0.1, {N})", "[5]"),
    "_sample_normal": _mean(f"sg.nd.sample_normal(sg.nd.array([0, 100]), sg.nd.array([1, 1]), "
                            f"{N})", "[0, 100]"),
    # mean alpha * beta
    "_random_gamma": _mean(f"sg.nd.random_gamma(alpha=4, beta=0.5, {N})", "[2]"),
    "_sample_gamma": _mean(f"sg.nd.sample_gamma(sg.nd.array([1, 9]), sg.nd.array([1, 1]), "
                           f"{N})", "[1, 9]"),
    # mean 1 / lam
    "_random_exponential": _mean(f"sg.nd.random_exponential(lam=0.25, {N})", "[4]"),
    "_sample_exponential": _mean(f"sg.nd.sample_exponential(sg.nd.array([1, 0.1]), {N})",
                                 "[1, 10]"),
    "_random_poisson": _mean(f"sg.nd.random_poisson(lam=3, {N})", "[3]"),
    "_sample_poisson": _mean(f"sg.nd.sample_poisson(sg.nd.array([1, 10]), {N})", "[1, 10]"),
    # mean k (1 - p) / p
    "_random_negative_binomial": _mean(f"sg.nd.random_negative_binomial(k=2, p=0.5, {N})",
                                       "[2]"),
    "_sample_negative_binomial": _mean(
        f"sg.nd.sample_negative_binomial(sg.nd.array([1, 4]), sg.nd.array([0.5, 0.5]), {N})",
        "[1, 4]"),
    "_random_generalized_negative_binomial": _mean(
        f"sg.nd.random_generalized_negative_binomial(mu=2, alpha=0.5, {N})", "[2]"),
    "_sample_generalized_negative_binomial": _mean(
        f"sg.nd.sample_generalized_negative_binomial(sg.nd.array([1, 3]), "
        f"sg.nd.array([0.5, 0.5]), {N})", "[1, 3]"),
    "_random_randint": (">>> sorted(set(sg.nd.random_randint(low=0, high=3, shape=(100,))"
                        ".asnumpy().tolist()))\n[0, 1, 2]\n"),
    # all the probability on class 1
    "_sample_multinomial": call("sg.nd.sample_multinomial(sg.nd.array([[0, 1, 0]]), "
                                "shape=(3,))", "[[1 1 1]]", "1x3"),
    "_shuffle": (">>> sorted(sg.nd.shuffle(sg.nd.array([1, 2, 3, 4])).asnumpy().tolist())\n"
                 "[1.0, 2.0, 3.0, 4.0]\n"),
    "_random_pdf_uniform": _pdf("uniform", "sg.nd.array([0]), sg.nd.array([2])", "0.5", "0.5",
                                "1 / (high - low)"),
    "_random_pdf_normal": _pdf("normal", "sg.nd.array([0]), sg.nd.array([1])", "0", "0.3989",
                               "1 / sqrt(2 pi)"),
    "_random_pdf_gamma": _pdf("gamma", "sg.nd.array([1]), sg.nd.array([1])", "1", "0.3679",
                              "exp(-1)"),
    "_random_pdf_exponential": _pdf("exponential", "sg.nd.array([2])", "0", "2.",
                                    "lam exp(-lam x)"),
    "_random_pdf_poisson": _pdf("poisson", "sg.nd.array([2])", "0", "0.1353", "exp(-2)"),
    "_random_pdf_negative_binomial": _pdf("negative_binomial",
                                          "sg.nd.array([1]), sg.nd.array([0.5])", "0", "0.5",
                                          "p ** k"),
    # mu = 1, alpha = 1 is k = 1 / alpha = 1, p = 1 / (1 + alpha mu) = 0.5
    "_random_pdf_generalized_negative_binomial": _pdf(
        "generalized_negative_binomial", "sg.nd.array([1]), sg.nd.array([1])", "0", "0.5",
        "p ** k"),
    # Dirichlet(1, 1) is uniform on the simplex: density Gamma(2) / Gamma(1)^2 = 1
    "_random_pdf_dirichlet": call("sg.nd.random_pdf_dirichlet(sg.nd.array([[[0.5, 0.5]]]), "
                                  "sg.nd.array([[1, 1]]))", "[[1.]]", "1x1"),
}


# Examples of the functions of sg.nd.random / sg.sym.random (symgraph/random_api.py), by name
LAWS = ("uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial",
        "generalized_negative_binomial")
FUNCTIONS: dict[str, str] = {
    "uniform": (">>> x = sg.nd.random.uniform(2, 3, shape=(1000,))\n"
                ">>> x.shape, 2 <= float(x.min()), float(x.max()) < 3\n"
                "((1000,), True, True)\n"),
    "normal": _mean(f"sg.nd.random.normal(5, 0.1, {N})", "[5]"),
    "gamma": _mean(f"sg.nd.random.gamma(4, 0.5, {N})  # mean alpha * beta", "[2]"),
    "exponential": _mean(f"sg.nd.random.exponential(4, {N})  # the mean is the scale",
                         "[4]"),
    "poisson": _mean(f"sg.nd.random.poisson(3, {N})", "[3]"),
    "negative_binomial": _mean(f"sg.nd.random.negative_binomial(2, 0.5, {N})", "[2]"),
    "generalized_negative_binomial": _mean(
        f"sg.nd.random.generalized_negative_binomial(2, 0.5, {N})", "[2]"),
    **{f"{law}_like": f">>> sg.nd.random.{law}_like(sg.nd.zeros((2, 3))).shape\n(2, 3)\n"
       for law in LAWS},
    "randn": ">>> sg.nd.random.randn(2, 3).shape\n(2, 3)\n",
    "randint": (">>> sorted(set(sg.nd.random.randint(0, 3, shape=(100,)).asnumpy().tolist()))"
                "\n[0, 1, 2]\n"),
    "multinomial": call("sg.nd.random.multinomial(sg.nd.array([[0, 1, 0]]), shape=3)",
                        "[[1 1 1]]", "1x3"),
    "shuffle": (">>> sorted(sg.nd.random.shuffle(sg.nd.array([1, 2, 3])).asnumpy().tolist())\n"
                "[1.0, 2.0, 3.0]\n"),
}
