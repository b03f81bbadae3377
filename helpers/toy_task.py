"""Notebook 03's toy task, "every token fetches the symbol of the token before it", and its model: one
attention layer whose values are read as class scores, its gradients, and its training by gradient descent.

03 trains it, 04 trains it with and without 1/sqrt(d_k), and 07 trains it with each kind of position
(rotary=True turns the queries and keys by their positions: RoPE); position_task.py holds 07's inputs.
Taught in 03_queries_keys_values; used in 04_scaling and 07_positional_encoding.
"""

import numpy as np

from helpers._validate import as_float_array, as_rng, positive_int
from helpers.attention import attention_backward, scaled_dot_product_attention
from helpers.gradients import sgd_step
from helpers.losses import softmax_cross_entropy
from helpers.positional import apply_rotary

__all__ = [
    "previous_token_task",
    "init_attention_params",
    "attention_layer",
    "attention_layer_loss",
    "train_attention_layer",
]


def previous_token_task(n_sequences, T=6, n_symbols=8, rng=None):
    """Random sequences of distinct symbols; each token's target is its left neighbour's symbol.

    The first token's left neighbour is the last one (the sequence wraps around a circle).
    Each token's vector is [one-hot symbol | one-hot position].
    Shapes: -> X (n_sequences, T, n_symbols + T), symbols int (n_sequences, T), targets int (n_sequences, T).
    """
    n_sequences, T, n_symbols = (
        positive_int(n, name) for n, name in ((n_sequences, "n_sequences"), (T, "T"), (n_symbols, "n_symbols"))
    )
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
    return {
        "W_q": rng.normal(0, std, (d_model, d_k)),
        "W_k": rng.normal(0, std, (d_model, d_k)),
        "W_v": rng.normal(0, std, (d_model, d_v)),
    }


def _check_layer_input(params, X, rotary):
    """Validate X (B, T, d_model) and W_q, W_k, W_v against it (d_k even for RoPE); return X as a float array."""
    X = as_float_array(X, "X", min_ndim=3)
    missing = {"W_q", "W_k", "W_v"} - set(params)
    if missing:
        raise ValueError(f"params is missing {sorted(missing)}; it needs W_q, W_k and W_v")
    shapes = {name: np.shape(params[name]) for name in ("W_q", "W_k", "W_v")}
    if any(len(shape) != 2 or shape[0] != X.shape[-1] for shape in shapes.values()) or shapes["W_q"] != shapes["W_k"]:
        raise ValueError(
            f"X has shape {X.shape} (B, T, d_model), so W_q and W_k must be (d_model, d_k) "
            f"and W_v (d_model, d_v); got {shapes}"
        )
    if rotary and shapes["W_q"][1] % 2:
        raise ValueError(
            f"RoPE rotates pairs of q and k dimensions, so d_k must be even; W_q and W_k have shape {shapes['W_q']}"
        )
    return X


def _project(params, X, positions):
    """Q = X W_q, K = X W_k, V = X W_v; Q and K turned by their positions (RoPE) unless positions is None."""
    Q, K, V = X @ params["W_q"], X @ params["W_k"], X @ params["W_v"]  # (B, T, d_k), (B, T, d_k), (B, T, C)
    if positions is not None:
        Q, K = apply_rotary(Q, positions), apply_rotary(K, positions)  # (B, T, d_k) each, rotated
    return Q, K, V


def attention_layer(params, X, scale=1.0, *, rotary=False):
    """One attention layer whose output is read as class scores: softmax(Q K^T * scale) V.

    rotary=True turns each query and key by its position first (RoPE): softmax(R Q (R K)^T * scale) V.
    Shapes: X (B, T, d_model), W_q, W_k (d_model, d_k) (d_k even with rotary), W_v (d_model, C)
            -> logits (B, T, C), weights (B, T, T).
    Taught in 03_queries_keys_values (scale=1.0), 04_scaling (scale=1/sqrt(d_k)) and
    07_positional_encoding (rotary=True).
    """
    X = _check_layer_input(params, X, rotary)
    positions = np.arange(X.shape[-2]) if rotary else None  # (T,)
    return scaled_dot_product_attention(*_project(params, X, positions), scale=scale)


def attention_layer_loss(params, X, targets, scale=1.0, *, rotary=False):
    """Cross-entropy of attention_layer's logits, with the gradients for W_q, W_k, W_v.

    Shapes: as attention_layer; targets int (B, T) -> loss (), grads {name: like params[name]}, weights (B, T, T).
    Math: dW_q = sum_b X_b^T dQ_b (and likewise for W_k, W_v), dQ, dK, dV from attention_backward;
          with rotary, Q = R(XW_q) for a rotation R, so d(XW_q) = R^T dQ, the rotation by minus the angle.
    Taught in 03_queries_keys_values and 07_positional_encoding (rotary=True).
    """
    X = _check_layer_input(params, X, rotary)
    positions = np.arange(X.shape[-2]) if rotary else None  # (T,)
    Q, K, V = _project(params, X, positions)  # (B, T, d_k), (B, T, d_k), (B, T, C)
    logits, weights = scaled_dot_product_attention(Q, K, V, scale=scale)  # (B, T, C), (B, T, T)
    loss, d_logits = softmax_cross_entropy(logits, targets)
    dQ, dK, dV = attention_backward(d_logits, Q, K, V, scale=scale)
    if rotary:
        dQ, dK = apply_rotary(dQ, -positions), apply_rotary(dK, -positions)  # R^T: rotate back
    # Q = X W_q for each sequence, so dW_q = X^T dQ, summed over the sequences of the batch.
    # (Many small matmuls: a few times faster than one flattened matmul when OpenBLAS threads compete.)
    X_T = np.swapaxes(X, -1, -2)  # (B, T, d_model) -> (B, d_model, T)
    grads = {
        name: (X_T @ d).sum(axis=0)  # (B, d_model, T) @ (B, T, n) -> (B, d_model, n) -> (d_model, n)
        for name, d in (("W_q", dQ), ("W_k", dK), ("W_v", dV))
    }
    return loss, grads, weights


def train_attention_layer(params, X, targets, *, steps=200, lr=2.0, scale=1.0, rotary=False, log_every=None):
    """Train the attention layer by plain gradient descent on the whole (X, targets), in place.

    Shapes: as attention_layer_loss -> losses, a list of `steps` floats (the loss before each step).
    log_every=N prints a progress line every N steps.
    """
    steps = positive_int(steps, "steps")
    losses = []
    for step in range(steps):
        loss, grads, _ = attention_layer_loss(params, X, targets, scale=scale, rotary=rotary)
        losses.append(float(loss))
        if log_every and step % log_every == 0:
            print(f"step {step:4d}   loss {loss:.3f}")
        sgd_step(params, grads, lr)
    return losses
