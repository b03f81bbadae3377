"""The tiny GPT of notebook 11: every part's backward pass against finite differences, causality, the KV
cache against recomputing, generation's contract, and the judges of what it writes."""

import numpy as np
import pytest

from helpers import gpt_block as gb
from helpers import grammar
from helpers import tiny_gpt as tg
from helpers.gradients import numerical_gradient, relative_error
from helpers.kv_cache import KVCache
from helpers.masking import causal_mask
from helpers.positional import apply_rotary

SMALL = tg.Config(d_model=8, n_heads=2, n_layers=2, d_ff=12, context=5)
VARIANTS = [
    tg.Config(d_model=8, n_heads=2, n_layers=2, d_ff=12, context=5, norm=norm, residual=residual)
    for norm in ("pre", "post")
    for residual in (True, False)
]


def noisy_params(config, rng):
    """Random parameters with LayerNorm gains and every bias moved off 1 and 0, so each is really tested."""
    params = tg.init_params(config, rng)
    for name, value in params.items():
        if value.ndim == 1:
            params[name] = value + rng.normal(0, 0.3, value.shape)
    return params


def worst_gradient_error(loss_fn, params, grads):
    worst = 0.0
    for name in params:

        def f(w, name=name):
            saved, params[name] = params[name], w
            try:
                return loss_fn()
            finally:
                params[name] = saved

        worst = max(worst, relative_error(numerical_gradient(f, params[name].copy()), grads[name]))
    return worst


# --- the parts --------------------------------------------------------------------------------------


def test_window_mask_is_causal_within_the_window_and_brute_force_beyond():
    assert np.array_equal(gb.window_mask(6, 6), causal_mask(6))
    assert np.array_equal(gb.window_mask(6, 10), causal_mask(6))
    mask = gb.window_mask(7, 3, T_q=4)
    expected = [[i - 3 < j <= i for j in range(7)] for i in range(3, 7)]
    assert np.array_equal(mask, expected)
    with pytest.raises(ValueError, match="T_q=5 queries"):
        gb.window_mask(4, 2, T_q=5)
    with pytest.raises(ValueError, match="window"):
        gb.window_mask(4, 0)


def attention_loop(params, X, n_heads, window, start):
    """Brute force: one sentence, one head, one query at a time, rotating each vector by its own position."""
    T, d = X.shape
    d_head = d // n_heads
    out = np.zeros((T, d))
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        for i in range(T):
            q = apply_rotary((X[i] @ params["W_q"])[cols][None], [start + i])[0]
            scores = []
            for j in range(T):
                k = apply_rotary((X[j] @ params["W_k"])[cols][None], [start + j])[0]
                scores.append(q @ k / np.sqrt(d_head) if i - window < j <= i else -np.inf)
            w = np.exp(np.array(scores) - max(scores))
            out[i, cols] = (w / w.sum()) @ (X @ params["W_v"])[:, cols]
    return out @ params["W_o"]


@pytest.mark.parametrize("window, start", [(10, 0), (3, 0), (3, 17)])
def test_causal_self_attention_is_the_brute_force_loop(rng, window, start):
    params = {n: rng.normal(size=(8, 8)) / 3 for n in ("W_q", "W_k", "W_v", "W_o")}
    X = rng.normal(size=(2, 6, 8))
    delta, weights = gb.causal_self_attention(params, X, 2, window=window, start=start)
    for b in range(2):
        assert np.allclose(delta[b], attention_loop(params, X[b], 2, window, start))
    assert np.allclose(weights.sum(axis=-1), 1) and np.all(weights[..., ~gb.window_mask(6, window)] == 0)


def test_attention_depends_on_offsets_only(rng):
    """RoPE: moving every word by the same number of places changes nothing but rounding."""
    params = {n: rng.normal(size=(8, 8)) / 3 for n in ("W_q", "W_k", "W_v", "W_o")}
    X = rng.normal(size=(1, 5, 8))
    here = gb.causal_self_attention(params, X, 2, window=5)[0]
    there = gb.causal_self_attention(params, X, 2, window=5, start=1000)[0]
    assert np.allclose(here, there, atol=1e-10)


@pytest.mark.parametrize("window, start", [(10, 0), (2, 5)])
def test_causal_self_attention_backward_matches_finite_differences(rng, window, start):
    params = {n: rng.normal(size=(8, 8)) / 3 for n in ("W_q", "W_k", "W_v", "W_o")}
    X, d_out = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    d_X, grads = gb.causal_self_attention_backward(d_out, params, X, 2, window=window, start=start)
    everything = {**params, "X": X}

    def loss():
        return float(
            np.sum(gb.causal_self_attention(everything, everything["X"], 2, window=window, start=start)[0] * d_out)
        )

    assert worst_gradient_error(loss, everything, {**grads, "X": d_X}) < 1e-6


def test_feed_forward_backward_matches_finite_differences(rng):
    params = {
        "W_1": rng.normal(size=(4, 6)),
        "b_1": rng.normal(size=6),
        "W_2": rng.normal(size=(6, 4)),
        "b_2": rng.normal(size=4),
    }
    x, d_out = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    _, a = gb.feed_forward(params, x)
    d_x, grads = gb.feed_forward_backward(d_out, params, x, a)
    everything = {**params, "x": x}
    assert (
        worst_gradient_error(
            lambda: float(np.sum(gb.feed_forward(everything, everything["x"])[0] * d_out)),
            everything,
            {**grads, "x": d_x},
        )
        < 1e-6
    )


@pytest.mark.parametrize("norm", gb.NORMS)
@pytest.mark.parametrize("residual", [True, False])
def test_block_backward_matches_finite_differences(rng, norm, residual):
    config = tg.Config(d_model=8, n_heads=2, n_layers=1, d_ff=12, context=3, norm=norm, residual=residual)
    params = tg.layer_params(noisy_params(config, rng), 0)
    x, d_out = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    kwargs = dict(window=3, start=2, norm=norm, residual=residual)
    _, saved = gb.block(params, x, 2, **kwargs)
    d_x, grads = gb.block_backward(d_out, params, saved, 2, **kwargs)
    everything = {**params, "x": x}
    assert (
        worst_gradient_error(
            lambda: float(np.sum(gb.block(everything, everything["x"], 2, **kwargs)[0] * d_out)),
            everything,
            {**grads, "x": d_x},
        )
        < 1e-6
    )


# --- the whole model --------------------------------------------------------------------------------


def directional_errors(loss_fn, params, grads, rng, eps=1e-6):
    """Per parameter, the relative error of the gradient along a random direction against a central difference."""
    errors = {}
    for name in params:
        direction = rng.normal(size=params[name].shape)
        saved = params[name]
        params[name] = saved + eps * direction
        up = loss_fn()
        params[name] = saved - eps * direction
        down = loss_fn()
        params[name] = saved
        numeric, analytic = (up - down) / (2 * eps), float(np.sum(grads[name] * direction))
        errors[name] = abs(numeric - analytic) / max(abs(numeric) + abs(analytic), 1e-12)
    return errors


@pytest.mark.parametrize("config", VARIANTS, ids=[f"{c.norm}-{'res' if c.residual else 'nores'}" for c in VARIANTS])
def test_the_whole_models_gradient_matches_finite_differences(rng, config):
    """Every parameter along a random direction (the parts above are checked entry by entry)."""
    params = noisy_params(config, rng)
    ids = rng.integers(config.vocab_size, size=(2, 8))  # 7 inputs, longer than the context of 5
    loss, grads = tg.loss_and_grads(params, config, ids)
    assert set(grads) == set(params)
    errors = directional_errors(lambda: tg.loss_and_grads(params, config, ids)[0], params, grads, rng)
    assert max(errors.values()) < 1e-6, {n: e for n, e in errors.items() if e >= 1e-6}
    grads["0.W_q"] = grads["0.W_q"] * 1.01  # a 1 % error in one matrix is caught
    assert directional_errors(lambda: tg.loss_and_grads(params, config, ids)[0], params, grads, rng)["0.W_q"] > 1e-4


def test_input_gradient_is_what_reaches_the_word_vectors(rng):
    params = noisy_params(SMALL, rng)
    ids = rng.integers(SMALL.vocab_size, size=(2, 6))
    logits, saved = tg.forward_and_saved(params, SMALL, ids[:, :-1])
    d_logits = rng.normal(size=logits.shape)
    d_x = tg.input_gradient(d_logits, params, SMALL, saved)
    expected = np.zeros_like(params["E"])
    np.add.at(expected, ids[:, :-1], d_x)
    assert np.allclose(tg.backward(d_logits, params, SMALL, saved)["E"], expected)


def test_forward_is_causal_exactly(rng):
    params = noisy_params(SMALL, rng)
    ids = rng.integers(SMALL.vocab_size, size=(3, 12))
    logits = tg.forward(params, SMALL, ids)
    assert logits.shape == (3, 12, len(tg.VOCAB))
    for t in (0, 4, 10):
        changed = ids.copy()
        changed[:, t + 1 :] = rng.integers(SMALL.vocab_size, size=changed[:, t + 1 :].shape)
        assert np.array_equal(tg.forward(params, SMALL, changed)[:, : t + 1], logits[:, : t + 1])


def test_forward_with_kv_caches_equals_forward_without(rng):
    """Word by word through per-layer caches, past the context: the logits of the whole text at once."""
    params = noisy_params(SMALL, rng)
    ids = rng.integers(SMALL.vocab_size, size=(1, 14))
    whole = tg.forward(params, SMALL, ids)
    caches = [KVCache() for _ in range(SMALL.n_layers)]
    first = tg.forward_and_saved(params, SMALL, ids[:, :3], 0, caches)[0]
    rows = [first[0, t] for t in range(3)]
    for t in range(3, 14):
        rows.append(tg.forward_and_saved(params, SMALL, ids[:, t : t + 1], t, caches)[0][0, 0])
        assert all(len(c) <= SMALL.context for c in caches)
    assert np.allclose(np.array(rows), whole[0], atol=1e-12)


def test_params_that_do_not_fit_are_named(rng):
    params = tg.init_params(SMALL, rng)
    del params["0.W_q"]
    with pytest.raises(ValueError, match="0.W_q"):
        tg.forward(params, SMALL, np.zeros((1, 3), dtype=int))
    with pytest.raises(ValueError, match="ids must have shape"):
        tg.forward(tg.init_params(SMALL, rng), SMALL, np.zeros(3, dtype=int))
    with pytest.raises(TypeError, match="ids"):
        tg.forward(tg.init_params(SMALL, rng), SMALL, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="norm"):
        tg.Config(norm="sandwich")
    with pytest.raises(ValueError, match="even width"):
        tg.Config(d_model=6, n_heads=2)


# --- the contract: VOCAB, generate, train_default -----------------------------------------------------


def test_vocab_holds_every_word_of_the_grammar_and_the_end_mark():
    assert isinstance(tg.VOCAB, tuple) and all(isinstance(w, str) for w in tg.VOCAB)
    assert set(tg.VOCAB) == (set(grammar.VOCAB) - {grammar.PAD, grammar.MASK}) | {"."}
    assert len(set(tg.VOCAB)) == len(tg.VOCAB) == tg.Config().vocab_size


@pytest.fixture(scope="module")
def small_model():
    rng = np.random.default_rng(3)
    config = tg.Config(d_model=16, n_heads=2, n_layers=2, d_ff=32, context=6)
    params = tg.init_params(config, rng)
    tg.train_next_word(params, config, tg.stream(grammar.make_corpus(300, 1, rng=3)[0]), steps=30, rng=rng)
    return params, config


@pytest.mark.parametrize(
    "temperature, top_k, seed", [(1.0, None, 0), (1.0, None, 1), (0.7, 5, 2), (0, None, 0), (2.0, 3, 4)]
)
def test_generate_with_and_without_the_cache_writes_the_same_words_past_the_context(
    small_model, temperature, top_k, seed
):
    params, config = small_model
    prompt = ["."]
    cached = tg.generate(params, config, prompt, 60, temperature=temperature, top_k=top_k, rng=seed, kv_cache=True)
    recomputed = tg.generate(params, config, prompt, 60, temperature=temperature, top_k=top_k, rng=seed, kv_cache=False)
    assert cached == recomputed
    assert len(cached) == 61 and cached[0] == "." and set(cached) <= set(tg.VOCAB)
    assert 60 > tg.span_needed(config)  # the test runs past what the window looks back over


def test_generate_with_a_long_prompt_caches_all_of_it_and_writes_the_same_words(small_model):
    params, config = small_model
    prompt = ("today the cat near the dog meows . " * 5).split()  # 40 words: past what the next word depends on
    assert len(prompt) > tg.span_needed(config)
    for seed in range(3):
        cached = tg.generate(params, config, prompt, 30, rng=seed)
        assert cached == tg.generate(params, config, prompt, 30, rng=seed, kv_cache=False)


def test_the_caches_hold_what_the_next_word_needs_and_their_storage_never_grows_past_the_context(small_model):
    params, config = small_model
    caches = [KVCache() for _ in range(config.n_layers)]
    ids = [int(i) for i in tg.encode("the cat meows . " * 5)]  # a prompt longer than the context, at once
    tg.next_logits(params, config, ids, caches, unseen=len(ids))
    for word in range(12):
        assert [(len(c), c.capacity) for c in caches] == [(config.context - 1, config.context)] * config.n_layers
        ids.append(word)
        tg.next_logits(params, config, ids, caches, unseen=1)


def test_the_names_of_0_2_still_work(small_model, monkeypatch):
    """generate(cache=...) and forward_with_cache, kv_cache's and forward_and_saved's names in 0.2."""
    params, config = small_model
    assert tg.forward_with_cache is tg.forward_and_saved and "forward_with_cache" not in tg.__all__
    calls = []
    monkeypatch.setattr(tg, "KVCache", lambda: calls.append(1) or KVCache())  # counts the caches generate makes
    for cache in (True, False):
        words = tg.generate(params, config, ["."], 12, rng=3, cache=cache)
        assert words == tg.generate(params, config, ["."], 12, rng=3, kv_cache=cache)
    assert len(calls) == 2 * config.n_layers  # cache=True and kv_cache=True made them, the False ones none
    tg.generate(params, config, ["."], 2, kv_cache=True, cache=False)  # cache, when given, wins
    assert len(calls) == 2 * config.n_layers


def test_generate_is_repeatable_and_greedy_at_temperature_0(small_model):
    params, config = small_model
    assert tg.generate(params, config, "the cat", 20, rng=5) == tg.generate(params, config, ["the", "cat"], 20, rng=5)
    greedy = tg.generate(params, config, ["."], 20, temperature=0, rng=1)
    assert greedy == tg.generate(params, config, ["."], 20, temperature=0, rng=99)  # no randomness used
    assert greedy == tg.generate(params, config, ["."], 20, top_k=1, rng=7)  # the best word only
    assert tg.generate(params, config, ["the", "cat"], 0) == ["the", "cat"]


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(prompt=["the", "unicorn"]), ValueError, "unknown words \\['unicorn'\\]"),
        (dict(prompt=[]), ValueError, "prompt must hold at least one word"),
        (dict(prompt=[1, 2]), TypeError, "prompt must be a list of words"),
        (dict(n_new=-1), ValueError, "n_new must be an int >= 0"),
        (dict(n_new=2.5), ValueError, "n_new"),
        (dict(temperature=-0.5), ValueError, "temperature must be a number >= 0"),
        (dict(temperature="hot"), ValueError, "temperature"),
        (dict(top_k=0), ValueError, "top_k must be None or an int"),
    ],
)
def test_generate_names_bad_arguments(small_model, kwargs, error, words):
    params, config = small_model
    call = dict(prompt=["."], n_new=3) | kwargs
    with pytest.raises(error, match=words):
        tg.generate(params, config, call.pop("prompt"), call.pop("n_new"), **call)


def test_train_is_deterministic_and_lowers_the_loss():
    a = tg.train_default(seed=1, steps=4)[0]
    b = tg.train_default(seed=1, steps=4)[0]
    assert all(np.array_equal(a[n], b[n]) for n in a)
    config = tg.Config(d_model=16, n_heads=2, n_layers=1, d_ff=16, context=8)
    params = tg.init_params(config, 0)
    losses = tg.train_next_word(params, config, tg.stream(grammar.make_corpus(200, 1, rng=0)[0]), steps=60, rng=0)
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.5
