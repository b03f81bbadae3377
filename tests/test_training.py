"""helpers/training.py: losses and gradients against loops and finite differences, the optimisers
against closed forms, the toy task's properties; plus the compute functions of the 03/04 widgets."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import training as tr


def _central_difference(f, x, eps=1e-6):
    """An independent finite-difference gradient (no shared code with tr.numerical_gradient)."""
    grad = np.zeros(x.size)
    flat = x.ravel()
    for i in range(flat.size):
        step = np.zeros(flat.size)
        step[i] = eps
        grad[i] = (f((flat + step).reshape(x.shape)) - f((flat - step).reshape(x.shape))) / (2 * eps)
    return grad.reshape(x.shape)


# --- the finite-difference gradient itself ------------------------------------------------


def test_numerical_gradient_matches_closed_form():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    x = rng.normal(size=4)
    grad = tr.numerical_gradient(lambda v: v @ A @ v + np.sin(v).sum(), x)
    np.testing.assert_allclose(grad, (A + A.T) @ x + np.cos(x), atol=1e-8)


def test_numerical_gradient_of_a_matrix_and_leaves_input_alone():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(3, 2))
    before = W.copy()
    grad = tr.numerical_gradient(lambda M: np.sum(M**3), W)
    np.testing.assert_allclose(grad, 3 * W**2, atol=1e-7)
    np.testing.assert_array_equal(W, before)


def test_relative_error():
    assert tr.relative_error([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert tr.relative_error([0.0], [0.0]) == 0.0
    assert tr.relative_error([1.0], [-1.0]) == pytest.approx(1.0)
    assert tr.relative_error([1.1], [1.0]) == pytest.approx(0.1 / 2.1)
    with pytest.raises(ValueError, match="shape"):
        tr.relative_error(np.ones(2), np.ones(3))


# --- losses -------------------------------------------------------------------------------


def test_softmax_cross_entropy_matches_loop():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2, 3, 5)) * 3
    targets = rng.integers(0, 5, size=(2, 3))
    expected = 0.0
    for b in range(2):
        for t in range(3):
            z = logits[b, t]
            expected -= np.log(np.exp(z[targets[b, t]]) / np.exp(z).sum())
    loss, _ = tr.softmax_cross_entropy(logits, targets)
    assert loss == pytest.approx(expected / 6, rel=1e-12)


def test_softmax_cross_entropy_gradient_against_finite_differences():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(4, 6))
    targets = rng.integers(0, 6, size=4)
    _, d_logits = tr.softmax_cross_entropy(logits, targets)
    numeric = _central_difference(lambda z: tr.softmax_cross_entropy(z, targets)[0], logits)
    np.testing.assert_allclose(d_logits, numeric, atol=1e-8)


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    logits = np.array([[1000.0, 0.0, -1000.0]])
    loss, d_logits = tr.softmax_cross_entropy(logits, np.array([1]))
    assert loss == pytest.approx(1000.0)
    np.testing.assert_allclose(d_logits, [[1.0, -1.0, 0.0]], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(2, 7), st.integers(0, 10_000))
def test_cross_entropy_gradient_rows_sum_to_zero(n, classes, seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes)) * 5
    loss, d_logits = tr.softmax_cross_entropy(logits, rng.integers(0, classes, size=n))
    assert loss >= 0
    np.testing.assert_allclose(d_logits.sum(axis=-1), 0, atol=1e-12)


def test_cross_entropy_keeps_float32():
    logits = np.ones((2, 3), dtype=np.float32)
    loss, d_logits = tr.softmax_cross_entropy(logits, np.array([0, 2]))
    assert loss.dtype == np.float32 and d_logits.dtype == np.float32
    assert loss == pytest.approx(np.log(3), rel=1e-6)


def test_bad_targets_are_rejected():
    logits = np.zeros((2, 3))
    with pytest.raises(TypeError, match="integer"):
        tr.softmax_cross_entropy(logits, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        tr.softmax_cross_entropy(logits, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        tr.softmax_cross_entropy(logits, np.array([0, 3]))


def test_mean_squared_error_value_and_gradient():
    rng = np.random.default_rng(4)
    p, t = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    loss, d_p = tr.mean_squared_error(p, t)
    assert loss == pytest.approx(np.mean((p - t) ** 2))
    np.testing.assert_allclose(d_p, _central_difference(lambda x: tr.mean_squared_error(x, t)[0], p), atol=1e-8)
    with pytest.raises(ValueError, match="shape"):
        tr.mean_squared_error(p, t[:2])


def test_accuracy():
    logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    assert tr.accuracy(logits, np.array([1, 0, 0, 0])) == 0.75


# --- the attention layer and its gradients ------------------------------------------------


def _small_case(seed=0, d_k=4, scale=1.0):
    X, _, targets = tr.previous_token_task(3, T=3, n_symbols=4, rng=seed)
    params = tr.init_attention_params(X.shape[-1], d_k, 4, rng=seed + 1, std=0.7)
    return X, targets, params


def test_attention_layer_matches_loops():
    X, _, params = _small_case()
    logits, weights = tr.attention_layer(params, X, scale=0.6)
    B, T, _ = X.shape
    for b in range(B):
        Q, K, V = X[b] @ params["W_q"], X[b] @ params["W_k"], X[b] @ params["W_v"]
        for i in range(T):
            scores = np.array([0.6 * sum(Q[i, c] * K[j, c] for c in range(Q.shape[1])) for j in range(T)])
            w = np.exp(scores) / np.exp(scores).sum()
            np.testing.assert_allclose(weights[b, i], w, rtol=1e-12)
            np.testing.assert_allclose(logits[b, i], sum(w[j] * V[j] for j in range(T)), rtol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 0.37])
def test_attention_layer_gradients_against_finite_differences(scale):
    X, targets, params = _small_case(seed=7, scale=scale)
    loss, grads, _ = tr.attention_layer_loss(params, X, targets, scale=scale)
    assert loss == pytest.approx(tr.softmax_cross_entropy(tr.attention_layer(params, X, scale)[0], targets)[0])
    for name in params:
        numeric = _central_difference(
            lambda W, name=name: tr.attention_layer_loss({**params, name: W}, X, targets, scale)[0], params[name])
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-9)


def test_gradient_check_passes_a_correct_gradient_and_catches_a_wrong_one():
    X, targets, params = _small_case(seed=3)
    _, grads, _ = tr.attention_layer_loss(params, X, targets)
    errors = tr.gradient_check(lambda p: tr.attention_layer_loss(p, X, targets)[0], params, grads)
    assert set(errors) == {"W_q", "W_k", "W_v"}
    assert max(errors.values()) < 1e-7
    wrong = {**grads, "W_k": grads["W_k"].T.reshape(grads["W_k"].shape)}  # a plausible bug: a transposed gradient
    bad = tr.gradient_check(lambda p: tr.attention_layer_loss(p, X, targets)[0], params, wrong)
    assert bad["W_k"] > 1e-2 and bad["W_q"] < 1e-7


def test_gradient_check_rejects_missing_gradients():
    with pytest.raises(ValueError, match="W_v"):
        tr.gradient_check(lambda p: 0.0, {"W_v": np.zeros(2)}, {})


def test_attention_layer_keeps_float32():
    X, targets, params = _small_case()
    params32 = {name: W.astype(np.float32) for name, W in params.items()}
    loss, grads, weights = tr.attention_layer_loss(params32, X.astype(np.float32), targets)
    assert loss.dtype == np.float32 and weights.dtype == np.float32
    assert all(g.dtype == np.float32 for g in grads.values())


def test_attention_layer_rejects_mismatched_shapes():
    X, targets, params = _small_case()
    with pytest.raises(ValueError, match=r"X has shape \(3, 3, 7\)"):
        tr.attention_layer({**params, "W_k": np.zeros((7, 5))}, X)
    with pytest.raises(ValueError, match="W_v"):
        tr.attention_layer({"W_q": params["W_q"], "W_k": params["W_k"]}, X)
    with pytest.raises(ValueError, match="dimension"):
        tr.attention_layer(params, X[0])


# --- optimisers -------------------------------------------------------------------------


def test_sgd_step_closed_form():
    params = {"W": np.array([1.0, -2.0]), "b": np.array([[0.5]])}
    tr.sgd_step(params, {"W": np.array([0.5, 1.0]), "b": np.array([[-2.0]])}, lr=0.1)
    np.testing.assert_allclose(params["W"], [0.95, -2.1])
    np.testing.assert_allclose(params["b"], [[0.7]])
    with pytest.raises(ValueError, match="shape"):
        tr.sgd_step(params, {"W": np.zeros(3), "b": np.zeros((1, 1))}, lr=0.1)


def test_adam_two_steps_closed_form():
    w0 = np.array([1.0, -1.0, 0.5])
    g1, g2 = np.array([0.2, -3.0, 1e-3]), np.array([-0.1, -1.0, 2e-3])
    params = {"w": w0.copy()}
    opt = tr.Adam(params, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
    opt.step({"w": g1})
    # first step: m_hat = g1, v_hat = g1^2, so every entry moves by lr * sign(g1) (up to eps)
    np.testing.assert_allclose(params["w"], w0 - 0.01 * g1 / (np.abs(g1) + 1e-8), rtol=1e-12)
    opt.step({"w": g2})
    m = 0.9 * (0.1 * g1) + 0.1 * g2
    v = 0.999 * (0.001 * g1**2) + 0.001 * g2**2
    m_hat, v_hat = m / (1 - 0.9**2), v / (1 - 0.999**2)
    expected = w0 - 0.01 * g1 / (np.abs(g1) + 1e-8) - 0.01 * m_hat / (np.sqrt(v_hat) + 1e-8)
    np.testing.assert_allclose(params["w"], expected, rtol=1e-12)


def test_adam_minimises_a_quadratic():
    target = np.array([3.0, -2.0])
    params = {"w": np.zeros(2)}
    opt = tr.Adam(params, lr=0.1)
    for _ in range(500):
        opt.step({"w": 2 * (params["w"] - target)})
    np.testing.assert_allclose(params["w"], target, atol=1e-2)


# --- the toy task ------------------------------------------------------------------------


def test_previous_token_task_properties():
    X, symbols, targets = tr.previous_token_task(50, T=5, n_symbols=7, rng=0)
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
    a = tr.previous_token_task(20, rng=5)
    b = tr.previous_token_task(20, rng=5)
    c = tr.previous_token_task(20, rng=6)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], c[1])


def test_previous_token_task_rejects_bad_sizes():
    with pytest.raises(ValueError, match="distinct"):
        tr.previous_token_task(4, T=9, n_symbols=8)
    with pytest.raises(ValueError, match="n_sequences"):
        tr.previous_token_task(0)
    with pytest.raises(TypeError, match="T"):
        tr.previous_token_task(3, T=2.5)


def test_parameter_free_attention_fails_and_training_solves_the_task():
    X, symbols, targets = tr.previous_token_task(64, rng=0)
    X_test, symbols_test, targets_test = tr.previous_token_task(500, rng=1)
    d_model, n_symbols = X.shape[-1], 8
    params = {"W_q": np.eye(d_model), "W_k": np.eye(d_model), "W_v": np.eye(d_model, n_symbols)}
    logits, weights = tr.attention_layer(params, X_test)
    np.testing.assert_array_equal(logits.argmax(-1), symbols_test)  # every token outputs its own symbol
    assert tr.accuracy(logits, targets_test) == 0.0
    losses = tr.train(params, X, targets, steps=200, lr=2.0)
    assert losses[-1] < 0.1 * losses[0]
    logits, weights = tr.attention_layer(params, X_test)
    assert tr.accuracy(logits, targets_test) > 0.99
    previous = np.roll(np.arange(6), 1)
    assert np.mean(weights[:, np.arange(6), previous]) > 0.9


def test_train_equals_a_hand_written_loop():
    X, targets, params = _small_case(seed=2)
    manual = {name: W.copy() for name, W in params.items()}
    manual_losses = []
    for _ in range(5):
        loss, grads, _ = tr.attention_layer_loss(manual, X, targets, scale=0.5)
        manual_losses.append(float(loss))
        for name in manual:
            manual[name] = manual[name] - 0.3 * grads[name]
    losses = tr.train(params, X, targets, steps=5, lr=0.3, scale=0.5)
    np.testing.assert_allclose(losses, manual_losses, rtol=1e-12)
    for name in params:
        np.testing.assert_allclose(params[name], manual[name], rtol=1e-12)


def test_train_prints_progress_at_fixed_steps(capsys):
    X, targets, params = _small_case()
    tr.train(params, X, targets, steps=7, lr=0.1, log_every=3)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["0", "3", "6"]
