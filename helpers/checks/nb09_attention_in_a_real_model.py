"""The exercises of 09_attention_in_a_real_model."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.multihead import MultiHeadAttention


def _small_layer(rng, d_model=12, n_heads=3):
    """A MultiHeadAttention with random weights and biases, like one of the model's layers, only smaller."""
    biases = [rng.normal(0, 0.5, d_model) for _ in range(4)]
    return MultiHeadAttention.from_weights(*(rng.normal(0, 0.6, (d_model, d_model)) for _ in range(4)),
                                           n_heads, biases=biases)


def _row(X, attention, head, i, *, bias=True, scale=None, columns=True):
    """One head's weights for query i, computed a chosen (right or wrong) way. Shapes: X (T, d) -> (T,)."""
    d_head = attention.d_model // attention.n_heads
    cols = slice(head * d_head, (head + 1) * d_head) if columns else slice(None)
    q = X[i] @ attention.W_q[:, cols] + (attention.b_q[cols] if bias else 0)  # (d_head,)
    K = X @ attention.W_k[:, cols] + (attention.b_k[cols] if bias else 0)  # (T, d_head)
    return softmax(K @ q / np.sqrt(d_head if scale is None else scale))  # (T,)


@exercise(
    notebook="09_attention_in_a_real_model",
    hint="Head h owns columns h*d_head:(h+1)*d_head of W_q and W_k (d_head = d_model // n_heads). "
         "q = X[i] @ W_q[:, cols] + b_q[cols], K = X @ W_k[:, cols] + b_k[cols], then "
         "softmax(K @ q / sqrt(d_head)).",
    solution="""
        def attention_row(X, attention, head, i):
            d_head = attention.d_model // attention.n_heads
            cols = slice(head * d_head, (head + 1) * d_head)  # this head's columns
            q = X[i] @ attention.W_q[:, cols] + attention.b_q[cols]  # (d_model,) @ (d_model, d_head) -> (d_head,)
            K = X @ attention.W_k[:, cols] + attention.b_k[cols]  # (T, d_model) @ (d_model, d_head) -> (T, d_head)
            scores = K @ q / np.sqrt(d_head)  # (T, d_head) @ (d_head,) -> (T,)
            e = np.exp(scores - scores.max())
            return e / e.sum()
    """,
    wrong="""
        def attention_row(X, attention, head, i):
            d_head = attention.d_model // attention.n_heads
            cols = slice(head * d_head, (head + 1) * d_head)
            q = X[i] @ attention.W_q[:, cols]
            K = X @ attention.W_k[:, cols]
            scores = K @ q / np.sqrt(d_head)
            e = np.exp(scores - scores.max())
            return e / e.sum()
    """,
)
def attention_row(answer):
    rng = check_rng()
    for T, head, i in ((5, 1, 2), (7, 2, 0)):
        attention = _small_layer(rng)
        X = rng.normal(size=(T, attention.d_model))
        what = f"attention_row(X {X.shape}, attention, head={head}, i={i})"
        got = as_array(call(answer, X, attention, head, i), what)
        expected = attention(X)[1][head, i]  # (T,): the layer's own weights
        if got.shape == expected.shape and not np.allclose(got, expected, atol=1e-6):
            if np.allclose(got, _row(X, attention, head, i, bias=False)):
                raise Mismatch(f"{what}: you left out the biases; the model's projections are X @ W + b "
                               "(attention.b_q and attention.b_k, this head's columns)")
            if np.allclose(got, _row(X, attention, head, i, scale=attention.d_model)):
                raise Mismatch(f"{what}: you divided by sqrt(d_model); each head's scores are scaled by "
                               "sqrt(d_head), the length of its own queries and keys")
            if np.allclose(got, _row(X, attention, head, i, scale=1)):
                raise Mismatch(f"{what}: the scores are not scaled; divide them by sqrt(d_head)")
            if np.allclose(got, _row(X, attention, head, i, columns=False)):
                raise Mismatch(f"{what}: you used every column of W_q and W_k; head {head} uses only its own "
                               "d_head columns")
        expect_close(got, expected, what, atol=1e-6)


@exercise(
    notebook="09_attention_in_a_real_model",
    hint="Zero the padding rows (H * real[..., None]), sum over the tokens (axis=1) and divide by each "
         "sentence's number of real tokens; then divide each row by its length "
         "(np.linalg.norm with axis=-1, keepdims=True).",
    solution="""
        def sentence_embedding(H, real):
            counts = real.sum(axis=1, keepdims=True)  # (n, 1): real tokens per sentence
            pooled = (H * real[..., None]).sum(axis=1) / counts  # (n, T, d) -> (n, d): padding left out
            return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)  # unit length
    """,
    wrong="""
        def sentence_embedding(H, real):
            pooled = H.mean(axis=1)  # counts the padding positions too
            return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
    """,
)
def sentence_embedding(answer):
    rng = check_rng()
    H = rng.normal(size=(3, 6, 8))
    real = np.arange(6) < np.array([6, 4, 2])[:, None]  # (3, 6): the sentences have 6, 4 and 2 tokens
    H = H * real[..., None] + 5.0 * ~real[..., None]  # padding rows that are not zero, as a model may leave them
    what = "sentence_embedding(H (3, 6, 8), real (3, 6))"
    got = as_array(call(answer, H, real), what)
    mean = (H * real[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)  # (3, 8)
    expected = mean / np.linalg.norm(mean, axis=-1, keepdims=True)
    if got.shape == expected.shape and not np.allclose(got, expected, atol=1e-6):
        everything = H.mean(axis=1)
        if np.allclose(got, everything / np.linalg.norm(everything, axis=-1, keepdims=True)):
            raise Mismatch(f"{what}: you averaged the padding positions too; average only where real is True")
        if np.allclose(got, mean):
            raise Mismatch(f"{what}: the mean is right but not unit length; divide each row by its norm")
        unit = H / np.linalg.norm(H, axis=-1, keepdims=True)
        first = (unit * real[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)
        if np.allclose(got, first / np.linalg.norm(first, axis=-1, keepdims=True)):
            raise Mismatch(f"{what}: you normalised each token before averaging; average first, then normalise")
    expect_close(got, expected, what, atol=1e-6)
