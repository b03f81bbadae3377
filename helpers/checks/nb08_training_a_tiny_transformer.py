"""The exercises of 08_training_a_tiny_transformer."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.checks._reference import multihead_loop


def _block(X, W_q, W_k, W_v, W_o, n_heads, residual=True, scale_width=None):
    """Multi-head self-attention of one sentence, plus X unless residual=False; and the merged heads.

    scale_width: scale the scores by 1/sqrt(scale_width) instead of 1/sqrt(d_head) (a common mistake).
    Shapes: (T, d) -> (T, d), (T, d).
    """
    scale = None if scale_width is None else 1 / np.sqrt(scale_width)
    merged = multihead_loop(X, X, W_q, W_k, W_v, W_o, n_heads, scale=scale, project=False)  # (T, d_model)
    return merged @ W_o + X if residual else merged @ W_o, merged


@exercise(
    notebook="08_training_a_tiny_transformer",
    hint="Project X three times, split each of Q, K, V into heads, run scaled dot-product attention in each head, "
         "merge the heads and multiply by W_o: that is the change ΔE. The block returns X + ΔE.",
    solution="""
        def residual_attention_block(X, W_q, W_k, W_v, W_o, n_heads):
            T, d_model = X.shape
            d_head = d_model // n_heads

            def split(M):  # (T, d_model) -> (h, T, d_head)
                return M.reshape(T, n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)
            scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_head)  # (h, T, T)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights /= weights.sum(axis=-1, keepdims=True)  # each row sums to 1
            heads = weights @ V  # (h, T, T) @ (h, T, d_head) -> (h, T, d_head)
            delta_E = heads.transpose(1, 0, 2).reshape(T, d_model) @ W_o  # (T, d_model)
            return X + delta_E  # the residual: E' = E + ΔE
    """,
    wrong="""
        def residual_attention_block(X, W_q, W_k, W_v, W_o, n_heads):
            T, d_model = X.shape
            d_head = d_model // n_heads

            def split(M):
                return M.reshape(T, n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)
            scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_head)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights /= weights.sum(axis=-1, keepdims=True)
            return (weights @ V).transpose(1, 0, 2).reshape(T, d_model) @ W_o  # ΔE only: X is not added back
    """,
    forbid=("helpers.MultiHeadAttention", "helpers.multihead.MultiHeadAttention",
            "helpers.transformer.self_attention"),
)
def residual_attention_block(answer):
    rng = check_rng()
    for T, d_model, n_heads in ((4, 6, 2), (5, 8, 4), (3, 4, 1)):
        X = rng.normal(size=(T, d_model))
        W_q, W_k, W_v, W_o = (rng.normal(0, 0.7, (d_model, d_model)) for _ in range(4))
        what = f"residual_attention_block(X of shape {X.shape}, ..., n_heads={n_heads})"
        got = as_array(call(answer, X, W_q, W_k, W_v, W_o, n_heads), what)
        expected, merged = _block(X, W_q, W_k, W_v, W_o, n_heads)
        _block_mistakes(got, X, (W_q, W_k, W_v, W_o), n_heads, merged, what)
        expect_close(got, expected, what)


def _block_mistakes(got, X, W, n_heads, merged, what):
    """Name the block's usual mistakes: no residual, no W_o, the wrong scale, one head instead of several."""
    def same(candidate):
        return got.shape == candidate.shape and np.allclose(got, candidate)

    if same(_block(X, *W, n_heads, residual=False)[0]):
        raise Mismatch(f"{what} returned ΔE, the change attention proposes; the block returns E' = E + ΔE: add X back")
    if same(X + merged):
        raise Mismatch(f"{what}: the merged heads still need W_o: E' = X + (merged heads) @ W_o")
    if n_heads > 1 and same(_block(X, *W, n_heads, scale_width=X.shape[1])[0]):
        raise Mismatch(f"{what}: you scaled by 1/sqrt(d_model); each head's scores are scaled by 1/sqrt(d_head), "
                       "d_head = d_model // n_heads")
    if n_heads > 1 and same(_block(X, *W, 1)[0]):
        raise Mismatch(f"{what} is one wide head: split Q, K and V into n_heads={n_heads} heads first")


@exercise(
    notebook="08_training_a_tiny_transformer",
    hint="Start from zeros of shape (vocab_size, d_model). Every place (b, t) where word ids[b, t] sits adds "
         "d_X[b, t] to that word's row. np.add.at(d_E, ids, d_X) does it; d_E[ids] += d_X counts a repeated word once.",
    solution="""
        def embedding_backward(d_X, ids, vocab_size):
            d_E = np.zeros((vocab_size, d_X.shape[-1]))  # (vocab_size, d_model)
            np.add.at(d_E, ids, d_X)  # row ids[b, t] collects d_X[b, t], once per place the word sits
            return d_E
    """,
    wrong="""
        def embedding_backward(d_X, ids, vocab_size):
            d_E = np.zeros((vocab_size, d_X.shape[-1]))
            d_E[ids] += d_X  # a word that sits in two places keeps only one of its gradients
            return d_E
    """,
    forbid=("helpers.transformer.embed_backward",),
)
def embedding_backward(answer):
    rng = check_rng()
    for ids in (np.array([[1, 4, 4, 0], [2, 4, 1, 3]]), np.array([[0, 1, 2]]), np.array([[5, 5, 5], [5, 0, 5]])):
        vocab_size, d_model = 6, 3
        d_X = rng.normal(size=ids.shape + (d_model,))
        expected = np.zeros((vocab_size, d_model))
        for index in np.ndindex(ids.shape):
            expected[ids[index]] += d_X[index]
        what = f"embedding_backward(d_X of shape {d_X.shape}, ids {ids.tolist()}, vocab_size={vocab_size})"
        got = as_array(call(answer, d_X, ids, vocab_size), what)
        once = np.zeros((vocab_size, d_model))
        once[ids] += d_X
        if got.shape == once.shape and np.allclose(got, once) and not np.allclose(once, expected):
            word = int(np.argmax(np.abs(once - expected).sum(axis=1)))
            raise Mismatch(f"{what}: word {word} sits in {int((ids == word).sum())} places but its row got only one "
                           "of their gradients (d_E[ids] += d_X writes each row once); use np.add.at(d_E, ids, d_X)")
        expect_close(got, expected, what)
