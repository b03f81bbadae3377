"""What 04_scaling adds: the d_k / temperature explorer's numbers."""

import numpy as np
import pytest

from helpers import softmax


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


def test_scaled_scores_check_names_the_wrong_divisors():
    from helpers import checks

    cases = {
        "number of queries": lambda Q, K: Q @ K.T / np.sqrt(Q.shape[0]),
        "number of keys": lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]),
        "you divided by 8, a fixed number": lambda Q, K: Q @ K.T / np.sqrt(64),
        "you divided by d_k; divide by its square root": lambda Q, K: Q @ K.T / Q.shape[-1],
        "the scores are not scaled": lambda Q, K: Q @ K.T,
    }
    for words, answer in cases.items():
        result = checks.scaled_scores(answer)
        assert result.status == checks.INCORRECT and words in result.message, result.message


def test_score_variance_check_says_unit_variances_only():
    from helpers import checks

    result = checks.score_variance(lambda d_k, sigma_q, sigma_k: d_k)
    assert result.status == checks.INCORRECT and "that holds for unit variances only" in result.message
