"""all-MiniLM-L6-v2, a BERT encoder, in numpy, with helpers.MultiHeadAttention in every layer.

Taught in 09_attention_in_a_real_model.
"""

from typing import NamedTuple

import numpy as np

from helpers.layers import gelu, layer_norm
from helpers.multihead import MultiHeadAttention

__all__ = ["Output", "MiniLM"]


class Output(NamedTuple):
    """What MiniLM.run returns for n texts padded to T tokens (the longest text's count)."""

    tokens: list  # n lists of wordpiece strings, [CLS] ... [SEP], without padding
    states: np.ndarray  # (n, 7, T, 384): the embedding output, then each layer's output
    weights: np.ndarray  # (n, 6, 12, T, T): [text, layer, head, query, key]
    real: np.ndarray  # (n, T) bool: True at real tokens, False at padding


class MiniLM:
    """all-MiniLM-L6-v2 (BERT: 6 layers, 12 heads, d_model 384) in numpy.

    Every layer's self-attention is a helpers.MultiHeadAttention holding the real weights.
    Use load_minilm() to get one.
    """

    n_layers, n_heads, d_model = 6, 12, 384

    def __init__(self, tensors, tokenizer, dtype=np.float32):
        def get(name):
            return np.ascontiguousarray(tensors[name], dtype=dtype)

        self.dtype = np.dtype(dtype)
        self.tokenizer = tokenizer
        self.word_embeddings = get("embeddings.word_embeddings.weight")  # (30522, 384)
        self.position_embeddings = get("embeddings.position_embeddings.weight")  # (512, 384)
        self.token_type_embedding = get("embeddings.token_type_embeddings.weight")[0]  # (384,)
        self.embedding_norm = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers = [self._layer(get, f"encoder.layer.{i}.") for i in range(self.n_layers)]

    def _layer(self, get, prefix):
        # the file stores torch Linear weights as (d_out, d_in); we multiply rows: X @ W with W = weight.T
        def weight(name):
            return np.ascontiguousarray(get(name).T)

        parts = [f"{prefix}attention.{name}" for name in ("self.query", "self.key", "self.value", "output.dense")]
        attention = MultiHeadAttention.from_weights(
            *(weight(f"{part}.weight") for part in parts), self.n_heads, biases=[get(f"{part}.bias") for part in parts]
        )
        return {
            "attention": attention,
            "attention_norm": (
                get(f"{prefix}attention.output.LayerNorm.weight"),
                get(f"{prefix}attention.output.LayerNorm.bias"),
            ),
            "W_1": weight(f"{prefix}intermediate.dense.weight"),
            "b_1": get(f"{prefix}intermediate.dense.bias"),
            "W_2": weight(f"{prefix}output.dense.weight"),
            "b_2": get(f"{prefix}output.dense.bias"),
            "output_norm": (get(f"{prefix}output.LayerNorm.weight"), get(f"{prefix}output.LayerNorm.bias")),
        }

    def __repr__(self):
        return f"MiniLM(layers={self.n_layers}, heads={self.n_heads}, d_model={self.d_model}, dtype={self.dtype})"

    def tokenize(self, text):
        """Wordpiece tokens with [CLS] ... [SEP]."""
        return self.tokenizer.encode(text).tokens

    def batch(self, texts):
        """Wordpieces, and their ids padded with 0 ([PAD]) to the longest text.

        Shapes: n texts (or one string) -> tokens (n lists), ids (n, T), real (n, T) bool (False at padding).
        """
        if isinstance(texts, str):
            texts = [texts]
        if not texts or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"texts must be a string or a non-empty list of strings, got {texts!r:.80}")
        encodings = self.tokenizer.encode_batch(list(texts))
        T = max(len(e.ids) for e in encodings)
        if T > self.position_embeddings.shape[0]:
            raise ValueError(f"a text has {T} tokens; the model takes at most {self.position_embeddings.shape[0]}")
        ids = np.zeros((len(texts), T), dtype=np.int64)
        for i, e in enumerate(encodings):
            ids[i, : len(e.ids)] = e.ids
        real = np.arange(T) < np.array([len(e.ids) for e in encodings])[:, None]  # (1, T) < (n, 1) -> (n, T)
        return [e.tokens for e in encodings], ids, real

    def check_head_mask(self, head_mask, name="head_mask", groups=False):
        """head_mask as a bool array, True = keep the head (None keeps every head); or g of them with groups=True.

        What run and encode (and heads.masked_embeddings, with groups) accept, with one message for any other.
        Shapes: (6, 12) bool or None -> (6, 12) bool; with groups, (g, 6, 12) bool -> (g, 6, 12).
        """
        if head_mask is None and not groups:
            return np.ones((self.n_layers, self.n_heads), dtype=bool)
        head_mask = np.asarray(head_mask)
        lead = head_mask.shape[:1] if groups else ()  # (g,): the groups
        if head_mask.dtype != bool or head_mask.shape != lead + (self.n_layers, self.n_heads):
            shape = f"({'g, ' if groups else ''}{self.n_layers}, {self.n_heads})"
            raise ValueError(
                f"{name} must be a bool array of shape {shape} (True = keep the head), "
                f"got {head_mask.dtype} {head_mask.shape}"
            )
        return head_mask

    def check_replace(self, replace):
        """What switched-off heads add instead (run, encode, heads' ablations), as one array or None per layer.

        Shapes: replace (6, 12, 384) floats, or None (nothing: zero-ablation) -> 6 arrays (12, 384), or 6 Nones.
        """
        if replace is None:
            return [None] * self.n_layers
        replace = np.asarray(replace)
        shape = (self.n_layers, self.n_heads, self.d_model)
        if replace.shape != shape or not np.issubdtype(replace.dtype, np.floating):
            raise ValueError(
                f"replace must be floats of shape ({self.n_layers}, {self.n_heads}, {self.d_model}) "
                f"(what each switched-off head gives instead), got {replace.dtype} {replace.shape}"
            )
        return list(replace.astype(self.dtype, copy=False))

    def embed(self, ids, real):
        """Token + position + segment embeddings, then LayerNorm; zeros at padding.

        Shapes: ids (n, T), real (n, T) bool -> (n, T, 384).
        """
        T = ids.shape[-1]
        h = self.word_embeddings[ids] + self.position_embeddings[:T] + self.token_type_embedding  # (n, T, 384)
        return layer_norm(h, *self.embedding_norm) * real[..., None]

    def layer(self, i, h, real, keep_heads=None, replace=None):
        """Encoder layer i: attention, add and norm, feed-forward, add and norm.

        keep_heads (12,) or (n, 12) bool: a head switched off (False) may attend to nothing, so it adds nothing.
        replace (12, 384): what a switched-off head adds instead, the same vector at every token (its mean
        output, for mean-ablation); None: nothing (zero-ablation).
        Shapes: h (n, T, 384), real (n, T) bool -> h (n, T, 384) with zeros at padding, weights (n, 12, T, T).
        """
        layer = self.layers[i]
        mask = real[:, :, None] & real[:, None, :]  # (n, T, T): real queries see real keys, in every head
        off = None
        if keep_heads is not None and not np.all(keep_heads):
            mask = mask[:, None] & np.asarray(keep_heads)[..., :, None, None]  # (n, 12, T, T): one per head
            off = ~np.broadcast_to(np.asarray(keep_heads), (len(h), self.n_heads))  # (n, 12)
        attended, weights = layer["attention"](h, mask=mask)  # (n, T, 384), (n, 12, T, T)
        if off is not None and replace is not None:
            instead = off.astype(h.dtype) @ np.asarray(replace, dtype=h.dtype)  # (n, 12) @ (12, 384) -> (n, 384)
            attended = attended + instead[:, None, :]  # the same vector at every token of a text
        # from here on each token is on its own: compute only the real tokens, as rows
        rows = layer_norm((h + attended)[real], *layer["attention_norm"])  # (N, 384), N real tokens
        hidden = gelu(rows @ layer["W_1"] + layer["b_1"])  # (N, 384) @ (384, 1536) -> (N, 1536)
        rows = layer_norm(rows + hidden @ layer["W_2"] + layer["b_2"], *layer["output_norm"])  # (N, 384)
        out = np.zeros_like(h)
        out[real] = rows  # (n, T, 384) again
        return out, weights

    def run(self, texts, head_mask=None, replace=None):
        """Run texts through the model as one padded batch; every layer's states and weights.

        head_mask (6, 12) bool, True = keep: a switched-off head may attend to nothing, so its
        weights are all zero and it adds nothing (05's fully masked rows). So are padded rows.
        replace (6, 12, 384): what each switched-off head adds instead, at every token (None: nothing).
        Shapes: n texts -> Output(tokens, states (n, 7, T, 384), weights (n, 6, 12, T, T), real (n, T)).
        """
        head_mask, replace = self.check_head_mask(head_mask), self.check_replace(replace)
        tokens, ids, real = self.batch(texts)
        h = self.embed(ids, real)  # (n, T, 384)
        states, weights = [h], []
        for i in range(self.n_layers):
            h, w = self.layer(i, h, real, head_mask[i], replace[i])  # (n, T, 384), (n, 12, T, T)
            states.append(h)
            weights.append(w)
        return Output(tokens, np.stack(states, axis=1), np.stack(weights, axis=1), real)

    def hidden_states(self, text):
        """The embedding output, then each layer's output. Shapes: -> (7, T, 384)."""
        return self.run([text]).states[0]

    def attentions(self, text):
        """Every layer's and head's attention weights [layer, head, query, key]. Shapes: -> (6, 12, T, T)."""
        return self.run([text]).weights[0]

    def pool(self, h, real):
        """Sentence embeddings from the last layer: the mean over the real tokens, then unit length.

        Shapes: h (n, T, 384), real (n, T) bool -> (n, 384).
        """
        counts = real.sum(axis=1, keepdims=True).astype(h.dtype)  # (n, 1) real tokens per sentence
        pooled = (h * real[..., None]).sum(axis=1) / counts  # (n, T, 384) -> (n, 384)
        return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)

    def encode(self, sentences, head_mask=None, batch_size=32, replace=None):
        """Sentence embeddings: mean of the last layer over the real tokens, then unit length.

        Sentences of similar length are batched together, batch_size at a time.
        head_mask and replace: heads switched off, and what they add instead, as in run().
        Shapes: a list of n strings (or one string) -> (n, 384).
        """
        sentences = [sentences] if isinstance(sentences, str) else list(sentences)
        head_mask, replace = self.check_head_mask(head_mask), self.check_replace(replace)
        order = np.argsort([len(s) for s in sentences], kind="stable")  # less padding per batch
        embeddings = np.empty((len(sentences), self.d_model), dtype=self.dtype)  # (n, 384)
        for start in range(0, len(sentences), batch_size):
            chosen = order[start : start + batch_size]
            _, ids, real = self.batch([sentences[i] for i in chosen])
            h = self.embed(ids, real)  # (b, T, 384)
            for i in range(self.n_layers):
                h, _ = self.layer(i, h, real, head_mask[i], replace[i])
            embeddings[chosen] = self.pool(h, real)
        return embeddings
