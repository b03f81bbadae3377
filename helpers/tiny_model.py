"""The tiny masked-word transformer of notebook 08: its parameters, forward and backward passes, training.

Built from the parts in transformer.py, trained on the sentences of grammar.py.
Taught in 08_training_a_tiny_transformer.
"""

from dataclasses import dataclass

import numpy as np

from helpers import grammar
from helpers._validate import as_rng, positive_int
from helpers.attention import softmax
from helpers.gradients import Adam
from helpers.losses import check_ids, softmax_cross_entropy
from helpers.positional import sinusoidal_positional_encoding
from helpers.transformer import (
    check_params,
    embed_backward,
    gelu,
    gelu_backward,
    linear_backward,
    named_layer_norm,
    named_layer_norm_backward,
    self_attention,
    self_attention_backward,
)

__all__ = [
    "Config",
    "parameter_shapes",
    "init_params",
    "forward",
    "backward",
    "loss_and_grads",
    "choose_masks",
    "train_masked_word",
    "evaluate_verbs",
    "subject_share",
    "predict",
]


@dataclass(frozen=True)
class Config:
    """Which parts the model has, and its sizes. The baselines switch off `attention` or `positions`.

    residual=False reads out the attention's change alone, E' = delta_E, instead of E' = E + delta_E.
    """

    vocab_size: int = len(grammar.VOCAB)
    d_model: int = 32
    n_heads: int = 2
    positions: bool = True
    attention: bool = True
    layer_norm: bool = False
    feed_forward: bool = False
    d_ff: int = 64
    residual: bool = True  # last, so that the fields before it keep their positions

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "d_ff"):
            positive_int(getattr(self, name), name)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if not (self.attention or self.residual):
            raise ValueError("residual=False needs attention=True: without attention there is no change to read out")


def parameter_shapes(config):
    """The name and shape of every parameter of the parts `config` switches on.

    Shapes: E (vocab, d); W_q, W_k, W_v, W_o (d, d); with feed-forward W_1 (d, d_ff), b_1 (d_ff,),
            W_2 (d_ff, d), b_2 (d,); with LayerNorm a gamma and a beta (d,) per norm; W_out (d, vocab), b_out (vocab,).
    """
    d, V = config.d_model, config.vocab_size
    shapes = {"E": (V, d)}
    if config.attention:
        shapes.update({name: (d, d) for name in ("W_q", "W_k", "W_v", "W_o")})
    if config.feed_forward:
        shapes.update(W_1=(d, config.d_ff), b_1=(config.d_ff,), W_2=(config.d_ff, d), b_2=(d,))
    if config.layer_norm:
        for norm in ("ln_1", "ln_2", "ln_f") if config.feed_forward else ("ln_1", "ln_f"):
            shapes.update({f"{norm}_gamma": (d,), f"{norm}_beta": (d,)})
    shapes.update(W_out=(d, V), b_out=(V,))
    return shapes


def init_params(config, rng=None):
    """Random starting parameters: E ~ N(0, 1/4), matrices ~ N(0, 1/d_in), biases 0, LayerNorm gammas 1.

    Shapes: as parameter_shapes(config).
    """
    rng = as_rng(rng)
    params = {}
    for name, shape in parameter_shapes(config).items():
        if name == "E":  # word vectors of length ~sqrt(d)/2, shorter than the position vectors' sqrt(d/2)
            params[name] = rng.normal(0, 0.5, shape)
        elif name.endswith("gamma"):
            params[name] = np.ones(shape)
        elif len(shape) == 1:  # biases and betas
            params[name] = np.zeros(shape)
        else:  # keeps x W at about the size of x
            params[name] = rng.normal(0, shape[0] ** -0.5, shape)
    return params


def _check_batch(params, config, ids, lengths, masked):
    """ids, lengths and masked as int arrays, checked: params fit config, and they describe B sentences
    with one masked word each. Raises ValueError/TypeError naming the argument otherwise."""
    check_params(params, parameter_shapes(config), config)
    ids = check_ids(ids, "ids", config.vocab_size)
    if ids.ndim != 2:
        raise ValueError(f"ids must have shape (B, T), got {ids.shape}")
    lengths, masked = np.asarray(lengths), np.asarray(masked)
    for name, value in (("lengths", lengths), ("masked", masked)):
        if value.size and not np.issubdtype(value.dtype, np.integer):
            raise TypeError(f"{name} must be integers, got dtype {value.dtype} with shape {value.shape}")
    if lengths.shape != ids.shape[:1] or not ((1 <= lengths) & (lengths <= ids.shape[1])).all():
        raise ValueError(
            f"lengths must be {len(ids)} ints in [1, T={ids.shape[1]}] for ids {ids.shape}, got {lengths!r}"
        )
    if masked.shape != ids.shape[:1] or not ((0 <= masked) & (masked < lengths)).all():
        raise ValueError(f"masked must be one position per sentence inside its length {lengths!r}, got {masked!r}")
    return ids, lengths, masked


def _norm(params, name, x, config):
    """LayerNorm `name` if the model has LayerNorm, else x unchanged."""
    return named_layer_norm(params, name, x) if config.layer_norm else x


def forward(params, config, ids, lengths, masked):
    """Logits for the word at each sentence's masked position, and what the backward pass needs.

    Shapes: ids int (B, T), lengths int (B,), masked int (B,) -> logits (B, vocab), cache dict
            (cache["weights"] (B, n_heads, 1, T): the masked word's attention row in each head).
    """
    ids, lengths, masked = _check_batch(params, config, ids, lengths, masked)
    B, T = ids.shape
    X = params["E"][ids]  # (B, T) -> (B, T, d): one row of E per word
    if config.positions:
        X = X + sinusoidal_positional_encoding(T, config.d_model)  # (B, T, d) + (T, d) -> (B, T, d)
    cache = {"ids": ids, "lengths": lengths, "masked": masked, "X": X}
    x = X[np.arange(B), masked]  # (B, T, d) -> (B, d): only the masked word is read out, so only it asks
    if config.attention:
        H = _norm(params, "ln_1", X, config)
        delta_E, cache["weights"] = self_attention(params, H, lengths, config.n_heads, rows=masked)  # (B, 1, d)
        x = x + delta_E[:, 0] if config.residual else delta_E[:, 0]  # the residual: E' = E + delta_E, (B, d)
    cache["x"] = x
    if config.feed_forward:
        u = _norm(params, "ln_2", x, config)
        cache["a"] = u @ params["W_1"] + params["b_1"]  # (B, d) @ (d, d_ff) -> (B, d_ff)
        x = x + gelu(cache["a"]) @ params["W_2"] + params["b_2"]  # (B, d_ff) @ (d_ff, d) -> (B, d)
    cache["x2"] = x
    z = _norm(params, "ln_f", x, config)
    cache["z"] = z
    return z @ params["W_out"] + params["b_out"], cache  # (B, d) @ (d, vocab) -> (B, vocab)


def _norm_backward(d_out, params, name, x, config, grads):
    """Back through _norm: d_x, and LayerNorm's gamma and beta gradients into `grads`."""
    return named_layer_norm_backward(d_out, params, name, x, grads) if config.layer_norm else d_out


def backward(d_logits, params, config, cache):
    """Gradients of the loss w.r.t. every parameter, given its gradient w.r.t. the logits.

    Shapes: d_logits (B, vocab) -> grads {name: like params[name]}.
    """
    grads = {}
    d_z, grads["W_out"], grads["b_out"] = linear_backward(d_logits, cache["z"], params["W_out"])  # (B, d)
    d_x = _norm_backward(d_z, params, "ln_f", cache["x2"], config, grads)
    if config.feed_forward:  # x2 = x + gelu(a) W_2 + b_2: the residual passes d_x straight through
        d_h, grads["W_2"], grads["b_2"] = linear_backward(d_x, gelu(cache["a"]), params["W_2"])  # (B, d_ff)
        d_u, grads["W_1"], grads["b_1"] = linear_backward(
            gelu_backward(d_h, cache["a"]), _norm(params, "ln_2", cache["x"], config), params["W_1"]
        )
        d_x = d_x + _norm_backward(d_u, params, "ln_2", cache["x"], config, grads)
    ids, lengths, X, masked = cache["ids"], cache["lengths"], cache["X"], cache["masked"]
    d_X = np.zeros_like(X)
    if config.residual:  # without it x is delta_E alone, and X gets its gradient only through the attention
        d_X[np.arange(len(ids)), masked] = d_x  # (B, d) -> (B, T, d): x was the masked rows of X (+ delta_E)
    if config.attention:  # x = X[masked] + delta_E(ln_1(X)): X gets d_x directly and through the attention
        H = _norm(params, "ln_1", X, config)
        d_H, attention_grads = self_attention_backward(d_x[:, None], params, H, lengths, config.n_heads, rows=masked)
        grads.update(attention_grads)
        d_X += _norm_backward(d_H, params, "ln_1", X, config, grads)
    grads["E"] = embed_backward(d_X, ids, config.vocab_size)  # the positions have no parameters
    return grads


def loss_and_grads(params, config, ids, lengths, masked, targets):
    """Cross-entropy of the masked words and its gradients. Shapes: as forward, targets int (B,)."""
    logits, cache = forward(params, config, ids, lengths, masked)
    loss, d_logits = softmax_cross_entropy(logits, targets)
    return loss, backward(d_logits, params, config, cache)


def choose_masks(sentences, rng, verb_share=0.5):
    """The word to hide in each sentence: its verb with probability verb_share, else any word.

    Shapes: list of B Sentence -> positions int (B,).
    """
    verbs = np.array([s.verb for s in sentences])  # (B,)
    anywhere = rng.integers([len(s.words) for s in sentences])  # (B,), a position inside each sentence
    return np.where(rng.random(len(sentences)) < verb_share, verbs, anywhere)


def train_masked_word(
    params, config, sentences, *, steps=400, batch_size=64, lr=0.03, verb_share=0.5, rng=None, callback=None
):
    """Train the model to fill in hidden words: Adam on batches of sentences with one word hidden in each.

    The learning rate decays linearly to 0.
    Shapes: sentences a list of N Sentence -> losses, a list of `steps` floats. Updates params in place.
    callback(step, loss) is called after every step (a progress bar, a live curve).
    """
    rng = as_rng(rng)
    all_ids, all_lengths = grammar.encode(sentences)  # (N, T_max), (N,)
    optimiser, losses = Adam(params, lr=lr), []
    for step in range(positive_int(steps, "steps")):
        batch = rng.integers(len(sentences), size=batch_size)  # sentences drawn with replacement
        lengths = all_lengths[batch]
        masked = choose_masks([sentences[i] for i in batch], rng, verb_share)  # (B,)
        ids, targets = grammar.mask_positions(all_ids[batch, : lengths.max()], masked)  # (B, T), (B,)
        loss, grads = loss_and_grads(params, config, ids, lengths, masked, targets)
        optimiser.lr = lr * (1 - step / steps)  # decay to zero: big steps first, then settle
        optimiser.step(grads)
        losses.append(float(loss))
        if callback is not None:
            callback(step, float(loss))
    return losses


def evaluate_verbs(params, config, sentences):
    """Mask every sentence's verb: accuracy, the predicted word ids and the attention weights.

    Shapes: list of N Sentence -> accuracy float, predictions int (N,), weights (N, n_heads, T) or None.
    """
    ids, lengths = grammar.encode(sentences)
    verbs = np.array([s.verb for s in sentences])
    ids, targets = grammar.mask_positions(ids, verbs)
    logits, cache = forward(params, config, ids, lengths, verbs)
    predictions = logits.argmax(axis=-1)
    weights = cache["weights"][:, :, 0] if config.attention else None  # the verb's row (N, h, T)
    return float(np.mean(predictions == targets)), predictions, weights


def subject_share(weights, sentences):
    """Per head, the mean attention weight the masked verb puts on its subject.

    Shapes: weights (N, n_heads, T) (each verb's attention row), list of N Sentence -> (n_heads,).
    """
    rows = np.arange(len(sentences))
    subjects = [s.subject for s in sentences]
    return weights[rows, :, subjects].mean(axis=0)  # (N, h) -> (h,)


def predict(params, config, words, position):
    """Hide the word at `position` and ask the model: its probability for every word, and each head's row.

    Shapes: words T strings, position int -> probabilities (vocab,), weights (n_heads, T) or None.
    """
    ids, lengths = grammar.encode([words])  # (1, T), (1,)
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not 0 <= position < lengths[0]:
        raise ValueError(f"position must be an int in [0, {lengths[0]}) for {len(words)} words, got {position!r}")
    masked = np.array([position])
    ids, _ = grammar.mask_positions(ids, masked)
    logits, cache = forward(params, config, ids, lengths, masked)  # (1, vocab)
    weights = cache["weights"][0, :, 0] if config.attention else None  # (h, 1, T) -> (h, T)
    return softmax(logits[0]), weights
