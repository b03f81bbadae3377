"""helpers/gradients.py: the finite-difference gradient against closed forms, the gradient check on a right and a
wrong gradient, and the optimisers against closed forms."""

import numpy as np
import pytest

from helpers import gradients, toy_task


def test_numerical_gradient_matches_closed_form():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    x = rng.normal(size=4)
    grad = gradients.numerical_gradient(lambda v: v @ A @ v + np.sin(v).sum(), x)
    np.testing.assert_allclose(grad, (A + A.T) @ x + np.cos(x), atol=1e-8)


def test_numerical_gradient_of_a_matrix_and_leaves_input_alone():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(3, 2))
    before = W.copy()
    grad = gradients.numerical_gradient(lambda M: np.sum(M**3), W)
    np.testing.assert_allclose(grad, 3 * W**2, atol=1e-7)
    np.testing.assert_array_equal(W, before)


def test_relative_error():
    assert gradients.relative_error([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert gradients.relative_error([0.0], [0.0]) == 0.0
    assert gradients.relative_error([1.0], [-1.0]) == pytest.approx(1.0)
    assert gradients.relative_error([1.1], [1.0]) == pytest.approx(0.1 / 2.1)
    with pytest.raises(ValueError, match="shape"):
        gradients.relative_error(np.ones(2), np.ones(3))


def test_gradient_check_passes_a_correct_gradient_and_catches_a_wrong_one():
    X, _, targets = toy_task.previous_token_task(3, T=3, n_symbols=4, rng=3)
    params = toy_task.init_attention_params(X.shape[-1], 4, 4, rng=4, std=0.7)
    _, grads, _ = toy_task.attention_layer_loss(params, X, targets)
    errors = gradients.gradient_check(lambda p: toy_task.attention_layer_loss(p, X, targets)[0], params, grads)
    assert set(errors) == {"W_q", "W_k", "W_v"}
    assert max(errors.values()) < 1e-7
    wrong = {**grads, "W_k": grads["W_k"].T.reshape(grads["W_k"].shape)}  # a plausible bug: a transposed gradient
    bad = gradients.gradient_check(lambda p: toy_task.attention_layer_loss(p, X, targets)[0], params, wrong)
    assert bad["W_k"] > 1e-2 and bad["W_q"] < 1e-7


@pytest.mark.parametrize(
    "step",
    [
        lambda params, grads: gradients.gradient_check(lambda p: 0.0, params, grads),
        lambda params, grads: gradients.sgd_step(params, grads, lr=0.1),
        lambda params, grads: gradients.Adam(params).step(grads),
    ],
    ids=["gradient_check", "sgd_step", "Adam"],
)
def test_every_user_of_a_gradient_names_a_missing_or_misshapen_one(step):
    params = {"W": np.zeros((2, 3)), "b": np.zeros(3)}
    with pytest.raises(ValueError, match=r"grads has no entry 'b'; params has \['W', 'b'\]"):
        step(params, {"W": np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"grads\['W'\] has shape \(3, 2\) but params\['W'\] has shape \(2, 3\)"):
        step(params, {"W": np.zeros((3, 2)), "b": np.zeros(3)})
    np.testing.assert_array_equal(params["W"], 0)  # nothing moved


def test_sgd_step_closed_form():
    params = {"W": np.array([1.0, -2.0]), "b": np.array([[0.5]])}
    gradients.sgd_step(params, {"W": np.array([0.5, 1.0]), "b": np.array([[-2.0]])}, lr=0.1)
    np.testing.assert_allclose(params["W"], [0.95, -2.1])
    np.testing.assert_allclose(params["b"], [[0.7]])


def test_adam_two_steps_closed_form():
    w0 = np.array([1.0, -1.0, 0.5])
    g1, g2 = np.array([0.2, -3.0, 1e-3]), np.array([-0.1, -1.0, 2e-3])
    params = {"w": w0.copy()}
    opt = gradients.Adam(params, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
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
    opt = gradients.Adam(params, lr=0.1)
    for _ in range(500):
        opt.step({"w": 2 * (params["w"] - target)})
    np.testing.assert_allclose(params["w"], target, atol=1e-2)
