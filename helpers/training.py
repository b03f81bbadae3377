"""What the notebooks train with: losses, optimisers, a finite-difference gradient check,
and the toy "fetch the previous token" task with its one-layer attention model.

Taught in 03_queries_keys_values (the model, its gradients, the gradient check, gradient descent);
used again in 04_scaling (training with and without 1/sqrt(d_k)) and in 08_training_a_tiny_transformer
(the losses, Adam and the gradient check).
"""

import numpy as np

from helpers._validate import as_float_array, as_rng, positive_int
from helpers.attention import attention_backward, scaled_dot_product_attention, softmax

# ---------------------------------------------------------------------------------------
# losses: each returns (loss, gradient of the loss w.r.t. its first argument)
# ---------------------------------------------------------------------------------------


def _as_targets(targets, batch_shape, n_classes):
    """Return `targets` as an int array of shape `batch_shape` with values in [0, n_classes)."""
    targets = np.asarray(targets)
    if not np.issubdtype(targets.dtype, np.integer):
        raise TypeError(f"targets must be integer class indices, got dtype {targets.dtype}")
    if targets.shape != tuple(batch_shape):
        raise ValueError(f"targets has shape {targets.shape}, expected the logits' leading shape "
                         f"{tuple(batch_shape)} (logits are (..., n_classes))")
    if targets.size and (targets.min() < 0 or targets.max() >= n_classes):
        raise ValueError(f"targets must lie in [0, {n_classes}), got values from {targets.min()} to {targets.max()}")
    return targets


def softmax_cross_entropy(logits, targets):
    """Mean cross-entropy of softmax(logits) against integer targets, and its gradient.

    Shapes: logits (..., C), targets int (...) -> loss (), d_logits (..., C).
    Math: L = -mean log softmax(z)[y];  dL/dz = (softmax(z) - onehot(y)) / N.
    Taught in 03_queries_keys_values.
    """
    logits = as_float_array(logits, "logits")
    targets = _as_targets(targets, logits.shape[:-1], logits.shape[-1])
    n = targets.size
    shifted = logits - logits.max(axis=-1, keepdims=True)  # the max shift keeps exp() finite
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., C)
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)  # (..., 1)
    loss = -picked.sum() / n
    onehot = np.eye(logits.shape[-1], dtype=logits.dtype)[targets]  # (...) -> (..., C)
    return logits.dtype.type(loss), ((softmax(logits) - onehot) / n).astype(logits.dtype)


def mean_squared_error(prediction, target):
    """Mean of the squared differences, and its gradient w.r.t. the prediction.

    Shapes: prediction (...), target (...) -> loss (), d_prediction (...).
    Math: L = mean (p - t)^2;  dL/dp = 2 (p - t) / N.
    Taught in 03_queries_keys_values.
    """
    prediction = as_float_array(prediction, "prediction")
    target = as_float_array(target, "target")
    if prediction.shape != target.shape:
        raise ValueError(f"prediction has shape {prediction.shape} but target has shape {target.shape}")
    diff = prediction - target
    return prediction.dtype.type(np.mean(diff**2)), (2 * diff / diff.size).astype(prediction.dtype)


def accuracy(logits, targets):
    """Fraction of positions whose largest logit is the target class.

    Shapes: logits (..., C), targets int (...) -> float in [0, 1].
    Taught in 03_queries_keys_values.
    """
    logits = as_float_array(logits, "logits")
    targets = _as_targets(targets, logits.shape[:-1], logits.shape[-1])
    return float(np.mean(logits.argmax(axis=-1) == targets))


# ---------------------------------------------------------------------------------------
# gradient check by central finite differences
# ---------------------------------------------------------------------------------------


def numerical_gradient(f, x, eps=1e-6):
    """The gradient of the scalar function f at x by central differences, entry by entry.

    Shapes: x (...) -> (...), float64. f(x) -> float is called 2 * x.size times.
    Math: df/dx_i ~ (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), error O(eps^2).
    Taught in 03_queries_keys_values.
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
    Taught in 03_queries_keys_values.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"a has shape {a.shape} but b has shape {b.shape}")
    total = np.linalg.norm(a) + np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / total) if total > 0 else 0.0


def gradient_check(loss_fn, params, grads, eps=1e-6):
    """Compare analytic gradients with central differences, one relative error per parameter.

    Shapes: params, grads dicts name -> arrays of matching shapes -> {name: float}.
    loss_fn(params) -> float. In float64 a correct gradient gives a relative error of about 1e-8 or less.
    Taught in 03_queries_keys_values.
    """
    errors = {}
    for name, value in params.items():
        if name not in grads or np.shape(grads[name]) != np.shape(value):
            raise ValueError(f"grads[{name!r}] is missing or has the wrong shape "
                             f"(params[{name!r}] has shape {np.shape(value)})")
        numeric = numerical_gradient(lambda w, name=name: loss_fn({**params, name: w}), value, eps)
        errors[name] = relative_error(grads[name], numeric)
    return errors


# ---------------------------------------------------------------------------------------
# optimisers: update a dict of parameters in place
# ---------------------------------------------------------------------------------------


def _check_grads(params, grads):
    """Raise unless grads has an array of the same shape for every parameter."""
    for name, value in params.items():
        if name not in grads:
            raise ValueError(f"grads has no entry {name!r}; params has {sorted(params)}")
        if np.shape(grads[name]) != np.shape(value):
            raise ValueError(f"grads[{name!r}] has shape {np.shape(grads[name])} but params[{name!r}] "
                             f"has shape {np.shape(value)}")


def sgd_step(params, grads, lr):
    """Plain gradient descent: W <- W - lr * dW for every parameter, in place.

    Shapes: params, grads dicts name -> arrays of matching shapes.
    Taught in 03_queries_keys_values.
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
        _check_grads(self.params, grads)
        self.t += 1
        for name, w in self.params.items():
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * grads[name]
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * grads[name] ** 2
            m_hat = self.m[name] / (1 - self.beta1**self.t)
            v_hat = self.v[name] / (1 - self.beta2**self.t)
            w -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


# ---------------------------------------------------------------------------------------
# the toy task of 03 and 04: every token fetches the symbol of the token before it
# ---------------------------------------------------------------------------------------


def previous_token_task(n_sequences, T=6, n_symbols=8, rng=None):
    """Random sequences of distinct symbols; each token's target is its left neighbour's symbol.

    The first token's left neighbour is the last one (the sequence wraps around a circle).
    Each token's vector is [one-hot symbol | one-hot position].
    Shapes: -> X (n_sequences, T, n_symbols + T), symbols int (n_sequences, T), targets int (n_sequences, T).
    Taught in 03_queries_keys_values.
    """
    n_sequences, T, n_symbols = (positive_int(n, name) for n, name in
                                 ((n_sequences, "n_sequences"), (T, "T"), (n_symbols, "n_symbols")))
    if T > n_symbols:
        raise ValueError(f"T={T} tokens cannot all be distinct with only n_symbols={n_symbols}")
    rng = as_rng(rng)
    symbols = rng.random((n_sequences, n_symbols)).argsort(axis=1)[:, :T]  # (B, T), distinct per row
    targets = np.roll(symbols, 1, axis=1)  # targets[:, t] = symbols[:, t - 1]
    X = np.zeros((n_sequences, T, n_symbols + T))  # (B, T, d_model)
    X[:, :, :n_symbols] = np.eye(n_symbols)[symbols]  # (B, T, n_symbols)
    X[:, :, n_symbols:] = np.eye(T)  # every sequence gets the same positions
    return X, symbols, targets


def init_attention_params(d_model, d_k, d_v, rng=None, std=1.0):
    """Random W_q, W_k and W_v with entries drawn from N(0, std^2).

    Shapes: -> {"W_q": (d_model, d_k), "W_k": (d_model, d_k), "W_v": (d_model, d_v)}.
    Taught in 04_scaling.
    """
    d_model, d_k, d_v = (positive_int(n, name) for n, name in ((d_model, "d_model"), (d_k, "d_k"), (d_v, "d_v")))
    rng = as_rng(rng)
    return {"W_q": rng.normal(0, std, (d_model, d_k)), "W_k": rng.normal(0, std, (d_model, d_k)),
            "W_v": rng.normal(0, std, (d_model, d_v))}


def _check_layer_input(params, X):
    """Validate X (B, T, d_model) and W_q, W_k, W_v against it; return X as a float array."""
    X = as_float_array(X, "X", min_ndim=3)
    missing = {"W_q", "W_k", "W_v"} - set(params)
    if missing:
        raise ValueError(f"params is missing {sorted(missing)}; it needs W_q, W_k and W_v")
    shapes = {name: np.shape(params[name]) for name in ("W_q", "W_k", "W_v")}
    if any(len(shape) != 2 or shape[0] != X.shape[-1] for shape in shapes.values()) or \
            shapes["W_q"] != shapes["W_k"]:
        raise ValueError(f"X has shape {X.shape} (B, T, d_model), so W_q and W_k must be (d_model, d_k) "
                         f"and W_v (d_model, d_v); got {shapes}")
    return X


def attention_layer(params, X, scale=1.0):
    """One attention layer whose output is read as class scores: softmax(Q K^T * scale) V.

    Shapes: X (B, T, d_model), W_q, W_k (d_model, d_k), W_v (d_model, C)
            -> logits (B, T, C), weights (B, T, T).
    Taught in 03_queries_keys_values (scale=1.0) and 04_scaling (scale=1/sqrt(d_k)).
    """
    X = _check_layer_input(params, X)
    Q = X @ params["W_q"]  # (B, T, d_model) @ (d_model, d_k) -> (B, T, d_k)
    K = X @ params["W_k"]  # (B, T, d_model) @ (d_model, d_k) -> (B, T, d_k)
    V = X @ params["W_v"]  # (B, T, d_model) @ (d_model, C) -> (B, T, C)
    return scaled_dot_product_attention(Q, K, V, scale=scale)


def attention_layer_loss(params, X, targets, scale=1.0):
    """Cross-entropy of attention_layer's logits, with the gradients for W_q, W_k, W_v.

    Shapes: as attention_layer; targets int (B, T) -> loss (), grads {name: like params[name]}, weights (B, T, T).
    Math: dW_q = sum_b X_b^T dQ_b (and likewise for W_k, W_v), dQ, dK, dV from attention_backward.
    Taught in 03_queries_keys_values.
    """
    X = _check_layer_input(params, X)
    Q, K, V = X @ params["W_q"], X @ params["W_k"], X @ params["W_v"]  # (B, T, d_k), (B, T, d_k), (B, T, C)
    logits, weights = scaled_dot_product_attention(Q, K, V, scale=scale)  # (B, T, C), (B, T, T)
    loss, d_logits = softmax_cross_entropy(logits, targets)
    dQ, dK, dV = attention_backward(d_logits, Q, K, V, scale=scale)
    # Q = X W_q for each sequence, so dW_q = X^T dQ, summed over the sequences of the batch.
    # (Many small matmuls: a few times faster than one flattened matmul when OpenBLAS threads compete.)
    X_T = np.swapaxes(X, -1, -2)  # (B, T, d_model) -> (B, d_model, T)
    grads = {name: (X_T @ d).sum(axis=0)  # (B, d_model, T) @ (B, T, n) -> (B, d_model, n) -> (d_model, n)
             for name, d in (("W_q", dQ), ("W_k", dK), ("W_v", dV))}
    return loss, grads, weights


def train(params, X, targets, *, steps=200, lr=2.0, scale=1.0, log_every=None):
    """Train the attention layer by plain gradient descent on the whole (X, targets), in place.

    Shapes: as attention_layer_loss -> losses, a list of `steps` floats (the loss before each step).
    log_every=N prints a progress line every N steps.
    Taught in 03_queries_keys_values; used in 04_scaling.
    """
    steps = positive_int(steps, "steps")
    losses = []
    for step in range(steps):
        loss, grads, _ = attention_layer_loss(params, X, targets, scale=scale)
        losses.append(float(loss))
        if log_every and step % log_every == 0:
            print(f"step {step:4d}   loss {loss:.3f}")
        sgd_step(params, grads, lr)
    return losses
