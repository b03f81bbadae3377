"""The exercises of 11_tiny_gpt: the next-word loss, sampling with a temperature, and one cached generation step."""

import functools

import numpy as np

import helpers.checks._reference as ref
from helpers.attention import softmax
from helpers.checks._core import Case, Mismatch, check_rng, exercise
from helpers.checks._expect import expect_close, one_number
from helpers.checks._families import another_shift, scaled_by_a_constant, scores_divided_by, wrong_array_weighted
from helpers.losses import softmax_cross_entropy

_SHIFTED = (
    "that is the loss with each position scored against the word {shift} places after it; position t predicts "
    "the next word, 1 place after it"
)


def _loss_families(got, expected, case):
    """A loss that overflowed; the loss at another shift of the targets; one off by a factor of the sizes."""
    logits, ids = case.args
    (B, T, V), what = logits.shape, case.what
    if not np.isfinite(got) and case.facts["large"]:
        raise Mismatch(
            f"{what} gave a loss that is not a finite number: e to the power of a logit overflows to infinity above "
            "about 709. Subtract each row's largest logit before the exponential: the softmax, and so the loss, "
            "stays the same",
            "no-max-shift",
        )
    shifted = {s: softmax_cross_entropy(logits[:, : T - s], ids[:, s:])[0] for s in (2, 3, 4)}
    another_shift(got, shifted, what, _SHIFTED)
    sizes = {"B": B, "T": T, "T − 1": T - 1, "V": V, "B·T": B * T, "B·(T − 1)": B * (T - 1)}
    scaled_by_a_constant(np.asarray(got), expected, what, sizes)


@exercise(
    hint="Position t has read the words up to t, so its target is the word after it: line up the logits of every "
    "position but the last with the words of every position but the first. Then it is 03's cross-entropy: "
    "minus the log-softmax over the words, at the target, averaged.",
    hint2="Line up a window of three words a, b, c by hand: position 0's logits must score b, position 1's "
    "score c, and position 2 has no next word in the window. So B·(T − 1) terms are averaged, not B·T. "
    "Subtract each row's largest logit before the exponential, so that logits in the hundreds cannot "
    "overflow; np.take_along_axis picks one entry per row.",
    solution="""
        def next_word_loss(logits, ids):
            z = logits[:, :-1]  # (B, T - 1, V): the last position has no next word in the window
            targets = ids[:, 1:]  # (B, T - 1): the word after each position
            z = z - z.max(axis=-1, keepdims=True)  # the max shift: exp cannot overflow
            log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))  # (B, T - 1, V): log softmax over words
            picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]  # (B, T - 1)
            return -picked.mean()
    """,
    # no-max-shift has no message here: _loss_families names any loss that is not finite on large logits so
    mistakes=r"""
        targets-not-shifted: `logits[:, :-1]` → `logits`, `ids[:, 1:]` → `ids`
            {what} scored each position against its own word; position t has read that word already, its target is the
            word after it
        wraps-around: `logits[:, :-1]` → `logits`, `ids[:, 1:]` → `np.roll(ids, -1, axis=1)`
            {what} scored all {T} positions, the last against the window's first word; the last has no next word, so
            only {T_1} have a target
        shifted-wrong-way: `logits[:, :-1]` → `logits[:, 1:]`, `ids[:, 1:]` → `ids[:, :-1]`
            {what} scored position t against word t − 1, the word before it; position t predicts word t + 1, the word
            one place later
        logits-not-cut: `logits[:, :-1]` → `logits`
            {what}: your code raised {got.__class__.__name__}: it lines up the logits of all {T} positions with the
            {T_1} targets; the last position has no next word in the window, so leave its logits out (then your code
            gives the right loss)
        softmax-over-positions: `axis=-1, keepdims=True` → `axis=1, keepdims=True`
            {what} ran the softmax along the positions (axis T); each position's prediction is a distribution over the V
            words
        softmax-over-batch: `axis=-1, keepdims=True` → `axis=0, keepdims=True`
            {what} ran the softmax across the B windows; each position's prediction is a distribution over the V words,
            its own row
        summed: `-picked.mean()` → `-picked.sum()`
            {what} gave the sum over the {n} positions; the loss is their mean
        divided-by-all-positions: `-picked.mean()` → `-picked.sum() / ids.size`
            {what} divided the sum by B·T = {BT}; only the {n} positions that have a next word are scored, so the mean
            divides by {BT_1}
        minus-forgotten: `-picked.mean()` → `picked.mean()`
            {what} gave minus the loss: log probabilities are at most 0, the loss is minus their mean, a positive number
        probabilities-not-logs: `z - np.log(np.exp(z).sum(` → `np.exp(z) / (np.exp(z).sum(`
            {what} averaged the probabilities of the targets; the loss averages minus their logarithms
        no-max-shift: `z = z - z.max(axis=-1, keepdims=True)  # the max shift: exp cannot overflow` → ``
        one-max-for-all: `z.max(axis=-1, keepdims=True)` → `z.max()`
            {what} gave {got}: you subtracted one largest logit for the whole array; in a row far below it every
            exponential underflows to 0, and log 0 is −∞. Subtract each row's own largest logit, the largest over its V
            words
        every-word-averaged: `-picked.mean()` → `-log_probs.mean()`
            {what} averaged the log probabilities of all {V} words at each position; the loss takes only the target's,
            the word that comes next, at each position
    """,
    read=lambda got, what: one_number(got, what, "one number, the mean over every position that has a target"),
    close={"rtol": 1e-6},
    families=_loss_families,
    forbid=("helpers.training.softmax_cross_entropy",),
)
def next_word_loss():
    rng, (B, T, V) = check_rng(), (2, 6, 7)
    ids = rng.integers(V, size=(B, T))  # (B, T)
    facts = {"T": T, "T_1": T - 1, "V": V, "n": f"B·(T − 1) = {B * (T - 1)}", "BT": B * T, "BT_1": B * (T - 1)}
    for case, logits in (
        ("", rng.normal(size=(B, T, V))),  # ordinary logits; then exp overflows past about 709
        (", logits in the hundreds", 800 + 50 * rng.normal(size=(B, T, V))),
        (", rows of logits hundreds apart", rng.normal(size=(B, T, V)) + rng.choice([-600, 600], (B, T, 1))),
    ):
        what = f"next_word_loss(logits, ids) for logits {logits.shape} (B, T, V) and ids {ids.shape}{case}"
        expected = float(softmax_cross_entropy(logits[:, :-1], ids[:, 1:])[0])
        yield Case(what, (logits, ids), facts={**facts, "large": bool(case)}, expected=expected)


_LOGITS = np.array([0.3, -1.2, 1.5, 0.9, -0.4, 1.1])  # (V,): word 2 is the most likely
_DRAWS = ((1.0, 0.87), (0.5, 0.71), (2.0, 0.53))  # u where most mistakes give another word than the right one
_WHAT = f"sample_next_word(logits, temperature, u) for logits {_LOGITS.shape} at (temperature, u) = {_DRAWS}"


def _words(got, what):
    return tuple(ref.word(word, what) for word in got) if isinstance(got, tuple) else ref.word(got, what)


def _same_words(got, expected, case):
    if got == expected:
        return
    if case.what != _WHAT:  # the logits in the hundreds, or temperature 0: the most likely word
        raise Mismatch(f"{case.what} {case.facts['says'].format(got=got)}", case.facts["code"])
    draw = next(i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e)
    (t, u), got_i, right = _DRAWS[draw], got[draw], expected[draw]
    raise Mismatch(
        f"{_WHAT} returned word {got_i} at temperature {t}, u = {u}, but u falls on word {right} (all three: got "
        f"{got}, expected {expected})",
        "wrong-values",
    )


@exercise(
    hint="Temperature 0 is greedy: the most likely word, whatever u is. Otherwise divide the logits by the "
    "temperature, take the softmax, and walk along the words adding up their probabilities: the first word "
    "at which the running sum passes u is the sample.",
    hint2="Check it with u near the ends: u just above 0 must give the first word with a probability above 0, "
    "and u just below 1 the last word with a probability above 0. Below temperature 1 the distribution "
    "sharpens, above 1 it flattens; at 0 dividing is impossible, so the most likely word is taken "
    "directly. np.cumsum gives the running sums.",
    solution="""
        def sample_next_word(logits, temperature, u):
            if temperature == 0:
                return int(np.argmax(logits))  # greedy: the limit of a sharper and sharper softmax
            z = logits / temperature  # below 1 sharpens, above 1 flattens
            probs = np.exp(z - z.max())  # the max shift: a small temperature cannot overflow exp
            probs = probs / probs.sum()
            return int(np.searchsorted(np.cumsum(probs), u, side="right"))  # the first running sum above u
    """,
    # no-max-shift has no message here: any word but 2 for logits in the hundreds is named so (that case's says)
    mistakes=r"""
        always-greedy: `if temperature == 0:` → `if True:`
            {what} returned the most likely word, 2, every time: at a temperature above 0 the word is sampled, each with
            its probability
        greedy-below-one: `if temperature == 0:` → `if temperature < 1:`
            {what} returned the most likely word at temperature 0.5: only temperature 0 is greedy; below 1 the
            distribution is sharper, but still sampled
        temperature-multiplied: `logits / temperature` → `logits * temperature`
            {what} sampled from the logits multiplied by the temperature: 0.5 made the distribution flatter and 2
            sharper; divide them by it
        temperature-ignored: `logits / temperature` → `logits`
            {what} sampled from the softmax of the logits as they are, whatever the temperature; divide the logits by it
            first
        probabilities-divided: `logits / temperature` → `logits`
            `probs / probs.sum()` → `probs / probs.sum() / temperature`
            {what} divided the probabilities by the temperature after the softmax: their sum is then not 1, and the
            distribution's shape does not change; divide the logits, before the softmax
        probability-against-u:
            `return int(np.searchsorted(np.cumsum(probs), u, side="right"))` → `return int(np.argmax(probs > u))`
            {what} compared each word's own probability with u; u is compared with the running sum of the probabilities,
            so that each word owns a stretch of [0, 1) as long as its probability
        off-by-one: `side="right"))` → `side="right")) - 1`
            {what} returned words {got}, each one before the right words {expected}: the sample is the first word at
            which the running sum passes u
        off-by-one: `side="right"))` → `side="right")) + 1`
            {what} returned words {got}, each one after the right words {expected}: the sample is the first word at
            which the running sum passes u
        u-ignored: `np.searchsorted(np.cumsum(probs), u, side="right")` → `np.random.choice(len(probs), p=probs)`
            {what} gave different words for the same logits, temperature and u: the word must follow from u alone, the
            first at which the running sum of the probabilities passes it (u is the random number: draw no other)
        no-max-shift: `np.exp(z - z.max())` → `np.exp(z)`
        zero-temperature-divides: `if temperature == 0:` → `if False:`
            {what} returned word {got:g}, not the most likely word, 2. Temperature 0 is greedy; dividing the logits by 0
            gives infinities (and NaN probabilities), so temperature 0 has to be handled apart
        zero-temperature-divides: `if temperature == 0:` → `if False:`
            `logits / temperature` → `logits * (1 / temperature)`
            {what}: your code raised {got.__class__.__name__} at temperature 0. Temperature 0 is greedy, the most likely
            word; dividing the logits by 0 is impossible, so handle it apart
        not-normalised: `probs = probs / probs.sum()` → `probs = probs`
            {what} walked along exponentials that were not divided by their sum: their running sum passes 1 early, so u
            falls on an earlier word; the probabilities are the exponentials divided by their sum, and they add up to 1
    """,
    read=_words,
    compare=_same_words,
    forbid=("helpers.softmax", "helpers.next_word.sample", "helpers.next_word.next_word_distribution"),
)
def sample_next_word():
    expected = tuple(ref.pick(softmax(_LOGITS / t), u) for t, u in _DRAWS)
    run = lambda f: tuple(f(_LOGITS, t, u) for t, u in _DRAWS)  # noqa: E731
    yield Case(_WHAT, facts={"expected": expected}, expected=expected, run=run)
    says = (
        "returned word {got}, but nearly all the probability is on word 2: the exponential of a logit above about "
        "709 overflows to infinity, and infinity over infinity is NaN. Subtract the largest scaled logit before the "
        "exponential"
    )
    big = 800 * np.array([1.0, -1.2, 1.5, 0.2, -0.4, 0.8])  # (V,): logits in the hundreds, word 2 far ahead
    facts = {"says": says, "code": "no-max-shift"}
    yield Case("sample_next_word(logits, 1.0, 0.5) for logits in the hundreds", (big, 1.0, 0.5), {}, facts, 2)
    says = (
        "returned word {got}, not the most likely word, 2: temperature 0 is greedy, the word with the largest "
        "logit, whatever u is"
    )
    what = f"sample_next_word(logits, 0, 0.7) for logits {_LOGITS.shape}"
    yield Case(what, (_LOGITS, 0, 0.7), {}, {"says": says, "code": "wrong-values"}, 2)


def _step_families(got, expected, case):
    """The weights applied to the keys; the scores divided by another size than √d."""
    word, position, cache_K, cache_V, project, window = case.args
    _, K, V = expected
    q = project(word, position)[0]
    weights = softmax(K @ q / np.sqrt(len(q)))  # (rows kept,)
    what = f"{case.what}: out"
    wrong_array_weighted(got[0], {"the keys K": weights @ K}, what, "the values V")
    sizes = {"d": len(q), "window": window, "the number of rows kept": len(K), "the position": position}
    scores_divided_by(got[0], functools.partial(ref.attend_one, q, K, V), what, sizes, ("√d", np.sqrt(len(q))))


@exercise(
    hint="Project the new word at its position, append its key and value to the cached ones, keep only the "
    "latest `window` of them, and let the new word's query attend over those: a softmax of the scaled "
    "scores, then the weighted sum of the values.",
    hint2="Check the window on a small case: with window = 3 the fifth word attends to words 3, 4 and 5 and never to 1 "
    "or 2, so the caches keep only the latest rows. Rotate with the position you are given: once the window slides it "
    "is no longer the number of cached rows. The scores are divided by √d, d the width of what project gives.",
    solution="""
        def cached_attention_step(word_id, position, cache_K, cache_V, project, window):
            q, k, v = project(word_id, position)  # (d,) each: q and k rotated to this word's position
            K = np.concatenate([cache_K, k[None]])[-window:]  # (n + 1, d), then the latest window rows
            V = np.concatenate([cache_V, v[None]])[-window:]
            scores = K @ q / np.sqrt(len(q))  # (rows kept,): the new word against itself and the words before
            weights = np.exp(scores - scores.max())
            weights = weights / weights.sum()
            return weights @ V, K, V  # out (d,), and the caches for the next step
    """,
    mistakes=r"""
        cache-not-appended: `weights @ V, K, V` → `weights @ V, cache_K, cache_V`
            {what}: the returned cache_K is the cache you were given; return it with the new word's row after the cached
            ones, so that the next step sees this word
        own-key-left-out: `scores = K @ q` → `scores = cache_K[-window:] @ q`
            `weights @ V, K, V` → `weights @ cache_V[-window:], K, V`
            {what}: out attended over the cached words only; the new word may also see itself: attend after appending
            its key and value
        no-window: `np.concatenate([cache_K, k[None]])[-window:]` → `np.concatenate([cache_K, k[None]])`
            `np.concatenate([cache_V, v[None]])[-window:]` → `np.concatenate([cache_V, v[None]])`
            {what}: the returned cache_K has {rows} rows; keep the latest {window}, so the cache never outgrows the
            window (each word sees at most window words, itself included)
        window-after-attending: `np.concatenate([cache_K, k[None]])[-window:]` → `np.concatenate([cache_K, k[None]])`
            `np.concatenate([cache_V, v[None]])[-window:]` → `np.concatenate([cache_V, v[None]])`
            `return weights @ V, K, V` → `return weights @ V, K[-window:], V[-window:]`
            {what}: out attended over all {rows} rows, then the cache was cut to {window}; cut first, so that the new
            word sees itself and {before} words before it, as in training
        kept-oldest: `np.concatenate([cache_K, k[None]])[-window:]` → `np.concatenate([cache_K, k[None]])[:window]`
            `np.concatenate([cache_V, v[None]])[-window:]` → `np.concatenate([cache_V, v[None]])[:window]`
            {what}: the returned cache_K kept the oldest {window} rows and dropped the new word's; keep the latest
            {window}, the new word's row last
        new-row-first: `[cache_K, k[None]]` → `[k[None], cache_K]`, `[cache_V, v[None]]` → `[v[None], cache_V]`
            {what}: the returned cache_K has the new word's row first; keep the rows in the order of the words, oldest
            first, so that cutting the oldest keeps the latest
        position-from-cache-length: `project(word_id, position)` → `project(word_id, len(cache_K))`
            {what}: the new word was turned to position {n}, the number of cached rows, instead of its position in the
            text, {position}: once the window slides the cache holds fewer rows than the text has words, and the
            rotation must match the positions of the cached keys
        no-square-root: `/ np.sqrt(len(q))` → ``
            {what}: out used the scores without dividing them by √d = {root:g}: scaled attention divides each score by
            the square root of the width (04)
        divided-by-d: `/ np.sqrt(len(q))` → `/ len(q)`
            {what}: out divided the scores by d = {d}; scaled attention divides them by √d = {root:g}, the square root
            of the width (04)
    """,
    returns=("out", "cache_K", "cache_V"),
    compare=lambda got, expected, case: [
        expect_close(got[i], expected[i], f"{case.what}: {name}")
        for i, name in ((1, "cache_K"), (2, "cache_V"), (0, "out"))
    ],  # the caches first: a wrong cache makes a wrong out
    families=_step_families,
)
def cached_attention_step():
    project, window, words = ref.toy_projection(), 3, [3, 1, 4, 1, 5, 8, 2]  # the window is not d = 4
    cache_K, cache_V = map(np.array, zip(*(project(w, p)[1:] for p, w in enumerate(words[:2])), strict=True))  # (2, d)
    for position in range(2, len(words)):  # one word at a time; from position 3 on the window slides
        word, n = words[position], len(cache_K)
        q, k, v = project(word, position)
        K = np.concatenate([cache_K, k[None]])[-window:]  # (at most window, d)
        V = np.concatenate([cache_V, v[None]])[-window:]
        facts = {"n": n, "rows": n + 1, "window": window, "before": window - 1, "position": position, "d": len(q)}
        what = f"cached_attention_step at position {position} with {n} words cached (window {window})"
        args = (word, position, cache_K, cache_V, project, window)
        yield Case(what, args, {}, {**facts, "root": np.sqrt(len(q))}, (ref.attend_one(q, K, V), K, V))
        cache_K, cache_V = K, V
