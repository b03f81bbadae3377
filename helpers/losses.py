"""What a model's output is judged by: cross-entropy against class ids (and its gradient), squared error,
accuracy; and the one check of integer ids (class targets, word ids) that every model shares.

Taught in 03_queries_keys_values; used in 04_scaling, 08_training_a_tiny_transformer and 11_tiny_gpt.
"""

import numpy as np

from helpers._validate import as_float_array
from helpers.attention import softmax

__all__ = ["check_ids", "softmax_cross_entropy", "mean_squared_error", "accuracy"]


def check_ids(ids, name, n):
    """`ids` as an integer array of indices into n rows (word ids) or n classes (targets), or raise naming `name`.

    Shapes: ids int (...) -> the same array, every entry in [0, n).
    Used from 03_queries_keys_values on (the losses' targets; 08's and 11's word ids).
    """
    ids = np.asarray(ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"{name} must be integer ids (word ids or class indices), got dtype {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"{name} must lie in [0, {n}), got values from {ids.min()} to {ids.max()}")
    return ids


def _check_targets(logits, targets):
    """targets as class ids of logits (..., C): integers in [0, C), one per row of logits."""
    targets = check_ids(targets, "targets", logits.shape[-1])
    if targets.shape != logits.shape[:-1]:
        raise ValueError(
            f"targets has shape {targets.shape}, expected the logits' leading shape "
            f"{logits.shape[:-1]} (logits are (..., n_classes))"
        )
    return targets


def softmax_cross_entropy(logits, targets):
    """Mean cross-entropy of softmax(logits) against integer targets, and its gradient.

    Shapes: logits (..., C), targets int (...) -> loss (), d_logits (..., C).
    Math: L = -mean log softmax(z)[y];  dL/dz = (softmax(z) - onehot(y)) / N.
    """
    logits = as_float_array(logits, "logits")
    targets = _check_targets(logits, targets)
    n = targets.size
    shifted = logits - logits.max(axis=-1, keepdims=True)  # the max shift keeps exp() finite
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., C)
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)  # (..., 1)
    loss = -picked.sum() / n
    d_logits = softmax(logits)  # (..., C); minus 1 at each row's target: softmax(z) - onehot(y), with no (C, C) eye
    at_target = np.take_along_axis(d_logits, targets[..., None], axis=-1)  # (..., 1)
    np.put_along_axis(d_logits, targets[..., None], at_target - 1, axis=-1)
    return logits.dtype.type(loss), (d_logits / n).astype(logits.dtype)


def mean_squared_error(prediction, target):
    """Mean of the squared differences, and its gradient w.r.t. the prediction.

    Shapes: prediction (...), target (...) -> loss (), d_prediction (...).
    Math: L = mean (p - t)^2;  dL/dp = 2 (p - t) / N.
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
    """
    logits = as_float_array(logits, "logits")
    return float(np.mean(logits.argmax(axis=-1) == _check_targets(logits, targets)))
