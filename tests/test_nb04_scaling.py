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
