"""A tiny GPT: a decoder-only transformer that predicts the next word of the grammar's sentences, and writes.

    words -> E[word] -> n_layers x block (causal attention with rotary positions, feed-forward)
          -> [LayerNorm] -> W_out -> the next word's logits

Trained on helpers.grammar's sentences, each ended by "."; the parts' backward passes are in gpt_block.py.
Taught in 11_tiny_gpt.
"""

from dataclasses import dataclass

import numpy as np

from helpers._validate import as_rng, positive_int
from helpers.gpt_block import NORMS, block, block_backward
from helpers.gradients import Adam
from helpers.kv_cache import KVCache
from helpers.losses import check_ids, softmax_cross_entropy
from helpers.next_word import (  # VOCAB and the data helpers are part of this module's API (__all__)
    END,
    VOCAB,
    WORD_ID,
    check_sampling,
    default_corpus,
    encode,
    next_word_distribution,
    prompt_ids,
    random_windows,
    sample,
    stream,
)
from helpers.threads import blas_single_thread
from helpers.transformer import (
    check_params,
    embed_backward,
    linear_backward,
    named_layer_norm,
    named_layer_norm_backward,
)

# the model; training; writing; next_word.py's data helpers (one list would take a line per name)
__all__ = ["Config", "parameter_shapes", "init_params", "layer_params", "forward_and_saved", "forward", "backward"]
__all__ += ["input_gradient", "loss_and_grads", "train_next_word", "DEFAULT_STEPS", "train_default", "span_needed"]
__all__ += ["next_logits", "generate", "END", "VOCAB", "WORD_ID", "default_corpus", "encode", "random_windows"]
__all__ += ["next_word_distribution", "sample", "stream"]


@dataclass(frozen=True)
class Config:
    """The model's sizes and which variant it is (the residual and pre/post-LN experiments switch them).

    context: the words each position may look back over (itself included); training windows have this length.
    """

    vocab_size: int = len(VOCAB)
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    d_ff: int = 128
    context: int = 32
    norm: str = "pre"
    residual: bool = True

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "context"):
            positive_int(getattr(self, name), name)
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model={self.d_model} must split into n_heads={self.n_heads} heads of even width")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")


def parameter_shapes(config):
    """The name and shape of every parameter.

    Shapes: E (vocab, d); per layer l: "l.W_q", "l.W_k", "l.W_v", "l.W_o" (d, d), "l.W_1" (d, d_ff), "l.b_1"
            (d_ff,), "l.W_2" (d_ff, d), "l.b_2" (d,), "l.ln1_gamma/beta", "l.ln2_gamma/beta" (d,); with pre-LN a
            final "ln_f_gamma/beta" (d,); W_out (d, vocab), b_out (vocab,).
    """
    d, V, d_ff = config.d_model, config.vocab_size, config.d_ff
    shapes = {"E": (V, d)}
    for layer in range(config.n_layers):
        shapes.update({f"{layer}.{name}": (d, d) for name in ("W_q", "W_k", "W_v", "W_o")})
        shapes.update(
            {f"{layer}.W_1": (d, d_ff), f"{layer}.b_1": (d_ff,), f"{layer}.W_2": (d_ff, d), f"{layer}.b_2": (d,)}
        )
        shapes.update({f"{layer}.{norm}_{part}": (d,) for norm in ("ln1", "ln2") for part in ("gamma", "beta")})
    if config.norm == "pre":
        shapes.update(ln_f_gamma=(d,), ln_f_beta=(d,))
    shapes.update(W_out=(d, V), b_out=(V,))
    return shapes


def init_params(config, rng=None):
    """Random starting parameters: E ~ N(0, 1), matrices ~ N(0, 1/d_in) (W_o and W_2 smaller by sqrt(2 n_layers),
    so the residual stream does not grow with depth), biases 0, LayerNorm gammas 1.

    Shapes: as parameter_shapes(config).
    """
    rng = as_rng(rng)
    params = {}
    for name, shape in parameter_shapes(config).items():
        if name.endswith("gamma"):
            params[name] = np.ones(shape)
        elif len(shape) == 1:  # biases and betas
            params[name] = np.zeros(shape)
        elif name == "E":
            params[name] = rng.normal(0, 1, shape)
        else:
            scale = shape[0] ** -0.5 / (np.sqrt(2 * config.n_layers) if name.endswith(("W_o", "W_2")) else 1)
            params[name] = rng.normal(0, scale, shape)
    return params


def layer_params(params, layer):
    """The parameters of one block, under the names gpt_block uses ("0.W_q" -> "W_q" for layer 0)."""
    prefix = f"{layer}."
    return {name[len(prefix) :]: value for name, value in params.items() if name.startswith(prefix)}


def _block_options(config, start):
    """gpt_block.block's arguments for this model's blocks."""
    return dict(n_heads=config.n_heads, window=config.context, start=start, norm=config.norm, residual=config.residual)


def _check(params, config, ids):
    check_params(params, parameter_shapes(config), config)
    ids = check_ids(ids, "ids", config.vocab_size)
    if ids.ndim != 2 or ids.shape[1] == 0:
        raise ValueError(f"ids must have shape (B, T) with T >= 1, got {ids.shape}")
    return ids


def forward_and_saved(params, config, ids, start=0, kv_caches=None):
    """forward, and what backward needs: each block's inputs and outputs, each layer's attention weights.

    saved["blocks"]: what each block saved; saved["weights"]: one (B, n_heads, T, T_k) array per layer; saved["x"]:
    the last block's output. kv_caches: one KVCache per layer holding the words before ids (generation), or None.
    """
    ids = _check(params, config, ids)
    x = params["E"][ids]  # (B, T) -> (B, T, d): one row of E per word; positions enter in the attention
    saved = {"ids": ids, "blocks": [], "weights": []}
    with blas_single_thread():  # small products: BLAS's own threads only slow them down, more so on a busy machine
        for layer in range(config.n_layers):
            kv_cache = None if kv_caches is None else kv_caches[layer]
            x, block_saved = block(layer_params(params, layer), x, **_block_options(config, start), kv_cache=kv_cache)
            saved["blocks"].append(block_saved)
            saved["weights"].append(block_saved["weights"])
        z = named_layer_norm(params, "ln_f", x) if config.norm == "pre" else x  # (B, T, d)
        saved["x"], saved["z"] = x, z
        return z @ params["W_out"] + params["b_out"], saved  # (B, T, d) @ (d, V) -> (B, T, V)


forward_with_cache = forward_and_saved  # its name in 0.2 ("cache" now means the KV cache only); kept through 0.3


def forward(params, config, ids, start=0):
    """The next word's logits at every position: logits[b, t] scores the word after ids[b, :t+1].

    Causal: logits[:, :t+1] do not depend on ids[:, t+1:]. start: the absolute position of ids[:, 0]
    (rotary positions; a window cut from a longer text). Each position looks back over at most
    config.context words.
    Shapes: ids int (B, T) -> logits (B, T, len(VOCAB)).
    """
    return forward_and_saved(params, config, ids, start)[0]


def _backward_to_input(d_logits, params, config, saved, start=0):
    """Back from the logits to the first block's input: its gradient, and every parameter's but E's."""
    grads = {}
    with blas_single_thread():
        d_z, grads["W_out"], grads["b_out"] = linear_backward(d_logits, saved["z"], params["W_out"], flatten=True)
        d_x = named_layer_norm_backward(d_z, params, "ln_f", saved["x"], grads) if config.norm == "pre" else d_z
        for layer in reversed(range(config.n_layers)):
            layer_saved = saved["blocks"][layer]
            d_x, block_grads = block_backward(
                d_x, layer_params(params, layer), layer_saved, **_block_options(config, start)
            )
            grads.update({f"{layer}.{name}": g for name, g in block_grads.items()})
    return d_x, grads


def backward(d_logits, params, config, saved, start=0):
    """Gradients of the loss w.r.t. every parameter, given its gradient w.r.t. the logits.

    saved: what forward_and_saved kept. Shapes: d_logits (B, T, vocab) -> grads {name: like params[name]}.
    """
    d_x, grads = _backward_to_input(d_logits, params, config, saved, start)
    grads["E"] = embed_backward(d_x, saved["ids"], config.vocab_size)  # (B, T, d) -> (vocab, d)
    return grads


def input_gradient(d_logits, params, config, saved, start=0):
    """The gradient that reaches the first block: the loss's gradient w.r.t. the word vectors E[ids].

    Shapes: d_logits (B, T, vocab) -> (B, T, d_model).
    """
    return _backward_to_input(d_logits, params, config, saved, start)[0]


def loss_and_grads(params, config, ids):
    """Next-word cross-entropy over a batch of windows, and its gradients: position t predicts word t + 1.

    Shapes: ids int (B, T + 1) -> loss float, grads {name: like params[name]}.
    """
    ids = np.asarray(ids)
    inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, T) each: the targets are the inputs shifted by one
    logits, saved = forward_and_saved(params, config, inputs)
    loss, d_logits = softmax_cross_entropy(logits, targets)
    return float(loss), backward(d_logits, params, config, saved)


def train_next_word(params, config, train_ids, *, steps=1000, batch_size=32, lr=1e-2, rng=None, callback=None):
    """Train the model to predict the next word: Adam on random windows of the training stream.

    The learning rate decays linearly to a hundredth of lr.
    Shapes: train_ids int (N,) -> losses, a list of `steps` floats. Updates params in place.
    callback(step, loss) is called after every step (a progress bar, a live curve).
    """
    rng = as_rng(rng)
    optimiser, losses = Adam(params, lr=lr), []
    with blas_single_thread():  # small products: BLAS's own threads only slow them down (10)
        for step in range(positive_int(steps, "steps")):
            window = random_windows(train_ids, config.context + 1, batch_size, rng)  # (B, context + 1)
            loss, grads = loss_and_grads(params, config, window)
            optimiser.lr = lr * (1 - 0.99 * step / steps)
            optimiser.step(grads)
            losses.append(loss)
            if callback is not None:
                callback(step, loss)
    return losses


DEFAULT_STEPS = 1000


def train_default(seed=0, steps=DEFAULT_STEPS, callback=None):
    """The notebook's model: Config() trained on default_corpus(seed). Deterministic for a seed.

    Shapes: -> (params, config).
    """
    config = Config()
    rng = np.random.default_rng(seed)
    params = init_params(config, rng)
    train_next_word(params, config, stream(default_corpus(seed)[0]), steps=steps, rng=rng, callback=callback)
    return params, config


def span_needed(config):
    """How many of the latest words the next word depends on: each layer looks back context - 1 more."""
    return config.n_layers * (config.context - 1) + 1


def next_logits(params, config, ids, kv_caches=None, unseen=1):
    """The logits of the word after `ids`, and each layer's attention rows of the last word.

    kv_caches: one KVCache per layer holding every word of ids but the last `unseen`, which are run now
    (and join the caches). None: no cache; the model reruns every word the next one depends on.
    Shapes: ids a list of T ints -> logits (V,), weights [(n_heads, T_k)] * n_layers.
    """
    if kv_caches is None:
        span = ids[-span_needed(config) :]  # the words before these change nothing (a sliding window)
        logits, saved = forward_and_saved(params, config, np.asarray(span)[None], start=len(ids) - len(span))
    else:
        logits, saved = forward_and_saved(params, config, np.asarray(ids[-unseen:])[None], len(ids) - unseen, kv_caches)
    return logits[0, -1], [w[0, :, -1] for w in saved["weights"]]


def generate(params, config, prompt, n_new, *, temperature=1.0, top_k=None, rng=None, kv_cache=True, cache=None):
    """The prompt's words, then n_new words the model writes one at a time, each sampled from its prediction.

    temperature=0 takes the most likely word (greedy); top_k keeps only the k most likely. Past
    config.context words the model keeps looking back over the latest context words only (a sliding
    window in every layer), so it can write on forever. kv_cache=True keeps each layer's keys and values (10's
    KVCache) and runs each new word alone; False reruns the words the next one depends on: the same words.
    cache: kv_cache's name in 0.2, still taken (it wins when given) through 0.3. rng: a seed or Generator (None:
    seed 0), one uniform number per word.
    Shapes: prompt a list of words -> a list of len(prompt) + n_new words.
    """
    ids = prompt_ids(prompt)
    if isinstance(n_new, bool) or not isinstance(n_new, (int, np.integer)) or n_new < 0:
        raise ValueError(f"n_new must be an int >= 0, got {n_new!r}")
    check_sampling(temperature, top_k, config.vocab_size)
    rng = as_rng(rng)
    kv_cache = kv_cache if cache is None else cache
    kv_caches = [KVCache() for _ in range(config.n_layers)] if kv_cache else None
    unseen = len(ids)  # the prompt goes through the cached model at once, then one word at a time
    for _ in range(n_new):
        probs = next_word_distribution(next_logits(params, config, ids, kv_caches, unseen)[0], temperature, top_k)
        ids.append(int(np.argmax(probs)) if temperature == 0 else sample(probs, rng))
        unseen = 1
    return [VOCAB[i] for i in ids]
