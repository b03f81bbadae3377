"""Word vectors: cosine similarity, similarity matrices, the real token-embedding table.

The similarity matrix comes in 02_similarity_matrix.
Taught in 01_embeddings (cosine, the embedding table).
"""

import functools

import numpy as np

from helpers._validate import as_float_array

__all__ = [
    "cosine_similarity",
    "unit_rows",
    "similarity_matrix",
    "nearest",
    "pca_2d",
    "TokenEmbeddings",
    "load_token_embeddings",
]


def cosine_similarity(a, b):
    """cos(a, b) = a.b / (|a| |b|) along the last axis; 0 where either vector is zero.

    Shapes: a (..., d), b (..., d) -> (...), broadcast over the leading axes.
    """
    a = as_float_array(a, "a")
    b = as_float_array(b, "b")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"a and b must have the same last axis d: a has shape {a.shape}, b has shape {b.shape}")
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    dots = np.sum(a * b, axis=-1)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def unit_rows(X):
    """Scale each row to length 1 (a zero row stays zero). Shapes: (..., d) -> (..., d)."""
    X = as_float_array(X, "X")
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def similarity_matrix(X, cosine=False):
    """All pairwise dot products X X^T (cosine similarities when cosine=True).

    Shapes: X (T, d) -> (T, T).
    Taught in 02_similarity_matrix.
    """
    X = as_float_array(X, "X", min_ndim=2)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (T, d), got shape {X.shape}")
    if cosine:
        X = unit_rows(X)
    return X @ X.T  # (T, d) @ (d, T) -> (T, T)


def nearest(vector, vectors, labels, k=5):
    """The k labels whose vectors have the highest cosine with `vector`, best first.

    Shapes: vector (d,), vectors (m, d), labels m strings -> a list of k (label, cosine).
    Taught in 01_embeddings (TokenEmbeddings.nearest searches the whole table); used in
    09_attention_in_a_real_model.
    """
    vectors = as_float_array(vectors, "vectors", min_ndim=2)
    if len(labels) != len(vectors):
        raise ValueError(f"got {len(labels)} labels for {len(vectors)} vectors (shape {vectors.shape})")
    cosines = unit_rows(vectors) @ unit_rows(as_float_array(vector, "vector"))  # (m, d) @ (d,) -> (m,)
    return _best(cosines, labels, k)


def _best(cosines, labels, k):
    """The k highest cosines with their labels, best first; a tie goes to the earlier row, -inf marks a row to skip."""
    top = np.argsort(-cosines, kind="stable")[:k]
    return [(labels[i], float(cosines[i])) for i in top]


def pca_2d(X):
    """Project the rows of X onto their two main directions (PCA through numpy's SVD).

    Shapes: X (n, d) with n >= 2, d >= 2 -> (n, 2).
    SVD's signs are arbitrary, so each axis is flipped to make its largest |coordinate| positive.
    """
    X = as_float_array(X, "X", min_ndim=2)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 2:
        raise ValueError(f"X must be 2-D (n, d) with n >= 2 and d >= 2, got shape {X.shape}")
    X_centred = X - X.mean(axis=0)  # PCA describes the spread around the mean
    _, _, Vt = np.linalg.svd(X_centred, full_matrices=False)  # rows of Vt: directions, widest first
    P = X_centred @ Vt[:2].T  # (n, d) @ (d, 2) -> (n, 2)
    biggest = P[np.argmax(np.abs(P), axis=0), [0, 1]]  # (2,): each axis's largest |coordinate|
    return P * np.where(biggest < 0, -1, 1).astype(P.dtype)


class TokenEmbeddings:
    """The pretrained model's tokenizer and static token-embedding table (30,522 x 384).

    These are the vectors the model starts from, before any attention layer: one fixed
    vector per wordpiece, whatever its context. Use load_token_embeddings() to get one.
    """

    SPECIAL = ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")

    def __init__(self, table, tokenizer):
        self.table = table  # (vocab_size, d_model)
        self.tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        self.vocab = [None] * len(vocab)
        for token, index in vocab.items():
            self.vocab[index] = token
        # tokens a neighbour list should never show: special and unused slots
        self._hidden = np.array([t in self.SPECIAL or t.startswith("[unused") for t in self.vocab])

    @functools.cached_property
    def _unit(self):
        """The table with unit rows, for nearest(): made on first use, as it costs another 45 MiB.

        In float32 whatever the table's dtype: a search ranks 30,522 cosines, and float32 does it
        at half the memory and time of float64 (3 digits are shown).
        """
        return unit_rows(self.table.astype(np.float32, copy=False))  # (vocab_size, d_model)

    def __repr__(self):
        return f"TokenEmbeddings(vocab_size={self.table.shape[0]}, d_model={self.table.shape[1]})"

    def tokenize(self, text, special_tokens=False):
        """Wordpiece tokens of `text` (lower-cased; a split word's pieces start with ##)."""
        return self.tokenizer.encode(text, add_special_tokens=special_tokens).tokens

    def ids(self, text, special_tokens=False):
        """Vocabulary ids of the wordpieces of `text`."""
        return list(self.tokenizer.encode(text, add_special_tokens=special_tokens).ids)

    def vectors(self, text, special_tokens=False):
        """One row of the table per wordpiece. Shapes: -> (T, d_model)."""
        return self.table[self.ids(text, special_tokens)]

    def vector(self, word):
        """The vector of one word: its row, or the mean of its pieces' rows if it is split."""
        ids = self.ids(word)
        if not ids:
            raise ValueError(f"word {word!r} has no wordpieces")
        return self.table[ids].mean(axis=0)

    def nearest(self, query, k=10, exclude_query=True):
        """The k tokens whose vectors have the highest cosine with `query` (a word or a vector).

        Returns a list of (token, cosine), best first (a tie: the lower id); special and [unused] tokens are skipped.
        """
        vec = self.vector(query) if isinstance(query, str) else as_float_array(query, "query")
        if vec.shape != (self.table.shape[1],):
            raise ValueError(f"query vector must have shape ({self.table.shape[1]},), got {vec.shape}")
        cosines = self._unit @ unit_rows(vec).astype(np.float32)  # (vocab, d) @ (d,) -> (vocab,)
        cosines = np.where(self._hidden, -np.inf, cosines)
        if exclude_query and isinstance(query, str):
            cosines[self.ids(query)] = -np.inf
        return _best(cosines, self.vocab, k)  # nearest()'s ranking, on a table already made of unit rows


def load_token_embeddings(dtype=np.float32):
    """The real token-embedding table and tokenizer of all-MiniLM-L6-v2 (checksums verified), in `dtype`.

    float32 is how the model stores it; float64 gives the same digits on every machine in long sums.
    A clear error with the install command if the weights package is missing.
    Shapes: .table (30522, 384).
    """
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"dtype must be a float type such as np.float32 or np.float64, got {dtype}")
    return _load_token_embeddings(dtype.name)


@functools.cache
def _load_token_embeddings(dtype_name):
    from helpers.pretrained import load_tensor, load_tokenizer

    # only this table is read: the other weights would stay in memory as long as the kernel runs
    table = load_tensor("embeddings.word_embeddings.weight").astype(dtype_name, copy=False)  # (30522, 384)
    table.setflags(write=False)  # cached and shared: an in-place edit would leak into every later use
    return TokenEmbeddings(table, load_tokenizer())
