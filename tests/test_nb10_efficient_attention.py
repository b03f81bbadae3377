"""What 10_efficient_attention adds: its exercises' verdicts and messages, and the tile explorer driven by code.

(tests/test_checks.py also feeds every exercise a right, a wrong, an untouched and a crashing answer.)
"""

import textwrap

import numpy as np
import pytest
from _answers import define, solution

from helpers import causal_mask, checks, efficient, scaled_dot_product_attention, softmax, widgets
from helpers.efficient import TILE_COMPUTED, TILE_MASKED, TILE_SKIPPED, block_grid, online_softmax_step


def verdict(name, source, capsys):
    """(status, printed text) of checks.<name> on the answer that `source` defines."""
    result = getattr(checks, name)(define(textwrap.dedent(source), name))
    return result.status, capsys.readouterr().out


# ---- online_softmax_update


def test_online_update_solution_folds_blocks_into_the_softmax(rng):
    update = solution("online_softmax_update")
    scores, values = rng.normal(size=11) * 3, rng.normal(size=(11, 2))
    m, l, acc = -np.inf, 0.0, np.zeros(2)
    for start in range(0, 11, 3):
        m, l, acc = update(m, l, acc, scores[start : start + 3], values[start : start + 3])
    assert np.isclose(m, scores.max())
    assert np.allclose(acc / l, softmax(scores) @ values)


def test_online_update_solution_is_the_helpers_step(rng):
    update = solution("online_softmax_update")
    m, l, acc = 0.7, 2.5, rng.normal(size=3)
    scores, values = rng.normal(size=4) + 1, rng.normal(size=(4, 3))
    for got, expected in zip(
        update(m, l, acc, scores, values),
        online_softmax_step(np.array(m), np.array(l), acc, scores, values),
        strict=True,
    ):
        assert np.allclose(got, expected)


def mistake(name, code):
    """The registered wrong answer `code` of exercise `name`, as a function."""
    return define(checks.EXERCISES[name].mistakes[code], name)


# the words each registered mistake's message must carry (the generated tests check only its code)
ONLINE_WORDS = {
    "no-rescale": "the old l was added as it was",
    "acc-not-rescaled": "acc was added as it was",
    "inverted-correction": "by e^(m_new − m) = 5.474, which grows it",
    "max-not-updated": "you returned the old max, m = 0.5",
    "block-max-only": "your m fell to this block's largest score, 1.393; the running max never falls",
    "max-as-axis": "reads a second argument as the axis to reduce along",
    "old-max-shift": "this block's terms were measured against the old max 0.5",
    "correction-on-new-terms": "you multiplied this block's terms by e^(m − m_new) = 0.1827",
    "raw-exp": "l grew by e^s of the raw scores",
    "divided-acc": "acc came back divided by l",
    "returned-in-other-order": "the right results in another order, l, m, acc; return them in the order m, l, acc",
}


@pytest.mark.parametrize("name", ["online_softmax_update", "kv_cache_step"])
def test_each_message_is_one_sentence_of_few_words(name):
    """A message is one sentence, not a paragraph of 55-90 words."""
    for code in checks.EXERCISES[name].mistakes:
        message = getattr(checks, name)(mistake(name, code)).message.splitlines()[0]
        assert ". " not in message.replace("..", "") and len(message.split()) <= 60, message


def test_online_update_inverted_factor_is_named_not_the_max_shift():
    """e^(m_new − m) gives NaN from m = −∞: the message names the inverted factor, not the max subtraction."""
    result = checks.online_softmax_update(mistake("online_softmax_update", "inverted-correction"))
    assert "the factor that shrinks old terms to the new max is e^(m − m_new) = 0.1827" in result.message
    assert "Subtract" not in result.message
    # from m = -inf alone, the inverted factor gives NaN: the check's first case is finite on purpose
    inverted = mistake("online_softmax_update", "inverted-correction")
    with np.errstate(invalid="ignore"):
        m, l, acc = inverted(-np.inf, 0.0, np.zeros(2), np.ones(3), np.ones((3, 2)))
    assert np.isnan(l)


def test_online_update_max_of_two_numbers_with_numpys_max_is_explained_not_called_a_float_size(capsys):
    """np.max(m, s) reads s as an axis; the engine's general advice (integer division) would mislead."""
    source = """
        def online_softmax_update(m, l, acc, scores, values):
            m_new = np.max(m, scores.max())
            return m_new, l, acc
    """
    status, printed = verdict("online_softmax_update", source, capsys)
    assert status == checks.INCORRECT and "numpy's max takes one array" in printed, printed
    assert "two slashes" not in printed


def test_online_update_other_slips(capsys):
    overflows = """
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())
            c = np.exp(m - m_new)
            return m_new, l * c + np.exp(scores - m_new).sum() * 1e400, acc * c
    """
    status, printed = verdict("online_softmax_update", overflows, capsys)
    assert status == checks.INCORRECT and "l or acc is inf or NaN" in printed, printed
    two = """
        def online_softmax_update(m, l, acc, scores, values):
            return m, l
    """
    status, printed = verdict("online_softmax_update", two, capsys)
    assert "should return 3 things, (m, l, acc) in that order; your function returned 2 things" in printed


def test_online_update_may_not_call_the_helper(capsys):
    source = """
        from helpers.efficient import online_softmax_step

        def online_softmax_update(m, l, acc, scores, values):
            m, l, acc = online_softmax_step(np.array(m), np.array(l), acc, scores, values)
            return float(m), float(l), acc
    """
    status, printed = verdict("online_softmax_update", source, capsys)
    assert status == checks.INCORRECT and "online_softmax_step" in printed


# ---- kv_cache_step


def test_kv_cache_step_solution_grows_the_caches_and_equals_full_attention(rng):
    step = solution("kv_cache_step")
    q, k, v = rng.normal(size=(7, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 2))
    cache_K, cache_V, outs = np.zeros((0, 4)), np.zeros((0, 2)), []
    for start, stop in ((0, 3), (3, 4), (4, 7)):
        cache_K, cache_V, out = step(cache_K, cache_V, q[start:stop], k[start:stop], v[start:stop])
        outs.append(out)
    assert np.array_equal(cache_K, k) and np.array_equal(cache_V, v)
    expected = scaled_dot_product_attention(q, k, v, mask=causal_mask(7))[0]
    assert np.allclose(np.concatenate(outs), expected)


def test_kv_cache_step_solution_is_the_kv_cache_helper(rng):
    step, cache = solution("kv_cache_step"), efficient.KVCache()
    cache_K, cache_V = np.zeros((0, 4)), np.zeros((0, 3))
    for t in (4, 1, 2):
        q, k, v = rng.normal(size=(t, 4)), rng.normal(size=(t, 4)), rng.normal(size=(t, 3))
        cache_K, cache_V, out = step(cache_K, cache_V, q, k, v)
        cache.append(k, v)
        assert np.allclose(out, cache.attend(q))


KV_WORDS = {
    "no-causal-mask": "so the 3 new tokens saw each other's future",
    "diagonal-hidden": "your mask also hid each new token's own key, the diagonal",
    "no-scaling": "the scores were not divided by √d_k = 2",
    "scaled-by-d-k": "the scores were divided by d_k = 4; the scale of 04 is √d_k = 2",
    "mask-not-shifted": "as if it stood at the start of the text",
    "masked-as-zero": "the hidden scores were set to 0, which still gets the weight e^0",
    "softmax-over-queries": "your softmax ran down each column of the (t, T + t) scores, over the new queries",
    "returned-weights": "out has the shape of the weights, (t, T + t) = (3, 3)",
    "returned-in-other-order": "another order, out, cache_K, cache_V; return them in the order cache_K, cache_V, out",
    "cache-not-grown": "the returned cache_K still has 0 rows",
    "new-keys-in-front": "the new tokens' rows come before the 3 cached ones",
    "new-tokens-only": "out attended to the new token only",
    "concatenated-wrong-axis": "joined the cache and the new rows side by side, along their widths",
    "append-flattened": "numpy's append, which without an axis flattens both arrays",
}


WORDS = {"online_softmax_update": ONLINE_WORDS, "kv_cache_step": KV_WORDS}  # exercise: {code: words}


@pytest.mark.parametrize("name, code", [(name, code) for name, words in WORDS.items() for code in words])
def test_each_mistake_is_named_in_words(name, code):
    result = getattr(checks, name)(mistake(name, code))
    assert result.mistake == code and WORDS[name][code] in result.message, result.message


def test_kv_cache_step_crashes_that_are_not_the_join_keep_the_engines_explanation(capsys):
    """Only a join along the widths or numpy's append is explained as such; other crashes quote the line as usual."""
    source = """
        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
            return K, V, q_new @ V
    """
    result = checks.kv_cache_step(define(textwrap.dedent(source), "kv_cache_step"))
    assert result.mistake == "crash" and "matrix product" in result.message, result.message


def test_kv_cache_step_names_a_diagonal_mask_that_gives_zeros_instead_of_nan(capsys):
    """A learner using the workshop's attention with key < query gets a zero row, not NaN: the same mistake."""
    source = """
        from helpers import scaled_dot_product_attention

        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
            t, T = len(q_new), len(cache_K)
            visible = np.arange(T + t)[None, :] < np.arange(t)[:, None] + T
            return K, V, scaled_dot_product_attention(q_new, K, V, mask=visible)[0]
    """
    result = checks.kv_cache_step(define(textwrap.dedent(source), "kv_cache_step"))
    assert result.mistake == "diagonal-hidden", result.message


def test_kv_cache_step_values_not_appended_quotes_the_learners_line_and_names_the_helper(capsys):
    """Values not appended make the helper raise: "your line" must quote the learner's line, not the helper's."""

    def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
        K = np.concatenate([cache_K, k_new])  # the keys grow; the values were forgotten
        out = scaled_dot_product_attention(q_new, K, cache_V, mask=causal_mask(len(q_new), len(K)))[0]
        return K, cache_V, out

    result = checks.kv_cache_step(kv_cache_step)
    printed = capsys.readouterr().out
    assert result.status == checks.INCORRECT and result.mistake == "crash", printed
    assert "raised inside the workshop's `helpers.attention.scaled_dot_product_attention`" in printed, printed
    assert (
        "called from your line: out = scaled_dot_product_attention(q_new, K, cache_V, "
        "mask=causal_mask(len(q_new), len(K)))[0]"
    ) in printed, printed
    assert "raise " not in printed.split("your line:")[1]  # never the helper's own line


# ---- the explorer


def test_tile_counts_and_grid_picture():
    grid = block_grid(1024, 1024, 128, causal=True)
    assert widgets.tile_counts(grid) == {"computed": 28, "computed with a mask": 8, "skipped": 28}
    picture = widgets.block_grid_html(grid)
    for kind, n in ((TILE_COMPUTED, 28), (TILE_MASKED, 8), (TILE_SKIPPED, 28)):
        assert picture.count(f'background:{widgets.TILE_COLOURS[kind]}"></td>') == n


@pytest.mark.parametrize("cores", [2, 8])
def test_measure_tiled_gives_a_peak_far_below_the_scores_on_any_core_count(monkeypatch, cores):
    monkeypatch.setattr(efficient, "default_threads", lambda: cores)  # a machine with this many cores
    seconds, peak_mib = widgets.measure_tiled(2048, 256, causal=True)
    assert seconds > 0
    assert peak_mib < 2048 * 2048 * 4 / 2**20 / 4  # a quarter of the (T, T) float32 scores, at most


def test_explorer_draws_the_chosen_grid(shown):
    box = widgets.tiled_attention_explorer(T=512, block_size=256, causal=True)
    assert "4 tiles of 256×256" in shown[-1] and "1 skipped" in shown[-1]
    box.controls["T"].value = 1024
    box.controls["block_size"].value = 128
    assert "64 tiles of 128×128" in shown[-1] and "28 skipped" in shown[-1] and "8 computed with a mask" in shown[-1]
    box.controls["causal"].value = False
    assert "64 computed, 0 computed with a mask, 0 skipped" in shown[-1]
    assert "(the naive (1024, 1024) float32 scores alone: 4 MiB)" in shown[-1]


def test_explorer_at_a_short_length_measures_one_tile_of_T_not_of_the_block(shown):
    """T = 256 in blocks of 1,024: the peak is a 256 x 256 tile's buffer, not a 1024 x 1024 one's (4 MiB)."""
    widgets.measure_tiled(256, 1024, causal=True)  # warm: the first call also fills the mask cache
    for block_size in (256, 512, 1024):
        assert widgets.measure_tiled(256, block_size, causal=True)[1] < 1.0  # a 256 x 256 tile is 0.25 MiB
    box = widgets.tiled_attention_explorer(T=256, block_size=128, causal=False)
    assert "at this length the (T, d) copies" in shown[-1]
    box.controls["T"].value = 4096
    assert "at this length" not in shown[-1]


def test_explorer_with_a_block_larger_than_T_says_one_tile_of_T_and_a_size_below_one_mib(shown):
    box = widgets.tiled_attention_explorer(T=256, block_size=1024, causal=True)
    assert "1 tile of 256×256" in shown[-1]
    assert "a block of 1024 covers all 256 tokens: one tile holds every score, so tiling saves no memory" in shown[-1]
    assert "1 computed with a mask, 0 skipped" in shown[-1]
    assert "(the naive (256, 256) float32 scores alone: 0.25 MiB)" in shown[-1]
    box.controls["T"].value = 4096
    assert "16 tiles of 1024×1024" in shown[-1] and "covers all" not in shown[-1]
    assert "scores alone: 64 MiB)" in shown[-1]
