"""What the heads of a real model do, measured: where their weight goes, their kinds, which matter.

Also a word's vector layer by layer and its nearest tokens (the "bat" study).
Taught in 09_attention_in_a_real_model.
"""

import numpy as np

from helpers import grammar
from helpers._validate import as_float_array
from helpers.attention import entropy
from helpers.embeddings import nearest, similarity_matrix, unit_rows

__all__ = [
    "TARGETS",
    "KINDS",
    "target_weights",
    "head_profile",
    "head_kinds",
    "ablated_embeddings",
    "masked_embeddings",
    "mean_head_outputs",
    "norm_share",
    "verb_subject_weights",
    "token_states",
    "mean_cosine",
    "nearest",
]

TARGETS = ("[CLS]", "[SEP]", "previous", "next", "self")
KINDS = TARGETS + ("broad", "mixed")


def target_weights(weights):
    """Each head's mean weight from a word to [CLS], [SEP], the previous word, the next word, itself.

    For one unpadded text, [CLS] first and [SEP] last. The queries are the words between them;
    "previous" and "next" count only neighbours that are words, not [CLS] or [SEP].
    Shapes: weights (..., T, T) with T >= 4 -> (..., 5), in the order of TARGETS.
    """
    weights = as_float_array(weights, "weights", min_ndim=2)
    T = weights.shape[-1]
    if weights.shape[-2] != T or T < 4:
        raise ValueError(
            f"weights must be (..., T, T) of one text with at least two words, T >= 4; got shape {weights.shape}"
        )
    words = np.arange(1, T - 1)  # the queries: every token but [CLS] and [SEP]
    return np.stack(
        [
            weights[..., words, 0].mean(axis=-1),  # to [CLS]
            weights[..., words, T - 1].mean(axis=-1),  # to [SEP]
            weights[..., words[1:], words[:-1]].mean(axis=-1),  # to the word before
            weights[..., words[:-1], words[1:]].mean(axis=-1),  # to the word after
            weights[..., words, words].mean(axis=-1),  # to itself
        ],
        axis=-1,
    )


def head_profile(weights, real):
    """Per head, the mean of target_weights over the texts, and how spread out its rows are.

    spread = the words' attention entropy divided by its largest possible value, ln T:
    0 = all weight on one key, 1 = the same weight on every key.
    Shapes: weights (n, L, H, T, T) and real (n, T) as MiniLM.run returns them
            -> {"[CLS]": (L, H), "[SEP]": ..., "previous": ..., "next": ..., "self": ..., "spread": (L, H)}.
    """
    weights = as_float_array(weights, "weights", min_ndim=5)
    real = np.asarray(real, dtype=bool)
    if real.shape != (weights.shape[0], weights.shape[-1]):
        raise ValueError(
            f"real must have shape (n, T) = {(weights.shape[0], weights.shape[-1])} "
            f"for weights of shape {weights.shape}, got {real.shape}"
        )
    per_text, spread = [], []
    for w, T in zip(weights, real.sum(axis=1), strict=True):
        w = w[..., :T, :T]  # (L, H, T, T): this text without its padding
        per_text.append(target_weights(w))  # (L, H, 5)
        spread.append(entropy(w[..., 1 : T - 1, :]).mean(axis=-1) / np.log(T))  # (L, H)
    means = np.mean(per_text, axis=0)  # (L, H, 5)
    return {**{name: means[..., i] for i, name in enumerate(TARGETS)}, "spread": np.mean(spread, axis=0)}


def head_kinds(profile, threshold=0.5, broad=0.75):
    """A kind per head: the target with at least `threshold` of the weight on average;
    else "broad" if its spread is at least `broad`; else "mixed".

    Shapes: a head_profile dict of (L, H) arrays -> (L, H) array of strings from KINDS.
    """
    means = np.stack([profile[name] for name in TARGETS], axis=-1)  # (L, H, 5)
    best = np.array(TARGETS)[means.argmax(axis=-1)]  # (L, H)
    kinds = np.where(profile["spread"] >= broad, "broad", "mixed")
    return np.where(means.max(axis=-1) >= threshold, best, kinds).astype(object)


def ablated_embeddings(model, sentences, replace=None):
    """The sentence embeddings with each head switched off in turn (the other 71 on).

    A head is switched off by a per-head mask that lets it attend to nothing (05's fully masked
    rows give zero weights): it adds nothing to its layer (zero-ablation), or, with `replace`
    (e.g. mean_head_outputs), the same vector at every token (mean-ablation). The layers before
    it are unchanged, so they are run once.
    Shapes: n sentences, replace (L, H, d_model) or None -> (L, H, n, d_model); [l, h] is the model
    without layer l's head h.
    """
    replace = model.check_replace(replace)
    _, ids, real = model.batch(sentences)
    n, H = len(ids), model.n_heads
    h = model.embed(ids, real)  # (n, T, d)
    inputs = []  # what enters each layer in the full model
    for i in range(model.n_layers):
        inputs.append(h)
        h, _ = model.layer(i, h, real)
    real_12 = np.tile(real, (H, 1))  # (12 n, T): the texts once per switched-off head
    keep = np.repeat(~np.eye(H, dtype=bool), n, axis=0)  # (12 n, 12): copy j of the texts lacks head j
    out = np.empty((model.n_layers, H, n, model.d_model), dtype=model.dtype)
    for layer in range(model.n_layers):
        h = np.tile(inputs[layer], (H, 1, 1))  # (12 n, T, d)
        h, _ = model.layer(layer, h, real_12, keep, replace[layer])
        for later in range(layer + 1, model.n_layers):
            h, _ = model.layer(later, h, real_12)
        out[layer] = model.pool(h, real_12).reshape(H, n, -1)
    return out


def masked_embeddings(model, sentences, head_masks, replace=None):
    """The sentence embeddings under each of several head masks (True = keep the head), run as one batch.

    Each mask switches off a group of heads at once, as MiniLM.encode(head_mask=...) does, with
    zero-ablation or, with `replace` (e.g. mean_head_outputs), mean-ablation.
    Shapes: n sentences, head_masks (g, L, H) bool, replace (L, H, d_model) or None -> (g, n, d_model).
    """
    head_masks = model.check_head_mask(head_masks, "head_masks", groups=True)  # (g, L, H)
    replace = model.check_replace(replace)
    _, ids, real = model.batch(sentences)
    g, n = len(head_masks), len(ids)
    real_g = np.tile(real, (g, 1))  # (g n, T): the texts once per mask
    h = np.tile(model.embed(ids, real), (g, 1, 1))  # (g n, T, d)
    for layer in range(model.n_layers):
        keep = np.repeat(head_masks[:, layer], n, axis=0)  # (g n, H): copy k of the texts has mask k
        h, _ = model.layer(layer, h, real_g, keep, replace[layer])
    return model.pool(h, real_g).reshape(g, n, -1)


def _head_values(attention, states):
    """Each head's value vectors passed through its own rows of W_o: what the head adds per unit of weight.

    Shapes: states (n, T, d_model) -> (n, H, T, d_model).
    """
    H, d_head = attention.n_heads, attention.d_head
    V = (states @ attention.W_v + attention.b_v).reshape(*states.shape[:2], H, d_head)  # (n, T, H, d_head)
    return np.einsum("nthe,hed->nhtd", V, attention.W_o.reshape(H, d_head, -1))  # (n, H, T, d_model)


def mean_head_outputs(model, output):
    """Each head's output (through its rows of W_o), averaged over every real token of the texts.

    What mean-ablation puts in place of a switched-off head (ablated_embeddings(replace=...)).
    Shapes: an Output of MiniLM.run for n texts -> (L, H, d_model).
    """
    means = []
    for layer, attention in enumerate(a["attention"] for a in model.layers):
        values = _head_values(attention, output.states[:, layer])  # (n, H, T, d_model)
        heads_out = output.weights[:, layer] @ values  # (n, H, T, T) @ (n, H, T, d_model) -> (n, H, T, d_model)
        means.append(heads_out.transpose(1, 0, 2, 3)[:, output.real].mean(axis=1))  # (H, d_model)
    return np.stack(means)


def norm_share(model, output, key=0):
    """Per head, the share of the weighted vectors' total length that comes from token `key` ([CLS]).

    For word i: |a_i,key f(x_key)| / sum_j |a_ij f(x_j)|, with f(x) = (x W_v + b_v) W_o (the head's rows),
    as Kobayashi et al. (2020) measure; averaged over the words (not [CLS], [SEP]) of each text, then the texts.
    Compare it with the weight share a_i,key: both sum to 1 over the keys.
    Shapes: an Output of MiniLM.run for n texts -> (L, H).
    """
    lengths = output.real.sum(axis=1)
    words = (np.arange(output.real.shape[1]) >= 1) & (np.arange(output.real.shape[1]) < lengths[:, None] - 1)
    shares = []
    for layer, attention in enumerate(a["attention"] for a in model.layers):
        sizes = np.linalg.norm(_head_values(attention, output.states[:, layer]), axis=-1)  # (n, H, T)
        weighted = output.weights[:, layer] * sizes[:, :, None, :]  # (n, H, T, T): |a_ij f(x_j)|
        with np.errstate(invalid="ignore"):  # padded rows are 0 / 0; they are left out below
            share = weighted[..., key] / weighted.sum(axis=-1)  # (n, H, T)
        shares.append((np.where(words[:, None], share, 0).sum(axis=-1) / words.sum(axis=1)[:, None]).mean(axis=0))
    return np.stack(shares)  # (L, H)


def verb_subject_weights(model, sentences):
    """Every head's weight from the verb to its subject, to the nearest attractor noun, and from the other words
    to the subject, in sentences of helpers.grammar (each with at least one attractor).

    The text is the words and a full stop. The verb's row is the mean of its wordpieces' rows ("meows" is
    "me ##ows"); a noun's weight is the sum over its wordpieces. "others" averages the rows of the words
    that are neither the subject nor the verb.
    Shapes: n Sentence -> {"subject": (n, L, H), "attractor": (n, L, H), "others": (n, L, H)}.
    """
    if any(not s.attractors for s in sentences):
        raise ValueError("every sentence needs an attractor noun (a noun besides the subject)")
    texts = [" ".join(s.words) + "." for s in sentences]
    weights = model.run(texts).weights  # (n, L, H, T, T)
    found = {name: np.empty((len(texts), model.n_layers, model.n_heads)) for name in ("subject", "attractor", "others")}
    for k, (s, encoding) in enumerate(zip(sentences, model.tokenizer.encode_batch(texts), strict=True)):
        pieces = {}  # word position -> its wordpieces' token positions
        for t, w in enumerate(encoding.word_ids):
            if w is not None and w < len(s.words):  # not [CLS], [SEP] or the full stop
                pieces.setdefault(w, []).append(t)
        verb_row = weights[k][:, :, pieces[s.verb]].mean(axis=2)  # (L, H, T)
        found["subject"][k] = verb_row[..., pieces[s.subject]].sum(axis=-1)
        found["attractor"][k] = verb_row[..., pieces[grammar.nearest_attractor(s)]].sum(axis=-1)
        others = [t for w, ts in pieces.items() if w not in (s.subject, s.verb) for t in ts]
        found["others"][k] = weights[k][:, :, others][..., pieces[s.subject]].sum(axis=-1).mean(axis=-1)
    return found


def token_states(output, word):
    """Every layer's vector of the first token `word` (or `word` + "s") in each text.

    Shapes: an Output of MiniLM.run for n texts -> (n, L + 1, d_model).
    """
    rows = []
    for i, tokens in enumerate(output.tokens):
        found = [j for j, t in enumerate(tokens) if t in (word, word + "s")]
        if not found:
            raise ValueError(f"text {i} has no token {word!r}: its tokens are {tokens}")
        rows.append(output.states[i, :, found[0]])  # (L + 1, d)
    return np.stack(rows)


def mean_cosine(A, B=None):
    """The mean cosine between the rows of A and of B (between different rows of A if B is None).

    Shapes: A (n, d), B (m, d) -> a number.
    """
    A = as_float_array(A, "A", min_ndim=2)
    if B is None:
        cosines = similarity_matrix(A, cosine=True)  # (n, n), ones on the diagonal
        n = len(A)
        return float((cosines.sum() - np.trace(cosines)) / (n * (n - 1)))
    return float(np.mean(unit_rows(A) @ unit_rows(as_float_array(B, "B", min_ndim=2)).T))  # (n, d) @ (d, m)
