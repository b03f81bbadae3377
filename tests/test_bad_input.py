"""Bad input gets a ValueError/TypeError whose message names the argument and the shapes (or values) it got."""

import numpy as np
import pytest

from helpers import (
    MultiHeadAttention,
    attention_backward,
    causal_mask,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
    softmax,
    softmax_backward,
    split_heads,
)
from helpers.embeddings import cosine_similarity, similarity_matrix

q = np.ones((3, 4))  # (T_q=3, d_k=4)
k = np.ones((5, 4))  # (T_k=5, d_k=4)
v = np.ones((5, 6))  # (T_k=5, d_v=6)
mha = MultiHeadAttention(8, 2, rng=0)
x8 = np.ones((3, 8))  # (T=3, d_model=8)

# (id, call, expected exception, regex the message must match: the argument's name and the shapes)
CASES = [
    # scaled_dot_product_attention
    (
        "q rank 1",
        lambda: scaled_dot_product_attention(np.ones(4), k, v),
        ValueError,
        r"q must have at least 2 dimension.*shape \(4,\)",
    ),
    (
        "k rank 1",
        lambda: scaled_dot_product_attention(q, np.ones(4), v),
        ValueError,
        r"k must have at least 2 dimension.*shape \(4,\)",
    ),
    (
        "v rank 0",
        lambda: scaled_dot_product_attention(q, k, 1.0),
        ValueError,
        r"v must have at least 2 dimension.*shape \(\)",
    ),
    (
        "mismatched d_k",
        lambda: scaled_dot_product_attention(q, np.ones((5, 3)), v),
        ValueError,
        r"q and k must share d_k.*q has shape \(3, 4\).*k has shape \(5, 3\)",
    ),
    (
        "different T_k for k and v",
        lambda: scaled_dot_product_attention(q, k, np.ones((4, 6))),
        ValueError,
        r"k and v must have the same number of keys T_k.*k has shape \(5, 4\).*v has shape \(4, 6\)",
    ),
    (
        "batch axes do not broadcast",
        lambda: scaled_dot_product_attention(np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((3, 5, 6))),
        ValueError,
        r"batch axes of q \(2, 3, 4\), k \(3, 5, 4\) and v \(3, 5, 6\) do not broadcast",
    ),
    (
        "float mask",
        lambda: scaled_dot_product_attention(q, k, v, mask=np.ones((3, 5))),
        TypeError,
        r"mask must be a boolean array.*float64.*shape \(3, 5\)",
    ),
    (
        "int 0/1 mask",
        lambda: scaled_dot_product_attention(q, k, v, mask=np.ones((3, 5), int)),
        TypeError,
        r"mask must be a boolean array.*int.*shape \(3, 5\)",
    ),
    (
        "mask of wrong shape",
        lambda: scaled_dot_product_attention(q, k, v, mask=np.ones((3, 4), bool)),
        ValueError,
        r"mask with shape \(3, 4\) does not broadcast to the scores' shape \(3, 5\)",
    ),
    (
        "mask transposed",
        lambda: scaled_dot_product_attention(q, k, v, mask=np.ones((5, 3), bool)),
        ValueError,
        r"mask with shape \(5, 3\) does not broadcast to the scores' shape \(3, 5\)",
    ),
    (
        "mask with extra axes",
        lambda: scaled_dot_product_attention(q, k, v, mask=np.ones((2, 3, 5), bool)),
        ValueError,
        r"mask with shape \(2, 3, 5\) has more dimensions than the scores' shape \(3, 5\)",
    ),
    (
        "mask adds batch items",
        lambda: scaled_dot_product_attention(np.ones((1, 3, 4)), k, v, mask=np.ones((2, 3, 5), bool)),
        ValueError,
        r"mask with shape \(2, 3, 5\) does not broadcast to the scores' shape \(1, 3, 5\)",
    ),
    (
        "ragged mask",
        lambda: scaled_dot_product_attention(q, k, v, mask=[[True], [True, False]]),
        ValueError,
        r"mask must be a rectangular boolean array",
    ),
    (
        "non-numeric q",
        lambda: scaled_dot_product_attention([["a", "b"]], k, v),
        TypeError,
        r"q must be an array of numbers, got dtype <U1",
    ),
    (
        "q is None",
        lambda: scaled_dot_product_attention(None, k, v),
        TypeError,
        r"q must be an array of numbers, got NoneType",
    ),
    (
        "q is a string",
        lambda: scaled_dot_product_attention("hello", k, v),
        TypeError,
        r"q must be an array of numbers, got str",
    ),
    ("complex v", lambda: scaled_dot_product_attention(q, k, v * 1j), TypeError, r"v must be real, got dtype complex"),
    (
        "ragged q",
        lambda: scaled_dot_product_attention([[1.0, 2.0], [3.0]], k, v),
        ValueError,
        r"q must be a rectangular array of numbers",
    ),
    (
        "scale is a string",
        lambda: scaled_dot_product_attention(q, k, v, scale="0.5"),
        TypeError,
        r"scale must be a real number, got str '0.5'",
    ),
    (
        "scale is a list",
        lambda: scaled_dot_product_attention(q, k, v, scale=[0.5]),
        TypeError,
        r"scale must be a real number, got list \[0.5\]",
    ),
    (
        "scale is complex",
        lambda: scaled_dot_product_attention(q, k, v, scale=1 + 2j),
        TypeError,
        r"scale must be a real number, got complex",
    ),
    (
        "scale is nan",
        lambda: scaled_dot_product_attention(q, k, v, scale=float("nan")),
        ValueError,
        r"scale must be finite, got nan",
    ),
    (
        "scale is inf",
        lambda: scaled_dot_product_attention(q, k, v, scale=np.inf),
        ValueError,
        r"scale must be finite, got inf",
    ),
    (
        "scale is True",
        lambda: scaled_dot_product_attention(q, k, v, scale=True),
        TypeError,
        r"scale must be a real number, got bool",
    ),
    # softmax and backward passes
    ("softmax of a scalar", lambda: softmax(3.0), ValueError, r"x must have at least 1 dimension.*shape \(\)"),
    (
        "softmax axis out of range",
        lambda: softmax(np.ones((2, 3)), axis=2),
        ValueError,
        r"axis=2 is out of range for x with shape \(2, 3\)",
    ),
    (
        "softmax axis not an int",
        lambda: softmax(np.ones((2, 3)), axis=1.0),
        TypeError,
        r"axis must be an int, got float",
    ),
    ("softmax of text", lambda: softmax(["a", "b"]), TypeError, r"x must be an array of numbers, got dtype <U1"),
    (
        "softmax_backward shapes differ",
        lambda: softmax_backward(np.ones((2, 3)), np.ones((3, 2))),
        ValueError,
        r"d_weights has shape \(2, 3\) but weights has shape \(3, 2\)",
    ),
    (
        "wrong d_out shape",
        lambda: attention_backward(np.ones((3, 5)), q, k, v),
        ValueError,
        r"d_out has shape \(3, 5\), expected the output's shape \(3, 6\)",
    ),
    (
        "d_out missing the batch axis",
        lambda: attention_backward(np.ones((3, 6)), q, k, np.ones((2, 5, 6))),
        ValueError,
        r"d_out has shape \(3, 6\), expected the output's shape \(2, 3, 6\)",
    ),
    (
        "backward mismatched d_k",
        lambda: attention_backward(np.ones((3, 6)), q, np.ones((5, 2)), v),
        ValueError,
        r"q and k must share d_k.*\(3, 4\).*\(5, 2\)",
    ),
    # masks
    ("causal_mask T_k < T_q", lambda: causal_mask(3, 2), ValueError, r"T_k >= T_q.*T_q=3, T_k=2"),
    ("causal_mask float T_q", lambda: causal_mask(3.0), TypeError, r"T_q must be a positive int, got float 3.0"),
    ("causal_mask float T_k", lambda: causal_mask(3, 4.5), TypeError, r"T_k must be a positive int, got float 4.5"),
    ("causal_mask zero", lambda: causal_mask(0), ValueError, r"T_q must be a positive int, got 0"),
    ("causal_mask negative", lambda: causal_mask(-2), ValueError, r"T_q must be a positive int, got -2"),
    ("causal_mask bool", lambda: causal_mask(True), TypeError, r"T_q must be a positive int, got bool"),
    (
        "negative length",
        lambda: padding_mask([2, -1], 3),
        ValueError,
        r"every length must be in \[0, T=3\], got \[2, -1\] with shape \(2,\)",
    ),
    ("length above T", lambda: padding_mask([4], 3), ValueError, r"every length must be in \[0, T=3\], got \[4\]"),
    (
        "float lengths",
        lambda: padding_mask([1.5, 2.0], 3),
        TypeError,
        r"lengths must be integers, got dtype float64 with shape \(2,\)",
    ),
    ("2-D lengths", lambda: padding_mask([[1, 2]], 3), ValueError, r"lengths must be 1-D \(B,\), got shape \(1, 2\)"),
    ("scalar lengths", lambda: padding_mask(2, 3), ValueError, r"lengths must be 1-D \(B,\), got shape \(\)"),
    ("padding_mask float T", lambda: padding_mask([1], 3.0), TypeError, r"T must be a positive int, got float"),
    # multi-head attention
    (
        "d_model not divisible by n_heads",
        lambda: MultiHeadAttention(10, 3),
        ValueError,
        r"d_model=10 is not divisible by n_heads=3",
    ),
    ("n_heads zero", lambda: MultiHeadAttention(8, 0), ValueError, r"n_heads must be a positive int, got 0"),
    ("d_model float", lambda: MultiHeadAttention(8.0, 2), TypeError, r"d_model must be a positive int, got float"),
    (
        "x with wrong d_model",
        lambda: mha(np.ones((3, 7))),
        ValueError,
        r"x must have shape \(\.\.\., T, d_model=8\), got \(3, 7\)",
    ),
    (
        "context with wrong d_model",
        lambda: mha(x8, context=np.ones((4, 6))),
        ValueError,
        r"context must have shape \(\.\.\., T, d_model=8\), got \(4, 6\)",
    ),
    ("x rank 1", lambda: mha(np.ones(8)), ValueError, r"x must have at least 2 dimension.*shape \(8,\)"),
    (
        "per-head mask with the wrong number of heads",
        lambda: mha(np.ones((3, 4, 8)), mask=np.ones((3, 3, 4, 4), bool)),
        ValueError,
        r"mask with shape \(3, 3, 4, 4\) does not broadcast to the scores' shape \(3, 2, 4, 4\)",
    ),
    (
        "mask with more axes than a per-head mask",
        lambda: mha(np.ones((4, 8)), mask=np.ones((1, 2, 4, 4), bool)),
        ValueError,
        r"mask has shape \(1, 2, 4, 4\).*per-head mask \(\.\.\., n_heads=2, T_q, T_k\) \(3 axes\)",
    ),
    (
        "from_weights with a wrong W_k",
        lambda: MultiHeadAttention.from_weights(np.ones((8, 8)), np.ones((8, 6)), np.ones((8, 8)), np.ones((8, 8)), 2),
        ValueError,
        r"W_k has shape \(8, 6\), expected \(d_model, d_model\) = \(8, 8\)",
    ),
    (
        "from_weights with a wrong bias",
        lambda: MultiHeadAttention.from_weights(*[np.ones((8, 8))] * 4, 2, biases=[np.zeros(8)] * 3 + [np.zeros(6)]),
        ValueError,
        r"b_o has shape \(6,\), expected \(d_model,\) = \(8,\)",
    ),
    (
        "from_weights with three biases",
        lambda: MultiHeadAttention.from_weights(*[np.ones((8, 8))] * 4, 2, biases=[np.zeros(8)] * 3),
        ValueError,
        r"biases must be \(b_q, b_k, b_v, b_o\)",
    ),
    (
        "rng that is not a seed or a Generator",
        lambda: MultiHeadAttention(8, 2, rng="seed"),
        TypeError,
        r"rng must be None, an int seed or a numpy Generator, got str",
    ),
    (
        "non-boolean mask to MultiHeadAttention",
        lambda: mha(x8, mask=np.tril(np.ones((3, 3)))),
        TypeError,
        r"mask must be a boolean array.*float64.*shape \(3, 3\)",
    ),
    (
        "split_heads not divisible",
        lambda: split_heads(np.ones((2, 6)), 4),
        ValueError,
        r"d_model=6 \(x has shape \(2, 6\)\) is not divisible by n_heads=4",
    ),
    (
        "merge_heads rank 2",
        lambda: merge_heads(np.ones((2, 6))),
        ValueError,
        r"x must have at least 3 dimension.*shape \(2, 6\)",
    ),
    # positional encoding and embeddings
    ("positional T zero", lambda: sinusoidal_positional_encoding(0, 8), ValueError, r"T must be a positive int"),
    (
        "positional d_model float",
        lambda: sinusoidal_positional_encoding(4, 8.0),
        TypeError,
        r"d_model must be a positive int, got float",
    ),
    (
        "cosine of different lengths",
        lambda: cosine_similarity(np.ones(3), np.ones(4)),
        ValueError,
        r"a and b must have the same last axis d: a has shape \(3,\), b has shape \(4,\)",
    ),
    (
        "similarity_matrix of 3-D",
        lambda: similarity_matrix(np.ones((2, 3, 4))),
        ValueError,
        r"X must be 2-D \(T, d\), got shape \(2, 3, 4\)",
    ),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message) as raised:
        call()
    # exactly the type docs/conventions.md promises: not numpy's own AxisError or IndexError, which subclass them
    assert type(raised.value) in (ValueError, TypeError), type(raised.value)
