"""The exercises of 04_scaling."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.checks._reference import scores_divisor


def _one_number(got, what):
    """The learner's prediction as a float, or Mismatch saying what came back instead."""
    predicted = as_array(got, what)
    if predicted.size != 1:
        raise Mismatch(f"{what} should be one number, got an array of shape {predicted.shape}", "wrong-shape")
    if np.iscomplexobj(predicted) or not (np.issubdtype(predicted.dtype, np.number) or predicted.dtype == bool):
        raise Mismatch(f"{what} should be one real number, got dtype {predicted.dtype}", "not-an-array")
    value = float(predicted.reshape(()))
    if np.isnan(value):
        raise Mismatch(f"{what} is NaN", "nan")
    return value


@exercise(
    notebook="04_scaling",
    hint="q·k is a sum of d_k products q_c·k_c, independent of each other. Work out the variance of one product, "
    "then use the fact that the variances of independent terms add up.",
    hint2=(
        "Test your formula on cases you can work out in your head: with d_k = 1 and both standard deviations "
        "1, one product of two independent standard normal numbers has variance 1; doubling d_k doubles the "
        "variance; doubling one standard deviation multiplies it by 4. Return the variance itself, not its "
        "square root."
    ),
    solution="""
        def score_variance(d_k, sigma_q, sigma_k):
            return d_k * sigma_q**2 * sigma_k**2
    """,
    mistakes={
        "unit-variances": """
            def score_variance(d_k, sigma_q, sigma_k):
                return d_k
        """,
        "sigmas-not-squared": """
            def score_variance(d_k, sigma_q, sigma_k):
                return d_k * sigma_q * sigma_k
        """,
        "standard-deviation": """
            def score_variance(d_k, sigma_q, sigma_k):
                return np.sqrt(d_k) * sigma_q * sigma_k
        """,
        "one-product": """
            def score_variance(d_k, sigma_q, sigma_k):
                return sigma_q**2 * sigma_k**2
        """,
        "variances-added": """
            def score_variance(d_k, sigma_q, sigma_k):
                return d_k * (sigma_q**2 + sigma_k**2)
        """,
    },
)
def score_variance(answer):
    rng = check_rng()
    n_pairs = 10_000
    # both standard deviations differ from 1 before one of them is 1, so σ_q² and σ_k² can be told apart
    for d_k, sigma_q, sigma_k in ((1, 1.0, 1.0), (64, 1.0, 1.0), (16, 2.0, 3.0), (256, 0.5, 1.0)):
        q = rng.normal(0, sigma_q, (n_pairs, d_k))
        k = rng.normal(0, sigma_k, (n_pairs, d_k))
        measured = float(np.var(np.sum(q * k, axis=-1)))  # the check measures what you predict
        what = f"score_variance({d_k}, {sigma_q}, {sigma_k})"
        predicted = _one_number(call(answer, d_k, sigma_q, sigma_k), what)
        exact = d_k * sigma_q**2 * sigma_k**2
        said = f"you predicted {predicted:.4g}, and {n_pairs:,} random pairs measure {measured:.4g}"

        def predicts(wrong, predicted=predicted, exact=exact):  # a mistake right for these inputs is no mistake
            return np.isclose(predicted, wrong) and not np.isclose(wrong, exact, rtol=0.01)

        if predicts(d_k):
            raise Mismatch(
                f"{what}: {said}. Your d_k holds when both standard deviations are 1; each product "
                "q_c·k_c has variance σ_q²·σ_k², so σ_q and σ_k belong in the answer",
                "unit-variances",
            )
        if predicts(d_k * sigma_q * sigma_k):
            raise Mismatch(
                f"{what}: {said}. You multiplied d_k by σ_q·σ_k, the standard deviations; a variance is "
                "a standard deviation squared, so each product q_c·k_c has variance σ_q²·σ_k²",
                "sigmas-not-squared",
            )
        if predicts(d_k * sigma_q * sigma_k**2):
            raise Mismatch(
                f"{what}: {said}. You squared σ_k but not σ_q: each product q_c·k_c has variance "
                "σ_q²·σ_k², both standard deviations squared",
                "sigmas-not-squared",
            )
        if predicts(d_k * sigma_q**2 * sigma_k):
            raise Mismatch(
                f"{what}: {said}. You squared σ_q but not σ_k: each product q_c·k_c has variance "
                "σ_q²·σ_k², both standard deviations squared",
                "sigmas-not-squared",
            )
        if predicts(np.sqrt(d_k) * sigma_q * sigma_k):
            raise Mismatch(
                f"{what}: {said}. Your number is the standard deviation of the score, the typical size "
                "of q·k; the exercise asks for its variance, the square of that",
                "standard-deviation",
            )
        if predicts(sigma_q**2 * sigma_k**2):
            raise Mismatch(
                f"{what}: {said}. That is the variance of one product q_c·k_c; the score adds up "
                f"d_k = {d_k} independent products, and their variances add up too",
                "one-product",
            )
        if predicts(d_k * (sigma_q**2 + sigma_k**2)):
            raise Mismatch(
                f"{what}: {said}. You added the variances of q_c and k_c; for a product of two "
                "independent numbers with mean 0 the variances multiply: the mean of q_c²·k_c² is the "
                "mean of q_c² times the mean of k_c²",
                "variances-added",
            )
        if not np.isclose(predicted, measured, rtol=0.1):
            raise Mismatch(f"{what}: {said}", "wrong-values")


@exercise(
    notebook="04_scaling",
    hint="Compute the scores as in notebook 03, every query with every key, then divide them all by the square "
    "root of d_k, the length of each query and key vector, read from the inputs rather than written as a "
    "number. np.sqrt gives a square root.",
    hint2="Q is (T_q, d_k) and K is (T_k, d_k): Q times the transpose of K is (T_q, T_k), one row per query. d_k is "
    "the size of the last axis of Q (the same as K's), not the number of rows of either, and the divisor is "
    "its square root, √d_k, not d_k itself.",
    solution="""
        def scaled_scores(Q, K):
            d_k = Q.shape[-1]
            return Q @ K.T / np.sqrt(d_k)  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    """,
    mistakes={
        "divided-by-d-k": """
            def scaled_scores(Q, K):
                d_k = Q.shape[-1]
                return Q @ K.T / d_k
        """,
        "not-scaled": """
            def scaled_scores(Q, K):
                return Q @ K.T
        """,
        "number-of-queries": """
            def scaled_scores(Q, K):
                return Q @ K.T / np.sqrt(Q.shape[0])
        """,
        "number-of-keys": """
            def scaled_scores(Q, K):
                return Q @ K.T / np.sqrt(len(K))
        """,
        "fixed-number": """
            def scaled_scores(Q, K):
                return Q @ K.T / 8  # the square root of 64, right for d_k = 64 only
        """,
        "keys-as-rows": """
            def scaled_scores(Q, K):
                return K @ Q.T / np.sqrt(Q.shape[-1])
        """,
        "multiplied": """
            def scaled_scores(Q, K):
                return Q @ K.T * np.sqrt(Q.shape[-1])
        """,
        "power-precedence": """
            def scaled_scores(Q, K):
                d_k = Q.shape[-1]
                return Q @ K.T / d_k ** 1 / 2  # meant as a square root
        """,
        "wrong-divisor": """
            def scaled_scores(Q, K):
                return Q @ K.T / np.sqrt(Q.size)
        """,
        "softmax-applied": """
            def scaled_scores(Q, K):
                S = Q @ K.T / np.sqrt(Q.shape[-1])
                e = np.exp(S - S.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
    },
)
def scaled_scores(answer):
    rng = check_rng()
    cases = []  # (got, raw scores, what, T_q, T_k, d_k): both cases are run first, so a divisor is named from both
    for T_q, T_k, d_k in ((3, 5, 16), (2, 6, 64)):  # T_q, T_k, √d_k, d_k/2 all differ in each case
        Q, K = rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
        what = f"scaled_scores(Q, K) for Q ({T_q}, {d_k}) and K ({T_k}, {d_k})"
        got = as_array(call(answer, Q, K), what)
        raw = Q @ K.T  # (T_q, T_k)
        if got.shape == (T_k, T_q) and np.allclose(got, raw.T / np.sqrt(d_k)):
            raise Mismatch(
                f"{what} has shape ({T_k}, {T_q}), one row per key: you multiplied K by the transpose "
                f"of Q. The rows are the queries: Q times the transpose of K, ({T_q}, {T_k})",
                "keys-as-rows",
            )
        cases.append((got, raw, what, T_q, T_k, d_k))
    _name_the_divisor(cases)
    for got, raw, what, _, _, d_k in cases:
        if (
            got.shape == raw.shape
            and not np.iscomplexobj(got)
            and any(np.allclose(got, softmax(raw / scale)) for scale in (np.sqrt(d_k), 1.0))
        ):
            raise Mismatch(
                f"{what}: your scores are already weights (each row sums to 1). Return the scaled scores "
                "themselves; the softmax comes after them, in attention",
                "softmax-applied",
            )
        expect_close(got, raw / np.sqrt(d_k), what)


def _name_the_divisor(cases):
    """Raise Mismatch when every case's answer is its raw scores divided by one number, a wrong one: name it.

    cases: (got, raw, what, T_q, T_k, d_k) per case; got and raw (T_q, T_k). A name must fit every case.
    """
    divisors = [scores_divisor(got, raw) for got, raw, *_ in cases]
    if None in divisors:
        return
    wrong = [i for i, (c, case) in enumerate(zip(divisors, cases, strict=True)) if not np.isclose(c, np.sqrt(case[5]))]
    if not wrong:
        return
    c = divisors[wrong[0]]
    _, _, what, T_q, T_k, d_k = cases[wrong[0]]
    root = np.sqrt(d_k)

    def everywhere(divisor):  # divisor(T_q, T_k, d_k) is what the answer divided by, in every case
        return all(np.isclose(c_i, divisor(*case[3:])) for c_i, case in zip(divisors, cases, strict=True))

    if everywhere(lambda T_q, T_k, d_k: 1.0):
        raise Mismatch(
            f"{what}: the scores are not scaled; divide every score by √d_k = {root:g}, so that their "
            "variance is about 1 whatever d_k is",
            "not-scaled",
        )
    if everywhere(lambda T_q, T_k, d_k: d_k):
        raise Mismatch(
            f"{what}: you divided the scores by d_k = {d_k}; divide by its square root, "
            f"√{d_k} = {root:g}. Dividing by d_k shrinks the scores' variance to 1/d_k "
            "instead of bringing it to 1",
            "divided-by-d-k",
        )
    if everywhere(lambda T_q, T_k, d_k: 1 / np.sqrt(d_k)):
        raise Mismatch(
            f"{what}: you multiplied the scores by √d_k = {root:g}; divide them by it, so that their "
            "variance shrinks from d_k to about 1",
            "multiplied",
        )
    if everywhere(lambda T_q, T_k, d_k: np.sqrt(T_q)):
        raise Mismatch(
            f"{what}: you divided by √{T_q}, the square root of the number of queries (the rows of Q); "
            f"d_k = {d_k} is the length of each query and key vector, the size of the last axis",
            "number-of-queries",
        )
    if everywhere(lambda T_q, T_k, d_k: np.sqrt(T_k)):
        raise Mismatch(
            f"{what}: you divided by √{T_k}, the square root of the number of keys (the rows of K); "
            f"d_k = {d_k} is the length of each query and key vector, the size of the last axis",
            "number-of-keys",
        )
    if everywhere(lambda T_q, T_k, d_k: T_q):
        raise Mismatch(
            f"{what}: you divided by {T_q}, the number of queries (the rows of Q); divide by √d_k, the "
            f"square root of the length of each query and key vector: √{d_k} = {root:g}",
            "number-of-queries",
        )
    if everywhere(lambda T_q, T_k, d_k: T_k):
        raise Mismatch(
            f"{what}: you divided by {T_k}, the number of keys (the rows of K); divide by √d_k, the "
            f"square root of the length of each query and key vector: √{d_k} = {root:g}",
            "number-of-keys",
        )
    if everywhere(lambda T_q, T_k, d_k: 2 * d_k):
        raise Mismatch(
            f"{what}: you divided by {2 * d_k}, which is 2·d_k: a power of 1/2 written without brackets is "
            "read as d_k to the power 1, and the division by 2 then divides the scores once more (a power "
            f"comes before a division). Bracket the exponent, or take a square root: √{d_k} = {root:g}",
            "power-precedence",
        )
    if everywhere(lambda T_q, T_k, d_k: d_k / 2):
        raise Mismatch(
            f"{what}: you divided by {d_k / 2:g}, which is d_k/2: a power of 1/2 written without brackets "
            "is read as d_k to the power 1, then divided by 2 (a power comes before a division). Bracket "
            f"the exponent, or take a square root: √{d_k} = {root:g}",
            "power-precedence",
        )
    if np.allclose(divisors, divisors[0]):
        raise Mismatch(
            f"{what}: you divided by {c:g} whatever the input; here d_k = {d_k}, so divide by "
            f"√{d_k} = {root:g}. Read d_k from the size of the inputs, so that the scaling "
            "follows it",
            "fixed-number",
        )
    known = {  # other divisors seen, named after the fact
        "the fourth root of d_k, a square root taken twice": lambda T_q, T_k, d_k: d_k**0.25,
        "the square root of the number of entries of Q, T_q·d_k": lambda T_q, T_k, d_k: np.sqrt(T_q * d_k),
        "√(2·d_k)": lambda T_q, T_k, d_k: np.sqrt(2 * d_k),
    }
    which = next((f", {name}" for name, divisor in known.items() if everywhere(divisor)), "")
    raise Mismatch(
        f"{what}: you divided every score by the same number, {c:.4g}{which}, not by √d_k = {root:g}. "
        f"d_k = {d_k} is the length of each query and key vector, the size of their last axis",
        "wrong-divisor",
    )
