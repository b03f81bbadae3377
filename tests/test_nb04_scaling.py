"""What 04_scaling adds: the d_k / temperature explorer's numbers, and the exercises' answers and messages."""

import numpy as np
import pytest
from _answers import mistake_cases, reads_as_meant, solution

from helpers import checks, scaled_dot_product_attention, softmax


def test_scaling_weights_is_softmax_of_the_scaled_scores():
    widgets = pytest.importorskip("helpers.widgets")
    rng = np.random.default_rng(0)
    q, K = rng.standard_normal(1024), rng.standard_normal((8, 1024))
    for d_k in (1, 64, 1024):
        raw = K[:, :d_k] @ q[:d_k]
        weights, h = widgets.scaling_weights(d_k, temperature=2.0, scaled=False)
        np.testing.assert_allclose(weights, softmax(raw / 2.0))
        weights, h = widgets.scaling_weights(d_k, temperature=2.0, scaled=True)
        np.testing.assert_allclose(weights, softmax(raw / np.sqrt(d_k) / 2.0))
        assert h == pytest.approx(-np.sum(weights * np.log(weights)))
    # dividing by sqrt(d_k) is the same as a temperature of sqrt(d_k)
    np.testing.assert_allclose(widgets.scaling_weights(256, 16.0)[0], widgets.scaling_weights(256, 1.0, True)[0])
    with pytest.raises(ValueError, match="d_k"):
        widgets.scaling_weights(2048)


def test_scaled_scores_solution_gives_the_helpers_attention_weights(rng):
    Q, K, V = rng.normal(size=(5, 32)), rng.normal(size=(7, 32)), rng.normal(size=(7, 3))
    _, weights = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(softmax(solution("scaled_scores")(Q, K)), weights)


def test_score_variance_solution_predicts_a_measurement_the_check_does_not_make(rng):
    d_k, sigma_q, sigma_k = 32, 0.7, 1.8
    q, k = rng.normal(0, sigma_q, (20_000, d_k)), rng.normal(0, sigma_k, (20_000, d_k))
    assert solution("score_variance")(d_k, sigma_q, sigma_k) == pytest.approx(np.var(np.sum(q * k, axis=-1)), rel=0.05)


# each registered mistake, and words its message must contain: what the learner did, and what it should be
MESSAGES = {
    "scaled_scores": {
        "divided-by-d-k": ["you divided the scores by d_k = 16; divide by its square root, √16 = 4"],
        "not-scaled": ["the scores are not scaled; divide every score by √d_k = 4"],
        "number-of-queries": ["you divided by √3, the square root of the number of queries"],
        "number-of-keys": ["you divided by √5, the square root of the number of keys"],
        "fixed-number": ["you divided by 8 whatever the input; here d_k = 16, so divide by √16 = 4"],
        "keys-as-rows": ["has shape (5, 3), one row per key: you multiplied K by the transpose of Q"],
        "multiplied": ["you multiplied the scores by √d_k = 4; divide them by it"],
        "power-precedence": ["you divided by 32, which is 2·d_k: a power of 1/2 written without brackets"],
        "wrong-divisor": [
            "you divided every score by the same number, 6.928, the square root of the number of entries of Q"
        ],
        "softmax-applied": ["your scores are already weights (each row sums to 1)"],
    },
    "score_variance": {
        "unit-variances": [
            "you predicted 16, and 10,000 random pairs measure 582.5. Your d_k holds when both standard "
            "deviations are 1"
        ],
        "sigmas-not-squared": [
            "You multiplied d_k by σ_q·σ_k, the standard deviations; a variance is a standard deviation squared"
        ],
        "standard-deviation": ["Your number is the standard deviation of the score"],
        "one-product": ["That is the variance of one product q_c·k_c; the score adds up d_k = 64 independent products"],
        "variances-added": ["You added the variances of q_c and k_c"],
    },
}


@pytest.mark.parametrize(("name", "code"), mistake_cases(MESSAGES))
def test_each_mistake_reads_as_meant(name, code):
    reads_as_meant(MESSAGES, name, code)


def test_scaled_scores_names_the_wrong_divisors_in_any_spelling():
    """The same mistakes written another way, e.g. with the shapes unpacked, get the same names."""
    cases = {
        "number-of-queries": lambda Q, K: Q @ K.T / np.sqrt(len(Q)),
        "number-of-keys": lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]),
        "fixed-number": lambda Q, K: Q @ K.T / 64,
        "divided-by-d-k": lambda Q, K: Q @ K.T / K.shape[1],
    }
    for code, answer in cases.items():
        assert checks.scaled_scores(answer).mistake == code


def test_scaled_scores_names_a_divisor_from_every_case():
    """With T_k = 4 = √16 a division by the number of keys, or by a hard-coded 4, passed case 1."""
    named = {
        "number-of-keys": (lambda Q, K: Q @ K.T / len(K), "you divided by 5, the number of keys"),
        "fixed-number": (
            lambda Q, K: Q @ K.T / 4,
            "you divided by 4 whatever the input; here d_k = 64, so divide by √64 = 8",
        ),
        "wrong-divisor": (
            lambda Q, K: Q @ K.T / np.sqrt(np.sqrt(Q.shape[-1])),
            "you divided every score by the same number, 2, the fourth root of d_k",
        ),
        "power-precedence": (lambda Q, K: Q @ K.T / (Q.shape[-1] ** 1 / 2), "you divided by 8, which is d_k/2"),
        "number-of-queries": (lambda Q, K: Q @ K.T / len(Q), "you divided by 3, the number of queries"),
    }
    for code, (answer, words) in named.items():
        result = checks.scaled_scores(answer)
        assert result.mistake == code and words in result.message, result.message
    float32 = checks.scaled_scores(
        lambda Q, K: (Q.astype(np.float32) @ K.T.astype(np.float32)) / np.float32(np.sqrt(Q.shape[-1]))
    )
    assert float32.status == checks.CORRECT, float32.message


def test_score_variance_says_which_standard_deviation_is_not_squared():
    """d_k·σ_q·σ_k² must not be told both were unsquared, on a case with σ_k = 1."""
    result = checks.score_variance(lambda d_k, sigma_q, sigma_k: d_k * sigma_q * sigma_k**2)
    assert result.mistake == "sigmas-not-squared" and "You squared σ_k but not σ_q" in result.message
    result = checks.score_variance(lambda d_k, sigma_q, sigma_k: d_k * sigma_q**2 * sigma_k)
    assert result.mistake == "sigmas-not-squared" and "You squared σ_q but not σ_k" in result.message


def test_score_variance_reads_any_single_number_and_refuses_the_rest():
    assert checks.score_variance(lambda d_k, sigma_q, sigma_k: np.array([d_k * sigma_q**2 * sigma_k**2]))
    assert checks.score_variance(lambda d_k, sigma_q, sigma_k: np.float32(d_k * sigma_q**2 * sigma_k**2))
    result = checks.score_variance(lambda d_k, sigma_q, sigma_k: (d_k, sigma_q))
    assert result.mistake == "wrong-shape" and "should be one number, got an array of shape (2,)" in result.message
    result = checks.score_variance(lambda d_k, sigma_q, sigma_k: d_k + 1j)
    assert result.mistake == "not-an-array" and "one real number" in result.message
    result = checks.score_variance(lambda d_k, sigma_q, sigma_k: 3 * d_k)
    assert result.mistake == "wrong-values"
    assert "you predicted 3, and 10,000 random pairs measure 1.006" in result.message
