"""helpers/toy_task.py: 03's previous-token task, its attention layer against loops, its gradients against finite
differences (with and without RoPE), and its training against a hand-written loop."""

import numpy as np
import pytest

from helpers import toy_task
from helpers.gradients import gradient_check, numerical_gradient
from helpers.losses import accuracy, softmax_cross_entropy
from helpers.positional import apply_rotary


def small_case(seed=0, d_k=4):
    X, _, targets = toy_task.previous_token_task(3, T=3, n_symbols=4, rng=seed)
    params = toy_task.init_attention_params(X.shape[-1], d_k, 4, rng=seed + 1, std=0.7)
    return X, targets, params


def layer_loop(params, X, scale, rotary):
    """The layer written with loops, one sequence, query and key at a time (RoPE applied to Q and K rows)."""
    logits, weights = [], []
    for x in X:
        Q, K, V = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
        if rotary:
            Q, K = apply_rotary(Q), apply_rotary(K)
        T = len(x)
        w = np.array([[np.exp(scale * Q[i] @ K[j]) for j in range(T)] for i in range(T)])
        w /= w.sum(axis=1, keepdims=True)
        weights.append(w)
        logits.append(np.array([sum(w[i, j] * V[j] for j in range(T)) for i in range(T)]))
    return np.array(logits), np.array(weights)


@pytest.mark.parametrize("rotary", [False, True])
def test_attention_layer_matches_loops(rotary):
    X, _, params = small_case()
    logits, weights = toy_task.attention_layer(params, X, scale=0.6, rotary=rotary)
    expected_logits, expected_weights = layer_loop(params, X, 0.6, rotary)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12)
    np.testing.assert_allclose(logits, expected_logits, rtol=1e-12)


@pytest.mark.parametrize("scale, rotary", [(1.0, False), (0.37, False), (1.0, True), (0.37, True)])
def test_attention_layer_gradients_against_finite_differences(scale, rotary):
    X, targets, params = small_case(seed=7)
    loss, grads, _ = toy_task.attention_layer_loss(params, X, targets, scale=scale, rotary=rotary)
    logits = toy_task.attention_layer(params, X, scale, rotary=rotary)[0]
    assert loss == pytest.approx(softmax_cross_entropy(logits, targets)[0])
    for name in params:
        numeric = numerical_gradient(
            lambda W, name=name: toy_task.attention_layer_loss({**params, name: W}, X, targets, scale, rotary=rotary)[
                0
            ],
            params[name],
        )
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-9)


def test_the_rotary_gradient_is_not_the_plain_one():
    # the check above can fail: 03's gradient (no rotation back) is far from the rotary loss's
    X, targets, params = small_case(seed=7)
    _, plain, _ = toy_task.attention_layer_loss(params, X, targets)
    errors = gradient_check(lambda p: toy_task.attention_layer_loss(p, X, targets, rotary=True)[0], params, plain)
    assert errors["W_q"] > 0.05 and errors["W_k"] > 0.05 and errors["W_v"] > 1e-3


def test_attention_layer_keeps_float32():
    X, targets, params = small_case()
    params32 = {name: W.astype(np.float32) for name, W in params.items()}
    for rotary in (False, True):
        loss, grads, weights = toy_task.attention_layer_loss(params32, X.astype(np.float32), targets, rotary=rotary)
        assert loss.dtype == np.float32 and weights.dtype == np.float32
        assert all(g.dtype == np.float32 for g in grads.values())


def test_attention_layer_rejects_mismatched_shapes():
    X, targets, params = small_case()
    with pytest.raises(ValueError, match=r"X has shape \(3, 3, 7\)"):
        toy_task.attention_layer({**params, "W_k": np.zeros((7, 5))}, X)
    with pytest.raises(ValueError, match="W_v"):
        toy_task.attention_layer({"W_q": params["W_q"], "W_k": params["W_k"]}, X)
    with pytest.raises(ValueError, match="dimension"):
        toy_task.attention_layer(params, X[0])
    odd = toy_task.init_attention_params(7, 3, 4)
    toy_task.attention_layer(odd, X)  # an odd d_k is fine without RoPE
    with pytest.raises(ValueError, match=r"d_k must be even.*\(7, 3\)"):
        toy_task.attention_layer_loss(odd, X, targets, rotary=True)


def test_previous_token_task_properties():
    X, symbols, targets = toy_task.previous_token_task(50, T=5, n_symbols=7, rng=0)
    assert X.shape == (50, 5, 12) and symbols.shape == targets.shape == (50, 5)
    for row in symbols:
        assert len(set(row.tolist())) == 5  # distinct symbols in each sequence
    for t in range(5):
        np.testing.assert_array_equal(targets[:, t], symbols[:, t - 1])  # t = 0 wraps to the last token
    np.testing.assert_array_equal(X[:, :, :7].argmax(-1), symbols)
    assert np.all(X[:, :, :7].sum(-1) == 1) and np.all(X.sum(-1) == 2)
    np.testing.assert_array_equal(X[:, :, 7:], np.broadcast_to(np.eye(5), (50, 5, 5)))
    assert np.unique(symbols).tolist() == list(range(7))


def test_previous_token_task_is_reproducible():
    a = toy_task.previous_token_task(20, rng=5)
    b = toy_task.previous_token_task(20, rng=5)
    c = toy_task.previous_token_task(20, rng=6)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], c[1])


def test_previous_token_task_rejects_bad_sizes():
    with pytest.raises(ValueError, match="distinct"):
        toy_task.previous_token_task(4, T=9, n_symbols=8)
    with pytest.raises(ValueError, match="n_sequences"):
        toy_task.previous_token_task(0)
    with pytest.raises(TypeError, match="T"):
        toy_task.previous_token_task(3, T=2.5)


def test_parameter_free_attention_fails_and_training_solves_the_task():
    X, symbols, targets = toy_task.previous_token_task(64, rng=0)
    X_test, symbols_test, targets_test = toy_task.previous_token_task(500, rng=1)
    d_model, n_symbols = X.shape[-1], 8
    params = {"W_q": np.eye(d_model), "W_k": np.eye(d_model), "W_v": np.eye(d_model, n_symbols)}
    logits, weights = toy_task.attention_layer(params, X_test)
    np.testing.assert_array_equal(logits.argmax(-1), symbols_test)  # every token outputs its own symbol
    assert accuracy(logits, targets_test) == 0.0
    losses = toy_task.train_attention_layer(params, X, targets, steps=200, lr=2.0)
    assert losses[-1] < 0.1 * losses[0]
    logits, weights = toy_task.attention_layer(params, X_test)
    assert accuracy(logits, targets_test) > 0.99
    previous = np.roll(np.arange(6), 1)
    assert np.mean(weights[:, np.arange(6), previous]) > 0.9


@pytest.mark.parametrize("rotary", [False, True])
def test_training_equals_a_hand_written_loop(rotary):
    X, targets, params = small_case(seed=2)
    manual = {name: W.copy() for name, W in params.items()}
    manual_losses = []
    for _ in range(5):
        loss, grads, _ = toy_task.attention_layer_loss(manual, X, targets, scale=0.5, rotary=rotary)
        manual_losses.append(float(loss))
        for name in manual:
            manual[name] = manual[name] - 0.3 * grads[name]
    losses = toy_task.train_attention_layer(params, X, targets, steps=5, lr=0.3, scale=0.5, rotary=rotary)
    np.testing.assert_allclose(losses, manual_losses, rtol=1e-12)
    for name in params:
        np.testing.assert_allclose(params[name], manual[name], rtol=1e-12)


def test_training_prints_progress_at_fixed_steps(capsys):
    X, targets, params = small_case()
    toy_task.train_attention_layer(params, X, targets, steps=7, lr=0.1, log_every=3)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["0", "3", "6"]
