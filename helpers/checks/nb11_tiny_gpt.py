"""The exercises of 11_tiny_gpt: the next-word loss, sampling with a temperature, and one cached generation step."""

import functools

import numpy as np

import helpers.checks._reference as ref
from helpers.attention import softmax
from helpers.checks._core import Mismatch, call, check_rng, edited, exercise, expect_close, raised_by_the_answer
from helpers.checks._families import another_shift, scaled_by_a_constant, scores_divided_by, wrong_array_weighted
from helpers.checks._mistakes import matches, returned_tuple

_LOSS_SOLUTION = """
    def next_word_loss(logits, ids):
        z = logits[:, :-1]  # (B, T - 1, V): the last position has no next word in the window
        targets = ids[:, 1:]  # (B, T - 1): the word after each position
        z = z - z.max(axis=-1, keepdims=True)  # the max shift: exp cannot overflow
        log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))  # (B, T - 1, V): log softmax over words
        picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]  # (B, T - 1)
        return -picked.mean()
"""
_LOSS_SAYS = {  # what each registered mistake did, said after `what`
    "targets-not-shifted": "scored each position against its own word; position t has read that word already, its "
    "target is the word after it",
    "wraps-around": "scored all {T} positions, the last against the window's first word; the last has no next word, "
    "so only {T_1} have a target",
    "shifted-wrong-way": "scored position t against word t − 1, the word before it; position t predicts word t + 1, "
    "the word one place later",
    "softmax-over-positions": "ran the softmax along the positions (axis T); each position's prediction is a "
    "distribution over the V words",
    "softmax-over-batch": "ran the softmax across the B windows; each position's prediction is a distribution over "
    "the V words, its own row",
    "summed": "gave the sum over the {n} positions; the loss is their mean",
    "divided-by-all-positions": "divided the sum by B·T = {BT}; only the {n} positions that have a next word are "
    "scored, so the mean divides by {BT_1}",
    "minus-forgotten": "gave minus the loss: log probabilities are at most 0, the loss is minus their mean, a "
    "positive number",
    "probabilities-not-logs": "averaged the probabilities of the targets; the loss averages minus their logarithms",
    "every-word-averaged": "averaged the log probabilities of all {V} words at each position; the loss takes only "
    "the target's, the word that comes next, at each position",
}
_SHIFTED = (
    "that is the loss with each position scored against the word {shift} places after it; position t predicts "
    "the next word, 1 place after it"
)
_AXIS, _SHIFT = "axis=-1, keepdims=True", "z = z - z.max(axis=-1, keepdims=True)  # the max shift: exp cannot overflow"


@exercise(
    notebook="11_tiny_gpt",
    hint="Position t has read the words up to t, so its target is the word after it: line up the logits of every "
    "position but the last with the words of every position but the first. Then it is 03's cross-entropy: "
    "minus the log-softmax over the words, at the target, averaged.",
    hint2=(
        "Line up a window of three words a, b, c by hand: position 0's logits must score b, position 1's "
        "score c, and position 2 has no next word in the window. So B·(T − 1) terms are averaged, not B·T. "
        "Subtract each row's largest logit before the exponential, so that logits in the hundreds cannot "
        "overflow; np.take_along_axis picks one entry per row."
    ),
    solution=_LOSS_SOLUTION,
    mistakes={
        "targets-not-shifted": edited(_LOSS_SOLUTION, ("logits[:, :-1]", "logits"), ("ids[:, 1:]", "ids")),
        "wraps-around": edited(
            _LOSS_SOLUTION, ("logits[:, :-1]", "logits"), ("ids[:, 1:]", "np.roll(ids, -1, axis=1)")
        ),
        "shifted-wrong-way": edited(_LOSS_SOLUTION, ("logits[:, :-1]", "logits[:, 1:]"), ("ids[:, 1:]", "ids[:, :-1]")),
        "logits-not-cut": edited(_LOSS_SOLUTION, ("logits[:, :-1]", "logits")),
        "softmax-over-positions": edited(_LOSS_SOLUTION, (_AXIS, "axis=1, keepdims=True")),
        "softmax-over-batch": edited(_LOSS_SOLUTION, (_AXIS, "axis=0, keepdims=True")),
        "summed": edited(_LOSS_SOLUTION, ("-picked.mean()", "-picked.sum()")),
        "divided-by-all-positions": edited(_LOSS_SOLUTION, ("-picked.mean()", "-picked.sum() / ids.size")),
        "minus-forgotten": edited(_LOSS_SOLUTION, ("-picked.mean()", "picked.mean()")),
        "probabilities-not-logs": edited(_LOSS_SOLUTION, ("z - np.log(np.exp(z).sum(", "np.exp(z) / (np.exp(z).sum(")),
        "no-max-shift": edited(_LOSS_SOLUTION, (_SHIFT, "")),
        "one-max-for-all": edited(_LOSS_SOLUTION, ("z.max(axis=-1, keepdims=True)", "z.max()")),
        "every-word-averaged": edited(_LOSS_SOLUTION, ("-picked.mean()", "-log_probs.mean()")),
    },
    forbid=("helpers.training.softmax_cross_entropy",),
)
def next_word_loss(answer):
    rng, (B, T, V) = check_rng(), (2, 6, 7)
    ids, n = rng.integers(V, size=(B, T)), f"B·(T − 1) = {B * (T - 1)}"  # (B, T); the positions with a target
    cases = (
        ("", rng.normal(size=(B, T, V))),  # ordinary logits; then exp overflows past about 709
        (", logits in the hundreds", 800 + 50 * rng.normal(size=(B, T, V))),
        (", rows of logits hundreds apart", rng.normal(size=(B, T, V)) + rng.choice([-600, 600], (B, T, 1))),
    )
    for case, logits in cases:
        what = f"next_word_loss(logits, ids) for logits {logits.shape} (B, T, V) and ids {ids.shape}{case}"
        try:
            got = ref.one_number(call(answer, logits, ids), what)
        except (ValueError, IndexError) as exc:  # the logits of T positions against T − 1 targets
            if raised_by_the_answer(exc) and ref.cut_fits(answer, logits, ids):
                raise Mismatch(
                    f"{what}: your code raised {type(exc).__name__}: it lines up the logits of all {T} "
                    f"positions with the {T - 1} targets; the last position has no next word in the "
                    "window, so leave its logits out (then your code gives the right loss)",
                    "logits-not-cut",
                ) from exc
            raise
        cut, targets = logits[:, :-1], ids[:, 1:]  # (B, T - 1, V), (B, T - 1)
        expected, scored = ref.loss(ref.log_probs(cut), targets), ref.picked(ref.log_probs(cut), targets)
        if np.isclose(got, expected, rtol=1e-6):
            continue
        if not np.isfinite(got) and case:
            if ref.same(got, ref.loss(ref.log_probs(cut, shift="all"), targets)):
                raise Mismatch(
                    f"{what} gave {got}: you subtracted one largest logit for the whole array; in a row "
                    "far below it every exponential underflows to 0, and log 0 is −∞. Subtract each "
                    "row's own largest logit, the largest over its V words",
                    "one-max-for-all",
                )
            raise Mismatch(
                f"{what} gave a loss that is not a finite number: e to the power of a logit overflows "
                "to infinity above about 709. Subtract each row's largest logit before the exponential: "
                "the softmax, and so the loss, stays the same",
                "no-max-shift",
            )
        wrong = {  # what each registered mistake gives on these logits
            "targets-not-shifted": ref.loss(ref.log_probs(logits), ids),
            "wraps-around": ref.loss(ref.log_probs(logits), np.roll(ids, -1, axis=1)),
            "shifted-wrong-way": ref.loss(ref.log_probs(logits[:, 1:]), ids[:, :-1]),
            "softmax-over-positions": ref.loss(ref.log_probs(cut, axis=1), targets),
            "softmax-over-batch": ref.loss(ref.log_probs(cut, axis=0), targets),
            "summed": -scored.sum(),
            "divided-by-all-positions": -scored.sum() / ids.size,
            "minus-forgotten": scored.mean(),
            "probabilities-not-logs": ref.loss(np.exp(ref.log_probs(cut)), targets),
            "every-word-averaged": -ref.log_probs(cut).mean(),
        }
        for code, value in wrong.items():
            if ref.same(got, value):
                says = _LOSS_SAYS[code].format(T=T, T_1=T - 1, V=V, n=n, BT=B * T, BT_1=B * (T - 1))
                raise Mismatch(f"{what} {says}", code)
        shifted = {s: ref.loss(ref.log_probs(logits[:, : T - s]), ids[:, s:]) for s in (2, 3, 4)}
        another_shift(got, shifted, what, _SHIFTED)
        sizes = {"B": B, "T": T, "T − 1": T - 1, "V": V, "B·T": B * T, "B·(T − 1)": B * (T - 1)}
        scaled_by_a_constant(np.asarray(got), expected, what, sizes)
        expect_close(got, expected, what)


_SAMPLE_SOLUTION = """
    def sample_next_word(logits, temperature, u):
        if temperature == 0:
            return int(np.argmax(logits))  # greedy: the limit of a sharper and sharper softmax
        z = logits / temperature  # below 1 sharpens, above 1 flattens
        probs = np.exp(z - z.max())  # the max shift: a small temperature cannot overflow exp
        probs = probs / probs.sum()
        return int(np.searchsorted(np.cumsum(probs), u, side="right"))  # the first running sum above u
"""
_SAMPLE_LAST = 'return int(np.searchsorted(np.cumsum(probs), u, side="right"))'


@exercise(
    notebook="11_tiny_gpt",
    hint="Temperature 0 is greedy: the most likely word, whatever u is. Otherwise divide the logits by the "
    "temperature, take the softmax, and walk along the words adding up their probabilities: the first word "
    "at which the running sum passes u is the sample.",
    hint2=(
        "Check it with u near the ends: u just above 0 must give the first word with a probability above 0, "
        "and u just below 1 the last word with a probability above 0. Below temperature 1 the distribution "
        "sharpens, above 1 it flattens; at 0 dividing is impossible, so the most likely word is taken "
        "directly. np.cumsum gives the running sums."
    ),
    solution=_SAMPLE_SOLUTION,
    mistakes={
        "always-greedy": edited(_SAMPLE_SOLUTION, ("if temperature == 0:", "if True:")),
        "greedy-below-one": edited(_SAMPLE_SOLUTION, ("if temperature == 0:", "if temperature < 1:")),
        "temperature-multiplied": edited(_SAMPLE_SOLUTION, ("logits / temperature", "logits * temperature")),
        "temperature-ignored": edited(_SAMPLE_SOLUTION, ("logits / temperature", "logits")),
        "probabilities-divided": edited(
            _SAMPLE_SOLUTION,
            ("logits / temperature", "logits"),
            ("probs / probs.sum()", "probs / probs.sum() / temperature"),
        ),
        "probability-against-u": edited(_SAMPLE_SOLUTION, (_SAMPLE_LAST, "return int(np.argmax(probs > u))")),
        "off-by-one": edited(_SAMPLE_SOLUTION, (_SAMPLE_LAST, _SAMPLE_LAST + " - 1")),
        "u-ignored": edited(_SAMPLE_SOLUTION, (_SAMPLE_LAST, "return int(np.random.choice(len(probs), p=probs))")),
        "no-max-shift": edited(_SAMPLE_SOLUTION, ("np.exp(z - z.max())", "np.exp(z)")),
        "zero-temperature-divides": edited(_SAMPLE_SOLUTION, ("if temperature == 0:", "if False:")),
        "not-normalised": edited(_SAMPLE_SOLUTION, ("probs = probs / probs.sum()", "probs = probs")),
    },
    forbid=(
        "helpers.softmax",
        "helpers.attention.softmax",
        "helpers.next_word.sample",
        "helpers.next_word.next_word_distribution",
    ),
)
def sample_next_word(answer):
    logits = np.array([0.3, -1.2, 1.5, 0.9, -0.4, 1.1])  # (V,): word 2 is the most likely
    cases = ((1.0, 0.87), (0.5, 0.71), (2.0, 0.53))  # u where most mistakes give another word than the right one
    what = f"sample_next_word(logits, temperature, u) for logits {logits.shape} at (temperature, u) = {cases}"
    if len({ref.word(call(answer, logits, 2.0, 0.53), what) for _ in range(12)}) > 1:
        raise Mismatch(
            f"{what} gave different words for the same logits, temperature and u: the word must follow "
            "from u alone, the first at which the running sum of the probabilities passes it (u is the "
            "random number: draw no other)",
            "u-ignored",
        )
    got = tuple(ref.word(call(answer, logits, t, u), what) for t, u in cases)
    expected = tuple(ref.pick(softmax(logits / t), u) for t, u in cases)
    for code, gives, says in (  # what each mistake returns on the cases, and what it did
        (
            "always-greedy",
            lambda t, u: 2,
            "returned the most likely word, 2, every time: at a temperature above 0 "
            "the word is sampled, each with its probability",
        ),
        (
            "greedy-below-one",
            lambda t, u: 2 if t < 1 else ref.pick(softmax(logits / t), u),
            "returned the most "
            "likely word at temperature 0.5: only temperature 0 is greedy; below 1 the distribution is sharper, but "
            "still sampled",
        ),
        (
            "temperature-multiplied",
            lambda t, u: ref.pick(softmax(logits * t), u),
            "sampled from the logits "
            "multiplied by the temperature: 0.5 made the distribution flatter and 2 sharper; divide them by it",
        ),
        (
            "temperature-ignored",
            lambda t, u: ref.pick(softmax(logits), u),
            "sampled from the softmax of the logits "
            "as they are, whatever the temperature; divide the logits by it first",
        ),
        (
            "probabilities-divided",
            lambda t, u: ref.pick(softmax(logits) / t, u),
            "divided the probabilities by the "
            "temperature after the softmax: their sum is then not 1, and the distribution's shape does not change; "
            "divide the logits, before the softmax",
        ),
        (
            "probability-against-u",
            lambda t, u: int(np.argmax(softmax(logits / t) > u)),
            "compared each word's own "
            "probability with u; u is compared with the running sum of the probabilities, so that each word owns a "
            "stretch of [0, 1) as long as its probability",
        ),
        (
            "not-normalised",
            lambda t, u: ref.pick(np.exp(logits / t - (logits / t).max()), u),
            "walked along exponentials that were not divided by their sum: their running sum passes 1 early, "
            "so u falls on an earlier word; the probabilities are the exponentials divided by their sum, "
            "and they add up to 1",
        ),
        (
            "off-by-one",
            lambda t, u: ref.pick(softmax(logits / t), u) - 1,
            f"returned words {got}, each one before "
            f"the right words {expected}: the sample is the first word at which the running sum passes u",
        ),
        (
            "off-by-one",
            lambda t, u: ref.pick(softmax(logits / t), u) + 1,
            f"returned words {got}, each one after "
            f"the right words {expected}: the sample is the first word at which the running sum passes u",
        ),
    ):
        if got != expected and got == tuple(gives(t, u) for t, u in cases):
            raise Mismatch(f"{what} {says}", code)
    if got != expected:
        case = next(i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e)
        raise Mismatch(
            f"{what} returned word {got[case]} at temperature {cases[case][0]}, u = {cases[case][1]}, "
            f"but u falls on word {expected[case]} (all three: got {got}, expected {expected})",
            "wrong-values",
        )
    big = 800 * np.array([1.0, -1.2, 1.5, 0.2, -0.4, 0.8])  # (V,): logits in the hundreds, word 2 far ahead
    what = "sample_next_word(logits, 1.0, 0.5) for logits in the hundreds"
    if (got := ref.word(call(answer, big, 1.0, 0.5), what)) != 2:
        raise Mismatch(
            f"{what} returned word {got}, but nearly all the probability is on word 2: the exponential of "
            "a logit above about 709 overflows to infinity, and infinity over infinity is NaN. Subtract "
            "the largest scaled logit before the exponential",
            "no-max-shift",
        )
    what = f"sample_next_word(logits, 0, 0.7) for logits {logits.shape}"
    try:
        got = ref.word(call(answer, logits, 0, 0.7), what)
    except (ZeroDivisionError, ValueError, IndexError, FloatingPointError) as exc:
        if not raised_by_the_answer(exc):
            raise
        raise Mismatch(
            f"{what}: your code raised {type(exc).__name__} at temperature 0. Temperature 0 is greedy, "
            "the most likely word; dividing the logits by 0 is impossible, so handle it apart",
            "zero-temperature-divides",
        ) from exc
    if got != 2:
        with np.errstate(all="ignore"):  # what dividing by 0 gives: infinities, then NaN probabilities
            z = logits / 0
            divided = ref.pick(np.exp(z - z.max()) / np.exp(z - z.max()).sum(), 0.7)
        if got == divided:
            raise Mismatch(
                f"{what} returned word {got}, not the most likely word, 2. Temperature 0 is greedy; "
                "dividing the logits by 0 gives infinities (and NaN probabilities), so temperature 0 has "
                "to be handled apart",
                "zero-temperature-divides",
            )
        raise Mismatch(
            f"{what} returned word {got}, not the most likely word, 2: temperature 0 is greedy, the word "
            "with the largest logit, whatever u is",
            "wrong-values",
        )


_STEP_SOLUTION = """
    def cached_attention_step(word_id, position, cache_K, cache_V, project, window):
        q, k, v = project(word_id, position)  # (d,) each: q and k rotated to this word's position
        K = np.concatenate([cache_K, k[None]])[-window:]  # (n + 1, d), then the latest window rows
        V = np.concatenate([cache_V, v[None]])[-window:]
        scores = K @ q / np.sqrt(len(q))  # (rows kept,): the new word against itself and the words before
        weights = np.exp(scores - scores.max())
        weights = weights / weights.sum()
        return weights @ V, K, V  # out (d,), and the caches for the next step
"""
_K, _V = "np.concatenate([cache_K, k[None]])[-window:]", "np.concatenate([cache_V, v[None]])[-window:]"


@exercise(
    notebook="11_tiny_gpt",
    hint="Project the new word at its position, append its key and value to the cached ones, keep only the "
    "latest `window` of them, and let the new word's query attend over those: a softmax of the scaled "
    "scores, then the weighted sum of the values.",
    hint2=(
        "Check the window on a small case: with window = 3 the fifth word attends to words 3, 4 and 5 and "
        "never to 1 or 2, so the caches keep only the latest rows. Rotate with the position you are given: "
        "once the window slides it is no longer the number of cached rows. The scores are divided by √d, d "
        "the width of what project gives."
    ),
    solution=_STEP_SOLUTION,
    mistakes={
        "cache-not-appended": edited(_STEP_SOLUTION, ("weights @ V, K, V", "weights @ V, cache_K, cache_V")),
        "own-key-left-out": edited(
            _STEP_SOLUTION,
            ("scores = K @ q", "scores = cache_K[-window:] @ q"),
            ("return weights @ V, K, V", "return weights @ cache_V[-window:], K, V"),
        ),
        "no-window": edited(_STEP_SOLUTION, (_K, _K[:-10]), (_V, _V[:-10])),
        "window-after-attending": edited(
            _STEP_SOLUTION,
            (_K, _K[:-10]),
            (_V, _V[:-10]),
            ("return weights @ V, K, V", "return weights @ V, K[-window:], V[-window:]"),
        ),
        "kept-oldest": edited(
            _STEP_SOLUTION, (_K, _K.replace("-window:", ":window")), (_V, _V.replace("-window:", ":window"))
        ),
        "new-row-first": edited(
            _STEP_SOLUTION, ("[cache_K, k[None]]", "[k[None], cache_K]"), ("[cache_V, v[None]]", "[v[None], cache_V]")
        ),
        "position-from-cache-length": edited(
            _STEP_SOLUTION, ("project(word_id, position)", "project(word_id, len(cache_K))")
        ),
        "no-square-root": edited(_STEP_SOLUTION, ("/ np.sqrt(len(q))", "")),
        "divided-by-d": edited(_STEP_SOLUTION, ("/ np.sqrt(len(q))", "/ len(q)")),
    },
)
def cached_attention_step(answer):
    project, window, words = ref.toy_projection(), 3, [3, 1, 4, 1, 5, 8, 2]  # the window is not d = 4
    cache_K, cache_V = map(np.array, zip(*(project(w, p)[1:] for p, w in enumerate(words[:2])), strict=True))  # (2, d)
    for position in range(2, len(words)):  # one word at a time; from position 3 on the window slides
        word, n = words[position], len(cache_K)
        what = f"cached_attention_step at position {position} with {n} words cached (window {window})"
        got_out, got_K, got_V = returned_tuple(
            call(answer, word, position, cache_K, cache_V, project, window), ("out", "cache_K", "cache_V"), what
        )
        q, k, v = project(word, position)
        K_all, V_all = np.concatenate([cache_K, k[None]]), np.concatenate([cache_V, v[None]])  # (n + 1, d)
        K, V = K_all[-window:], V_all[-window:]  # (at most window, d)
        for got, old, new, name in ((got_K, cache_K, K_all, "cache_K"), (got_V, cache_V, V_all, "cache_V")):
            if n + 1 > window and matches(got, new[:window]):
                raise Mismatch(
                    f"{what}: the returned {name} kept the oldest {window} rows and dropped the new "
                    f"word's; keep the latest {window}, the new word's row last",
                    "kept-oldest",
                )
            if matches(got, np.concatenate([new[-1:], old])[:window]):
                raise Mismatch(
                    f"{what}: the returned {name} has the new word's row first; keep the rows in the "
                    "order of the words, oldest first, so that cutting the oldest keeps the latest",
                    "new-row-first",
                )
            if matches(got, old):
                raise Mismatch(
                    f"{what}: the returned {name} is the cache you were given; return it with the new "
                    "word's row after the cached ones, so that the next step sees this word",
                    "cache-not-appended",
                )
            if n + 1 > window and matches(got, new):
                raise Mismatch(
                    f"{what}: the returned {name} has {n + 1} rows; keep the latest {window}, so the "
                    "cache never outgrows the window (each word sees at most window words, itself "
                    "included)",
                    "no-window",
                )
        q_len, k_len, _ = project(word, n)
        K_len = np.concatenate([cache_K, k_len[None]])[-window:]
        if n != position and (matches(got_K, K_len) or matches(got_out, ref.attend_one(q_len, K_len, V))):
            raise Mismatch(
                f"{what}: the new word was turned to position {n}, the number of cached rows, instead "
                f"of its position in the text, {position}: once the window slides the cache holds fewer "
                "rows than the text has words, and the rotation must match the positions of the cached "
                "keys",
                "position-from-cache-length",
            )
        expect_close(got_K, K, f"{what}: cache_K")
        expect_close(got_V, V, f"{what}: cache_V")
        for code, wrong, says in (
            (
                "own-key-left-out",
                ref.attend_one(q, cache_K[-window:], cache_V[-window:]),
                "out attended over the "
                "cached words only; the new word may also see itself: attend after appending its key and value",
            ),
            (
                "window-after-attending",
                ref.attend_one(q, K_all, V_all),
                f"out attended over all {n + 1} rows, then the "
                f"cache was cut to {window}; cut first, so that the new word sees itself and {window - 1} words before "
                "it, as in training",
            ),
            (
                "no-square-root",
                ref.attend_one(q, K, V, scale=1),
                f"out used the scores without dividing them by √d = "
                f"{np.sqrt(len(q)):g}: scaled attention divides each score by the square root of the width (04)",
            ),
            (
                "divided-by-d",
                ref.attend_one(q, K, V, scale=len(q)),
                f"out divided the scores by d = {len(q)}; scaled "
                f"attention divides them by √d = {np.sqrt(len(q)):g}, the square root of the width (04)",
            ),
        ):
            if (code != "window-after-attending" or n + 1 > window) and matches(got_out, wrong):
                raise Mismatch(f"{what}: {says}", code)
        weights = softmax(K @ q / np.sqrt(len(q)))  # (rows kept,)
        wrong_array_weighted(got_out, {"the keys K": weights @ K}, f"{what}: out", "the values V")
        sizes = {"d": len(q), "window": window, "the number of rows kept": len(K), "the position": position}
        scores_divided_by(got_out, functools.partial(ref.attend_one, q, K, V), f"{what}: out", sizes, ("√d", 2.0))
        expect_close(got_out, ref.attend_one(q, K, V), f"{what}: out")
        cache_K, cache_V = K, V
