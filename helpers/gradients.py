"""What the notebooks do with a gradient: check it against finite differences, then follow it downhill
(plain gradient descent, Adam). Parameters and gradients are dicts name -> array.

Adam, the optimiser of the models from 08 on, comes in 08_training_a_tiny_transformer.
Taught in 03_queries_keys_values (the gradient check, gradient descent).
"""

import numpy as np

from helpers._validate import as_float_array

__all__ = ["numerical_gradient", "relative_error", "gradient_check", "sgd_step", "Adam"]


# ---------------------------------------------------------------------------------------
# gradient check by central finite differences
# ---------------------------------------------------------------------------------------


def numerical_gradient(f, x, eps=1e-6):
    """The gradient of the scalar function f at x by central differences, entry by entry.

    Shapes: x (...) -> (...), float64. f(x) -> float is called 2 * x.size times.
    Math: df/dx_i ~ (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), error O(eps^2).
    """
    if not callable(f):
        raise TypeError(f"f must be a function of x returning a number, got {type(f).__name__}")
    x = np.array(as_float_array(x, "x", min_ndim=0), dtype=np.float64)  # a float64 copy we may perturb
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + eps
        f_plus = float(f(x.copy()))
        x[index] = original - eps
        f_minus = float(f(x.copy()))
        x[index] = original
        grad[index] = (f_plus - f_minus) / (2 * eps)
    return grad


def relative_error(a, b):
    """|a - b| / (|a| + |b|) with Euclidean norms over all entries; 0 when both are zero.

    Shapes: a (...), b (...) the same shape -> float.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"a has shape {a.shape} but b has shape {b.shape}")
    total = np.linalg.norm(a) + np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / total) if total > 0 else 0.0


def _check_grads(params, grads):
    """Raise unless grads has an array of the same shape for every parameter (naming the first that does not)."""
    for name, value in params.items():
        if name not in grads:
            raise ValueError(f"grads has no entry {name!r}; params has {sorted(params)}")
        if np.shape(grads[name]) != np.shape(value):
            raise ValueError(
                f"grads[{name!r}] has shape {np.shape(grads[name])} but params[{name!r}] has shape {np.shape(value)}"
            )


def gradient_check(loss_fn, params, grads, eps=1e-6):
    """Compare analytic gradients with central differences, one relative error per parameter.

    Shapes: params, grads dicts name -> arrays of matching shapes -> {name: float}.
    loss_fn(params) -> float. In float64 a correct gradient gives a relative error of about 1e-8 or less.
    """
    _check_grads(params, grads)
    errors = {}
    for name, value in params.items():
        numeric = numerical_gradient(lambda w, name=name: loss_fn({**params, name: w}), value, eps)
        errors[name] = relative_error(grads[name], numeric)
    return errors


# ---------------------------------------------------------------------------------------
# optimisers: update a dict of parameters in place
# ---------------------------------------------------------------------------------------


def sgd_step(params, grads, lr):
    """Plain gradient descent: W <- W - lr * dW for every parameter, in place.

    Shapes: params, grads dicts name -> arrays of matching shapes.
    """
    _check_grads(params, grads)
    for name in params:
        params[name] -= lr * grads[name]


class Adam:
    """Adam (Kingma & Ba, 2015): per-entry steps of about lr, scaled by running gradient statistics.

    Shapes: params, grads dicts name -> arrays of matching shapes.
    Math: m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;  W <- W - lr m_hat / (sqrt(v_hat) + eps)
          with m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t). step() updates `params` in place.
    Taught in 08_training_a_tiny_transformer (03 and 04 use plain gradient descent).
    """

    def __init__(self, params, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8):
        self.params, self.lr, self.beta1, self.beta2, self.eps = params, lr, beta1, beta2, eps
        self.m = {name: np.zeros_like(w) for name, w in params.items()}
        self.v = {name: np.zeros_like(w) for name, w in params.items()}
        self.t = 0

    def step(self, grads):
        """One step: every parameter moves by about lr against its gradient's running direction, in place."""
        _check_grads(self.params, grads)
        self.t += 1
        for name, w in self.params.items():
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * grads[name]
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * grads[name] ** 2
            m_hat = self.m[name] / (1 - self.beta1**self.t)
            v_hat = self.v[name] / (1 - self.beta2**self.t)
            w -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
