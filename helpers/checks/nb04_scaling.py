"""The exercises of 04_scaling."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close


@exercise(
    notebook="04_scaling",
    hint="Divide Q @ K.T by the square root of d_k, the length of each query and key: Q.shape[-1].",
    solution="""
        def scaled_scores(Q, K):
            d_k = Q.shape[-1]
            return Q @ K.T / np.sqrt(d_k)  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    """,
    wrong="""
        def scaled_scores(Q, K):
            d_k = Q.shape[-1]
            return Q @ K.T / d_k
    """,
)
def scaled_scores(answer):
    rng = check_rng()
    for T_q, T_k, d_k in ((3, 4, 16), (2, 5, 64)):
        Q, K = rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
        got = as_array(call(answer, Q, K), "scaled_scores(Q, K)")
        raw = Q @ K.T
        if got.shape == raw.shape and np.allclose(got, raw / d_k):
            raise Mismatch(f"for d_k={d_k} you divided by d_k; divide by its square root")
        if got.shape == raw.shape and np.allclose(got, raw):
            raise Mismatch(f"for d_k={d_k} the scores are not scaled: divide Q @ K.T by sqrt(d_k)")
        for wrong_divisor, what in ((T_q, f"Q.shape[0] = T_q = {T_q}, the number of queries"),
                                    (T_k, f"K.shape[0] = T_k = {T_k}, the number of keys")):
            if got.shape == raw.shape and np.allclose(got, raw / np.sqrt(wrong_divisor)):
                raise Mismatch(f"for d_k={d_k} you divided by the square root of {what}; d_k is the length of each "
                               "query and key, Q.shape[-1]")
        for fixed in (8, 64):  # sqrt(64) and 64 written as numbers: right for one d_k only
            if d_k != fixed**2 and d_k != fixed and got.shape == raw.shape and np.allclose(got, raw / fixed):
                raise Mismatch(f"for d_k={d_k} you divided by {fixed}, a fixed number: read d_k from the input "
                               "(Q.shape[-1]) so the scaling follows it")
        expect_close(got, raw / np.sqrt(d_k), f"scaled_scores(Q, K) for Q ({T_q}, {d_k}), K ({T_k}, {d_k})")


@exercise(
    notebook="04_scaling",
    hint="q·k is a sum of d_k independent products q_c * k_c. Each product has mean 0 and variance "
         "sigma_q**2 * sigma_k**2, and the variances of independent terms add up.",
    solution="""
        def score_variance(d_k, sigma_q, sigma_k):
            return d_k * sigma_q**2 * sigma_k**2
    """,
    wrong="""
        def score_variance(d_k, sigma_q, sigma_k):
            return d_k
    """,
)
def score_variance(answer):
    rng = check_rng()
    n_pairs = 10_000
    for d_k, sigma_q, sigma_k in ((1, 1.0, 1.0), (64, 1.0, 1.0), (16, 2.0, 1.0), (256, 0.5, 3.0)):
        q = rng.normal(0, sigma_q, (n_pairs, d_k))
        k = rng.normal(0, sigma_k, (n_pairs, d_k))
        measured = float(np.var(np.sum(q * k, axis=-1)))  # the check measures what you predict
        predicted = as_array(call(answer, d_k, sigma_q, sigma_k), "your prediction")
        if predicted.shape != ():
            raise Mismatch(f"return one number, got an array of shape {predicted.shape}")
        if d_k > 1 and (sigma_q, sigma_k) != (1.0, 1.0) and np.isclose(float(predicted), d_k):
            raise Mismatch(f"for sigma_q={sigma_q}, sigma_k={sigma_k} you predicted d_k = {d_k}: that holds for unit "
                           f"variances only; {n_pairs} random pairs measure {measured:.4g}")
        if not np.isclose(float(predicted), measured, rtol=0.1):
            raise Mismatch(f"for d_k={d_k}, sigma_q={sigma_q}, sigma_k={sigma_k} you predicted "
                           f"{float(predicted):.4g}, but {n_pairs} random pairs measure {measured:.4g}")
