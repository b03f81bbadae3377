"""What the notebooks train with, under one name: `from helpers import training`.

Nothing is defined here; each part lives in its own module:
- losses.py: softmax_cross_entropy, mean_squared_error, accuracy (its check_ids, the models' check of word ids,
  is imported from there);
- gradients.py: the finite-difference gradient check, gradient descent and Adam;
- toy_task.py: 03's previous-token task and its one-layer attention model (with RoPE for 07).
Taught in 03_queries_keys_values; used in 04_scaling, 07_positional_encoding and 08_training_a_tiny_transformer.
"""

from helpers.gradients import Adam, gradient_check, numerical_gradient, relative_error, sgd_step
from helpers.losses import accuracy, mean_squared_error, softmax_cross_entropy
from helpers.toy_task import (
    attention_layer,
    attention_layer_loss,
    init_attention_params,
    previous_token_task,
    train_attention_layer,
)

__all__ = [
    "softmax_cross_entropy",
    "mean_squared_error",
    "accuracy",
    "numerical_gradient",
    "relative_error",
    "gradient_check",
    "sgd_step",
    "Adam",
    "previous_token_task",
    "init_attention_params",
    "attention_layer",
    "attention_layer_loss",
    "train_attention_layer",
]
