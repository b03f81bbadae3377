"""The exercises of 12_a_real_language_model: an 8-bit block of the file unpacked, a decoder's parameters counted
from its sizes, and one grouped-query attention step with a KV cache."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Case, check_rng, exercise
from helpers.checks._expect import one_number
from helpers.checks._families import scores_divided_by

# --- 1. an 8-bit block --------------------------------------------------------------------------------------


def _q8_0_blocks(scales, numbers):
    """Q8_0 blocks as the file holds them: each a little-endian float16 scale, then 32 signed bytes.

    Shapes: scales (n,), numbers (n, 32) ints in [-128, 127] -> (n, 34) uint8.
    """
    d = np.asarray(scales, dtype="<f2").reshape(-1, 1).view(np.uint8)  # (n, 2)
    return np.concatenate([d, np.asarray(numbers, dtype=np.int8).view(np.uint8)], axis=1)  # (n, 34)


@exercise(
    hint="Each block is 34 bytes: the first two hold the scale d as a 16-bit float, the other 32 hold the numbers "
    "q, one signed byte each (from −128 to 127). Read both with numpy's view, then the weights are d times q.",
    hint2="Work out one entry by hand: a byte 255 among the 32 is the number −1, not 255, and the scale's two bytes "
    "are one float16, lowest byte first (the file is little-endian), not a whole number. View them as such, "
    "then multiply in float32, one scale per block: (n, 1) against (n, 32).",
    solution="""
        def unpack_q8_0(blocks):
            d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)  # (n, 1): each block's scale
            q = blocks[:, 2:].view(np.int8).astype(np.float32)  # (n, 32): signed bytes
            return d * q  # (n, 32): one scale per block
    """,
    mistakes=r"""
        q-unsigned: `blocks[:, 2:].view(np.int8)` → `blocks[:, 2:]`
            {what} read the 32 numbers as unsigned bytes, 0 to 255; they are signed (int8), −128 to 127, so a byte
            of 255 is the number −1 and your negative weights came out large and positive
        scale-not-float16: `.view(np.float16)` → `.view(np.int16)`
            {what} read the scale's two bytes as a whole number (int16); they hold a 16-bit float (float16), whose
            bits mean a sign, an exponent and a fraction
        scale-one-byte: `blocks[:, 0:2].copy().view(np.float16)` → `blocks[:, 0:1]`
            {what} took the scale from the first byte alone, as a whole number; it is the first two bytes together,
            one float16
        scale-big-endian: `.view(np.float16)` → `.view(">f2")`
            {what} read the scale's two bytes highest first (big-endian); a GGUF file stores every number lowest byte
            first (little-endian), the order np.float16 reads on every common CPU
        scale-at-the-end: `blocks[:, 0:2]` → `blocks[:, 32:]`, `blocks[:, 2:]` → `blocks[:, :32]`
            {what} took the scale from the last two bytes and the numbers from the first 32; a block starts with
            its scale, then the 32 numbers
        scale-forgotten: `return d * q` → `return q`
            {what} returned the whole numbers q, from −128 to 127; each weight is the block's scale d times q
        scale-forgotten: `return d * q` → `return q * np.float32(1)`
            {what} returned the whole numbers q, from −128 to 127; each weight is the block's scale d times q
    """,
    forbid=("helpers.pretrained.gguf.dequantize_q8_0", "helpers.pretrained.gguf.dequantize"),
)
def unpack_q8_0():
    rng = check_rng()
    for n in (1, 3):
        scales = rng.uniform(0.002, 0.02, size=n) * rng.choice([1, -1], size=n)  # (n,): small, as a layer's are
        numbers = rng.integers(-128, 128, size=(n, 32))  # (n, 32): signed, so some bytes are 128 and above
        blocks = _q8_0_blocks(scales, numbers)
        expected = np.float16(scales).astype(np.float32)[:, None] * numbers.astype(np.float32)  # (n, 32)
        what = f"unpack_q8_0(blocks) for {n} block{'s' if n > 1 else ''}, blocks {blocks.shape} uint8 (n, 34)"
        yield Case(what, (blocks,), expected=expected)


# --- 2. the parameters of a decoder, from its sizes ----------------------------------------------------------

_SIZES = {  # name: (vocab_size, d_model, n_layers, n_heads, n_kv_heads, d_ff)
    "SmolLM2-135M's sizes": (49_152, 576, 30, 9, 3, 1536),
    "SmolLM2-360M's sizes": (49_152, 960, 32, 15, 5, 2560),
    "a small decoder's sizes": (100, 12, 2, 6, 2, 20),
}


@exercise(
    hint="Count every weight the decoder stores: the embedding table once (the output layer reuses it), then in "
    "each layer the attention's four projections, the feed-forward's matrices and the norms' weights, and one norm "
    "at the end. Every head, a query head or a key/value head, is as wide as the model's width shared out among "
    "the query heads.",
    hint2="Check yourself on SmolLM2: 134,515,008 in all. Its key and value projections are a third of the query's "
    "size, since it keeps 3 key/value heads for 9 query heads; SwiGLU has three matrices where 11's feed-forward "
    "had two; an RMSNorm keeps one vector of weights, as long as the model is wide, and no shift; the tied output "
    "layer adds nothing of its own.",
    solution="""
        def decoder_parameters(vocab_size, d_model, n_layers, n_heads, n_kv_heads, d_ff):
            d_head = d_model // n_heads
            attention = 2 * d_model * n_heads * d_head + 2 * d_model * n_kv_heads * d_head  # W_q, W_o; W_k, W_v
            feed_forward = 3 * d_model * d_ff  # W_gate, W_up, W_down
            norms = 2 * d_model  # an RMSNorm weight before attention and one before the feed-forward
            return vocab_size * d_model + n_layers * (attention + feed_forward + norms) + d_model  # final norm
    """,
    mistakes=r"""
        kv-heads-ignored: `2 * d_model * n_kv_heads * d_head` → `2 * d_model * n_heads * d_head`
            {what} gave {got:,.0f}: W_k and W_v were counted with a key/value head for each of the query heads;
            there are only n_kv_heads of them, shared by the query heads, so W_k is d_model × n_kv_heads·d_head
        output-not-tied: `return vocab_size * d_model + n_layers` → `return 2 * vocab_size * d_model + n_layers`
            {what} gave {got:,.0f}: the embedding table was counted twice; the output layer is tied to it (the same
            matrix, transposed), so it adds no parameters
        two-matrices: `3 * d_model * d_ff` → `2 * d_model * d_ff`
            {what} gave {got:,.0f}: the feed-forward layer was counted with two matrices, as 11's ReLU layer; SwiGLU
            has three, W_gate, W_up and W_down
        layer-norms: `norms = 2 * d_model` → `norms = 4 * d_model`, `+ d_model  # final norm` → `+ 2 * d_model`
            {what} gave {got:,.0f}: the norms were counted as LayerNorms, with a scale and a shift each; an RMSNorm
            has only its scale, one vector of d_model
        one-norm-per-layer: `norms = 2 * d_model` → `norms = d_model`
            {what} gave {got:,.0f}: one norm per layer was counted; each layer has two, one before the attention and
            one before the feed-forward
        final-norm-forgotten: `+ d_model  # final norm` → ``
            {what} gave {got:,.0f}, d_model fewer than the right count: the final norm, before the output layer, has
            d_model weights too
        embedding-forgotten: `return vocab_size * d_model + ` → `return `
            {what} gave {got:,.0f}: the embedding table was left out; it is vocab_size × d_model numbers, about a
            fifth of SmolLM2's
        biases-counted: `+ 2 * d_model * n_kv_heads * d_head` → `+ 2 * d_model * n_kv_heads * d_head + 3 * d_model`
            {what} gave {got:,.0f}: biases were counted; this model's projections have none (09's had them)
    """,
    read=lambda got, what: one_number(got, what, "one number, the count of every weight"),
    close={"rtol": 0, "atol": 0.5},
)
def decoder_parameters():
    for name, sizes in _SIZES.items():
        vocab, d, layers, heads, kv, d_ff = sizes
        what = f"decoder_parameters for {name} (vocab {vocab}, d_model {d}, {layers} layers, {heads} heads, {kv} kv)"
        yield Case(what, sizes)


# --- 3. one grouped-query attention step with the cache ------------------------------------------------------

_GQA_SOLUTION = """
    def gqa_step(q, k, v, cache_K, cache_V):
        K = np.concatenate([cache_K, k[:, None]], axis=1)  # (n_kv, T + 1, d): the new token's key after the cached
        V = np.concatenate([cache_V, v[:, None]], axis=1)  # (n_kv, T + 1, d)
        group = len(q) // len(K)  # query heads per key/value head
        K_h, V_h = np.repeat(K, group, axis=0), np.repeat(V, group, axis=0)  # (n_heads, T + 1, d): h reads h // group
        scores = np.einsum("hd,htd->ht", q, K_h) / np.sqrt(q.shape[-1])  # (n_heads, T + 1)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = weights / weights.sum(axis=-1, keepdims=True)  # each head's weights over the T + 1 tokens
        return np.einsum("ht,htd->hd", weights, V_h), K, V  # out (n_heads, d), and the caches for the next step
"""


def _gqa_expected(q, k, v, cache_K, cache_V):
    """The step written head by head, as a loop: query head h attends over key/value head h // group."""
    K, V = np.concatenate([cache_K, k[:, None]], axis=1), np.concatenate([cache_V, v[:, None]], axis=1)
    group = len(q) // len(K)
    out = np.stack([softmax(K[h // group] @ q[h] / np.sqrt(q.shape[-1])) @ V[h // group] for h in range(len(q))])
    return out, K, V


def _gqa_families(got, expected, case):
    """The scores divided by another size than √d."""
    q, k, v, cache_K, cache_V = case.args
    _, K, V = expected
    group = len(q) // len(K)

    def attend(divisor):
        return np.stack([softmax(K[h // group] @ q[h] / divisor) @ V[h // group] for h in range(len(q))])

    sizes = {"d": q.shape[-1], "n_heads·d": q.size, "T + 1": K.shape[1], "n_heads": len(q)}
    scores_divided_by(got[0], attend, f"{case.what}: out", sizes, ("√d", np.sqrt(q.shape[-1])))


@exercise(
    hint="Append the new token's key and value to each key/value head's cache, then let each query head attend "
    "over the keys and values of the key/value head its group shares: the softmax of the scaled scores, then the "
    "weighted sum of the values.",
    hint2="With 6 query heads and 2 key/value heads, heads 0, 1 and 2 share key/value head 0 and heads 3, 4 and 5 "
    "share head 1 (not 0, 2, 4 and 1, 3, 5). The new token attends to itself too, so append before you attend, "
    "and divide each score by √d, d the width of one head. np.repeat copies each head in place.",
    solution=_GQA_SOLUTION,
    mistakes=r"""
        tiled-heads: `np.repeat(K, group, axis=0)` → `np.tile(K, (group, 1, 1))`
            `np.repeat(V, group, axis=0)` → `np.tile(V, (group, 1, 1))`
            {what}: out let query head h read key/value head h mod n_kv ({pairs_tiled}); a group is consecutive
            query heads, so head h reads key/value head h // group ({pairs})
        own-key-left-out: `np.repeat(K, group` → `np.repeat(cache_K, group`
            `np.repeat(V, group` → `np.repeat(cache_V, group`
            {what}: out attended over the {T} cached tokens only; the new token may also see itself: append its key
            and value first, then attend over all {T_1}
        cache-not-appended: `weights, V_h), K, V` → `weights, V_h), cache_K, cache_V`
            {what}: the returned cache_K is the cache you were given, {T} tokens; return it with the new token's key
            after the cached ones ({T_1} tokens), so that the next step sees this one
        new-token-first: `[cache_K, k[:, None]]` → `[k[:, None], cache_K]`
            `[cache_V, v[:, None]]` → `[v[:, None], cache_V]`
            {what}: the returned cache_K has the new token's key first; keep the tokens in their order, oldest first,
            the new one last
        no-scale: ` / np.sqrt(q.shape[-1])` → ``
            {what}: out used the scores without dividing them by √d = √{d}: scaled attention divides each head's
            scores by the square root of its width (04)
        scaled-by-d-model: `np.sqrt(q.shape[-1])` → `np.sqrt(q.size)`
            {what}: out divided the scores by √(n_heads·d) = √{hd}, the width of all the heads together; each head's
            scores are divided by the square root of its own width, √d = √{d}
        softmax-over-heads: `max(axis=-1, keepdims=True)` → `max(axis=0, keepdims=True)`
            `sum(axis=-1, keepdims=True)` → `sum(axis=0, keepdims=True)`
            {what}: out's weights were normalised across the {n_heads} query heads; each head's weights over the
            {T_1} tokens must sum to 1 (the last axis)
        group-is-n-kv: `group = len(q) // len(K)` → `group = len(K)`
            {what}: your code raised {got.__class__.__name__}: each key/value head was repeated n_kv = {n_kv} times;
            it is shared by a group of n_heads / n_kv = {group} query heads, so repeat it that many times
    """,
    returns=("out", "cache_K", "cache_V"),
    families=_gqa_families,
    forbid=("helpers.pretrained.llama.grouped_query_attention", "helpers.pretrained.llama.attention_block"),
)
def gqa_step():
    rng = check_rng()
    for n_heads, n_kv, T, d in ((6, 2, 6, 4), (8, 2, 4, 3)):  # every size differs, within a case and from a group
        q, k, v = rng.normal(size=(n_heads, d)), rng.normal(size=(n_kv, d)), rng.normal(size=(n_kv, d))
        cache_K, cache_V = rng.normal(size=(n_kv, T, d)), rng.normal(size=(n_kv, T, d))
        group = n_heads // n_kv
        facts = {"T": T, "T_1": T + 1, "d": d, "hd": n_heads * d, "n_heads": n_heads, "n_kv": n_kv, "group": group}
        facts["pairs"] = ", ".join(f"{h} → {h // group}" for h in range(n_heads))
        facts["pairs_tiled"] = ", ".join(f"{h} → {h % n_kv}" for h in range(n_heads))
        what = (
            f"gqa_step(q, k, v, cache_K, cache_V) for {n_heads} query heads and {n_kv} key/value heads of d = {d}, "
            f"{T} tokens cached"
        )
        args = (q, k, v, cache_K, cache_V)
        yield Case(what, args, facts=facts, expected=_gqa_expected(*args))
