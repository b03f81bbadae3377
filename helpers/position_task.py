"""03's previous-token task trained without positions, with sinusoidal encodings added, and with RoPE.

The symbols are fixed orthonormal vectors that use all d_model dimensions (03's one-hots, rotated),
so an added encoding shares the dimensions the symbols use. The model and its training are 03's
(toy_task.py, with rotary=True for RoPE); only the positions differ.
Taught in 07_positional_encoding.
"""

import numpy as np

from helpers._validate import as_float_array, as_rng, positive_int
from helpers.losses import accuracy, check_ids
from helpers.positional import sinusoidal_positional_encoding
from helpers.toy_task import (
    attention_layer,
    attention_layer_loss,
    init_attention_params,
    previous_token_task,
    train_attention_layer,
)

__all__ = [
    "KINDS",
    "symbol_vectors",
    "task_inputs",
    "rotary_attention_layer",
    "rotary_attention_layer_loss",
    "train_with_positions",
    "predict",
    "position_experiment",
]

KINDS = ("none", "one-hot", "sinusoidal", "rope")  # how the model learns where each token is


def _check_kind(kind):
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def symbol_vectors(n_symbols, d_model, rng=None):
    """One unit vector per symbol, all orthogonal: 03's one-hots turned by a random rotation of d_model dims.

    They use every dimension (as dense token vectors do), so an added encoding shares the dimensions
    with them; being orthonormal, they train as easily as one-hots.
    Shapes: -> (n_symbols, d_model) float64 with orthonormal rows; needs n_symbols <= d_model.
    """
    n_symbols, d_model = positive_int(n_symbols, "n_symbols"), positive_int(d_model, "d_model")
    if n_symbols > d_model:
        raise ValueError(f"{n_symbols} orthogonal symbol vectors need d_model >= n_symbols, got d_model={d_model}")
    gaussian = as_rng(rng).normal(size=(d_model, n_symbols))  # (d_model, n_symbols)
    basis, R = np.linalg.qr(gaussian)  # (d_model, n_symbols): orthonormal columns
    basis = basis * np.sign(np.diag(R))  # the one QR with R's diagonal > 0: the same on every LAPACK
    return basis.T  # (n_symbols, d_model)


def task_inputs(symbols, E, kind):
    """The model's input for a batch of symbol sequences, with positions given the way `kind` says.

    kind: "none" and "rope" -> E[symbols] (RoPE acts on q and k, not on the input);
          "sinusoidal" -> E[symbols] + PE; "one-hot" -> [E[symbols] | one-hot position] (03's way).
    Shapes: symbols int (B, T), E (n_symbols, d_model) -> (B, T, d_model), or (B, T, d_model + T) for "one-hot".
    """
    _check_kind(kind)
    E = as_float_array(E, "E", min_ndim=2)
    symbols = check_ids(symbols, "symbols", len(E))  # rows of E
    if symbols.ndim != 2:
        raise ValueError(f"symbols must be integer indices of shape (B, T), got shape {symbols.shape}")
    B, T = symbols.shape
    X = E[symbols]  # (B, T) -> (B, T, d_model)
    if kind == "sinusoidal":
        return X + sinusoidal_positional_encoding(T, E.shape[1])  # (B, T, d_model) + (T, d_model)
    if kind == "one-hot":
        positions = np.broadcast_to(np.eye(T), (B, T, T))  # (B, T, T): row t is position t's one-hot
        return np.concatenate([X, positions], axis=-1)  # (B, T, d_model + T)
    return X


def rotary_attention_layer(params, X, scale=1.0):
    """03's attention layer with RoPE on the queries and keys: softmax(R Q (R K)^T * scale) V.

    Shapes: X (B, T, d_model), W_q, W_k (d_model, d_k) with d_k even, W_v (d_model, C)
            -> logits (B, T, C), weights (B, T, T).
    It is toy_task.attention_layer with rotary=True.
    """
    return attention_layer(params, X, scale, rotary=True)


def rotary_attention_layer_loss(params, X, targets, scale=1.0):
    """Cross-entropy of rotary_attention_layer's logits, with the gradients for W_q, W_k, W_v.

    Shapes: as rotary_attention_layer; targets int (B, T) -> loss (), grads {name: like params[name]}, weights.
    Math: Q = R(XW_q) with R a rotation, so d(XW_q) = R^T dQ, and R^T is the rotation by minus the angle.
    It is toy_task.attention_layer_loss with rotary=True.
    """
    return attention_layer_loss(params, X, targets, scale, rotary=True)


def train_with_positions(kind, X, targets, n_classes, *, d_k=16, steps=200, lr=2.0, rng=None, std=0.1):
    """Train 03's attention layer by plain gradient descent on (X, targets), from a small random start.

    kind "rope" rotates q and k; every other kind uses 03's layer unchanged (X already carries its positions).
    Shapes: X (B, T, d_in) from task_inputs, targets int (B, T) in [0, n_classes)
            -> params {W_q, W_k (d_in, d_k), W_v (d_in, n_classes)}, losses (`steps` floats, each before its step).
    """
    _check_kind(kind)
    X = as_float_array(X, "X", min_ndim=3)
    params = init_attention_params(X.shape[-1], d_k, n_classes, rng=rng, std=std)
    losses = train_attention_layer(params, X, targets, steps=steps, lr=lr, rotary=kind == "rope")
    return params, losses


def predict(kind, params, X):
    """The trained layer's class scores for X: RoPE's layer for kind "rope", 03's layer otherwise.

    Shapes: X (B, T, d_in) -> logits (B, T, C), weights (B, T, T).
    """
    return attention_layer(params, X, rotary=kind == "rope")


def position_experiment(kinds=KINDS, *, n_symbols=8, T=6, d_model=16, n_train=64, n_test=1000, steps=200):
    """Train one layer per kind on 03's task and return its test accuracy: {kind: accuracy}."""
    E = symbol_vectors(n_symbols, d_model, rng=0)
    _, symbols_train, targets_train = previous_token_task(n_train, T=T, n_symbols=n_symbols, rng=0)
    _, symbols_test, targets_test = previous_token_task(n_test, T=T, n_symbols=n_symbols, rng=1)
    results = {}
    for kind in kinds:
        params, _ = train_with_positions(
            kind, task_inputs(symbols_train, E, kind), targets_train, n_symbols, steps=steps
        )
        logits, _ = predict(kind, params, task_inputs(symbols_test, E, kind))
        results[kind] = accuracy(logits, targets_test)
    return results
