"""helpers.position_task: 03's previous-token task with no positions, sinusoidal encodings and RoPE."""

import numpy as np
import pytest

from helpers import softmax, training
from helpers.position_task import (
    position_experiment,
    predict,
    rotary_attention_layer,
    rotary_attention_layer_loss,
    symbol_vectors,
    task_inputs,
    train_with_positions,
)
from helpers.positional import apply_rotary, sinusoidal_positional_encoding


@pytest.fixture(scope="module")
def accuracies():
    return position_experiment()


def test_without_positions_the_task_stays_at_chance(accuracies):
    # the previous symbol is one of the other 5, equally likely: no order-blind model beats 1/5 on average
    assert 0.15 < accuracies["none"] < 0.25


@pytest.mark.parametrize("kind", ["one-hot", "sinusoidal", "rope"])
def test_with_positions_the_task_is_learned(accuracies, kind):
    assert accuracies[kind] > 0.95


def test_the_experiment_runs_the_kinds_asked_for():
    assert set(position_experiment(("none",), n_test=50, steps=5)) == {"none"}


def small_case(seed=5):
    """2 sequences of 3 tokens from 3 symbols in 4 dimensions, and random weights with d_k = 4."""
    _, symbols, targets = training.previous_token_task(2, T=3, n_symbols=3, rng=seed)
    X = task_inputs(symbols, symbol_vectors(3, 4, rng=seed), "none")  # (2, 3, 4)
    params = training.init_attention_params(4, 4, 3, rng=seed + 1, std=1.0)
    return X, targets, params


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_rotary_gradients_match_finite_differences(seed):
    X, targets, params = small_case(seed)
    _, grads, _ = rotary_attention_layer_loss(params, X, targets)
    errors = training.gradient_check(lambda p: rotary_attention_layer_loss(p, X, targets)[0], params, grads)
    assert max(errors.values()) < 1e-7, errors


def test_rotary_gradients_need_the_rotation_back():
    # 03's gradient (no rotation) is far from the rotary loss's numerical gradient: the check can fail
    X, targets, params = small_case()
    _, grads_without, _ = training.attention_layer_loss(params, X, targets)
    errors = training.gradient_check(lambda p: rotary_attention_layer_loss(p, X, targets)[0], params, grads_without)
    assert errors["W_q"] > 0.05 and errors["W_k"] > 0.05


def test_rotary_layer_rotates_q_and_k_only(rng):
    X = rng.normal(size=(2, 5, 6))
    params = training.init_attention_params(6, 4, 3, rng=1)
    Q = apply_rotary(X @ params["W_q"])  # (2, 5, 4)
    K = apply_rotary(X @ params["W_k"])
    weights = softmax(Q @ np.swapaxes(K, -1, -2))  # (2, 5, 5), scale 1 as in 03
    logits, weights_layer = rotary_attention_layer(params, X)
    np.testing.assert_allclose(weights_layer, weights, atol=1e-12)
    np.testing.assert_allclose(logits, weights @ (X @ params["W_v"]), atol=1e-12)
    loss, _, weights_loss = rotary_attention_layer_loss(params, X, np.zeros((2, 5), dtype=int))
    np.testing.assert_allclose(weights_loss, weights, atol=1e-12)
    assert loss == pytest.approx(training.softmax_cross_entropy(logits, np.zeros((2, 5), dtype=int))[0])


def test_task_inputs():
    E = symbol_vectors(4, 6, rng=0)
    symbols = np.array([[0, 2, 1], [3, 1, 0]])
    np.testing.assert_array_equal(task_inputs(symbols, E, "none"), E[symbols])
    np.testing.assert_array_equal(task_inputs(symbols, E, "rope"), E[symbols])
    np.testing.assert_allclose(task_inputs(symbols, E, "sinusoidal"), E[symbols] + sinusoidal_positional_encoding(3, 6))
    one_hot = task_inputs(symbols, E, "one-hot")
    assert one_hot.shape == (2, 3, 9)
    np.testing.assert_array_equal(one_hot[1, 2], np.concatenate([E[0], [0, 0, 1]]))


def test_symbol_vectors_are_seeded_orthonormal_and_dense():
    E = symbol_vectors(8, 16, rng=3)
    np.testing.assert_array_equal(E, symbol_vectors(8, 16, rng=3))
    np.testing.assert_allclose(E @ E.T, np.eye(8), atol=1e-12)
    assert (np.abs(E) > 1e-3).mean() > 0.9  # spread over every dimension, unlike a one-hot
    with pytest.raises(ValueError, match="d_model >= n_symbols"):
        symbol_vectors(9, 8)


def test_training_lowers_the_loss_and_predict_uses_the_kinds_layer():
    _, symbols, targets = training.previous_token_task(16, T=4, n_symbols=5, rng=0)
    X = task_inputs(symbols, symbol_vectors(5, 8), "rope")
    params, losses = train_with_positions("rope", X, targets, 5, d_k=8, steps=30)
    assert len(losses) == 30 and losses[-1] < losses[0]
    assert params["W_v"].shape == (8, 5)
    np.testing.assert_array_equal(predict("rope", params, X)[0], rotary_attention_layer(params, X)[0])
    np.testing.assert_array_equal(predict("none", params, X)[0], training.attention_layer(params, X)[0])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: task_inputs(np.zeros((2, 3), int), np.eye(3), "learned"), ValueError, r"kind must be one of"),
        (
            lambda: task_inputs(np.zeros(3, int), np.eye(3), "none"),
            ValueError,
            r"symbols must be integer .*shape \(3,\)",
        ),
        (lambda: task_inputs(np.zeros((1, 2)), np.eye(3), "none"), TypeError, r"symbols must be integer ids.*float64"),
        (lambda: task_inputs(np.full((1, 2), 3), np.eye(3), "none"), ValueError, r"symbols must lie in \[0, 3\)"),
        (lambda: train_with_positions("sin", np.ones((1, 2, 4)), np.zeros((1, 2), int), 2), ValueError, r"kind"),
        (
            lambda: rotary_attention_layer(training.init_attention_params(4, 3, 2), np.ones((1, 2, 4))),
            ValueError,
            r"d_k must be even.*\(4, 3\)",
        ),
        (lambda: rotary_attention_layer({"W_q": np.ones((4, 2))}, np.ones((1, 2, 4))), ValueError, r"missing"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
