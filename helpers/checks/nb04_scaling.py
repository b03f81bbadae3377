"""The exercises of 04_scaling."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close


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
    hint2="Each product q_c·k_c has mean 0, so its variance is the mean of its square: the mean of q_c² times "
          "the mean of k_c², since q_c and k_c are independent. For a number with mean 0 and standard deviation σ, "
          "the mean of its square is σ². The score adds d_k such products, so it adds d_k equal variances. Return "
          "the variance itself, not its square root.",
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
    for d_k, sigma_q, sigma_k in ((1, 1.0, 1.0), (64, 1.0, 1.0), (16, 2.0, 1.0), (256, 0.5, 3.0)):
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
            raise Mismatch(f"{what}: {said}. Your d_k holds when both standard deviations are 1; each product "
                           "q_c·k_c has variance σ_q²·σ_k², so σ_q and σ_k belong in the answer",
                           "unit-variances")
        if predicts(d_k * sigma_q * sigma_k):
            raise Mismatch(f"{what}: {said}. You multiplied d_k by σ_q·σ_k, the standard deviations; a variance is "
                           "a standard deviation squared, so each product q_c·k_c has variance σ_q²·σ_k²",
                           "sigmas-not-squared")
        if predicts(np.sqrt(d_k) * sigma_q * sigma_k):
            raise Mismatch(f"{what}: {said}. Your number is the standard deviation of the score, the typical size "
                           "of q·k; the exercise asks for its variance, the square of that", "standard-deviation")
        if predicts(sigma_q**2 * sigma_k**2):
            raise Mismatch(f"{what}: {said}. That is the variance of one product q_c·k_c; the score adds up "
                           f"d_k = {d_k} independent products, and their variances add up too", "one-product")
        if predicts(d_k * (sigma_q**2 + sigma_k**2)):
            raise Mismatch(f"{what}: {said}. You added the variances of q_c and k_c; for a product of two "
                           "independent numbers with mean 0 the variances multiply: the mean of q_c²·k_c² is the "
                           "mean of q_c² times the mean of k_c²",
                           "variances-added")
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
    },
)
def scaled_scores(answer):
    rng = check_rng()
    for T_q, T_k, d_k in ((3, 4, 16), (2, 5, 64)):
        Q, K = rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
        what = f"scaled_scores(Q, K) for Q ({T_q}, {d_k}) and K ({T_k}, {d_k})"
        got = as_array(call(answer, Q, K), what)
        raw = Q @ K.T  # (T_q, T_k)
        if got.shape == (T_k, T_q) and np.allclose(got, raw.T / np.sqrt(d_k)):
            raise Mismatch(f"{what} has shape ({T_k}, {T_q}), one row per key: you multiplied K by the transpose "
                           f"of Q. The rows are the queries: Q times the transpose of K, ({T_q}, {T_k})",
                           "keys-as-rows")
        if got.shape == raw.shape and not np.iscomplexobj(got):
            _name_the_divisor(got, raw, what, T_q, T_k, d_k)
        expect_close(got, raw / np.sqrt(d_k), what)


def _name_the_divisor(got, raw, what, T_q, T_k, d_k):
    """Raise Mismatch when `got` is the raw scores divided by a likely wrong number. Shapes: got, raw (T_q, T_k)."""
    if np.allclose(got, raw / d_k):
        raise Mismatch(f"{what}: you divided the scores by d_k = {d_k}; divide by its square root, "
                       f"√{d_k} = {np.sqrt(d_k):g}. Dividing by d_k shrinks the scores' variance to 1/d_k "
                       "instead of bringing it to 1", "divided-by-d-k")
    if np.allclose(got, raw):
        raise Mismatch(f"{what}: the scores are not scaled; divide every score by √d_k = {np.sqrt(d_k):g}, "
                       "so that their variance is about 1 whatever d_k is", "not-scaled")
    if np.allclose(got, raw / np.sqrt(T_q)):
        raise Mismatch(f"{what}: you divided by √{T_q}, the square root of the number of queries (the rows of Q); "
                       f"d_k = {d_k} is the length of each query and key vector, the size of the last axis",
                       "number-of-queries")
    if np.allclose(got, raw / np.sqrt(T_k)):
        raise Mismatch(f"{what}: you divided by √{T_k}, the square root of the number of keys (the rows of K); "
                       f"d_k = {d_k} is the length of each query and key vector, the size of the last axis",
                       "number-of-keys")
    for fixed in (8, 64):  # √64 and 64 written as numbers: right for one d_k only
        if np.sqrt(d_k) != fixed and d_k != fixed and np.allclose(got, raw / fixed):
            raise Mismatch(f"{what}: you divided by {fixed} whatever the input; here d_k = {d_k}, so divide by "
                           f"√{d_k} = {np.sqrt(d_k):g}. Read d_k from the size of the inputs, so that the scaling "
                           "follows it", "fixed-number")
