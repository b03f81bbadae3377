"""The exercises of 04_scaling."""

import numpy as np

from helpers.checks._core import Case, Mismatch, check_rng, exercise
from helpers.checks._expect import one_number


def _predicted(got, expected, case):
    """The prediction is right within 10 % of what the check measured (about 3 standard errors)."""
    if np.isnan(got):
        raise Mismatch(f"{case.what} is NaN", "nan")
    if not np.isclose(got, expected, rtol=0.1):
        raise Mismatch(
            f"{case.what}: you predicted {got:.4g}, and 10,000 random pairs measure {expected:.4g}", "wrong-values"
        )


@exercise(
    hint="q·k is a sum of d_k products q_c·k_c, independent of each other. Work out the variance of one product, "
    "then use the fact that the variances of independent terms add up.",
    hint2="Test your formula on cases you can work out in your head: with d_k = 1 and both standard deviations 1, one "
    "product of two independent standard normal numbers has variance 1; doubling d_k doubles the variance; doubling "
    "one standard deviation multiplies it by 4. Return the variance itself, not its square root.",
    solution="""
        def score_variance(d_k, sigma_q, sigma_k):
            return d_k * sigma_q**2 * sigma_k**2
    """,
    mistakes=r"""
        unit-variances: `d_k * sigma_q**2 * sigma_k**2` → `d_k`
            {what}: you predicted {got:.4g}, and 10,000 random pairs measure {measured:.4g}. Your d_k holds when both
            standard deviations are 1; each product q_c·k_c has variance σ_q²·σ_k², so σ_q and σ_k belong in the answer
        sigmas-not-squared: `d_k * sigma_q**2 * sigma_k**2` → `d_k * sigma_q * sigma_k`
            {what}: you predicted {got:.4g}, and 10,000 random pairs measure {measured:.4g}. You multiplied d_k by
            σ_q·σ_k, the standard deviations; a variance is a standard deviation squared, so each product q_c·k_c has
            variance σ_q²·σ_k²
        sigmas-not-squared: `sigma_q**2` → `sigma_q`
            {what}: you predicted {got:.4g}, and 10,000 random pairs measure {measured:.4g}. You squared σ_k but not
            σ_q: each product q_c·k_c has variance σ_q²·σ_k², both standard deviations squared
        sigmas-not-squared: `sigma_k**2` → `sigma_k`
            {what}: you predicted {got:.4g}, and 10,000 random pairs measure {measured:.4g}. You squared σ_q but not
            σ_k: each product q_c·k_c has variance σ_q²·σ_k², both standard deviations squared
        standard-deviation: `d_k * sigma_q**2 * sigma_k**2` → `np.sqrt(d_k) * sigma_q * sigma_k`
            {what}: you predicted {got:.4g}, and 10,000 random pairs measure {measured:.4g}. Your number is the standard
            deviation of the score, the typical size of q·k; the exercise asks for its variance, the square of that
        one-product: `d_k * ` → ``
            {what}: you predicted {got:.4g}, and 10,000 random pairs measure {measured:.4g}. That is the variance of one
            product q_c·k_c; the score adds up d_k = {d_k} independent products, and their variances add up too
        variances-added: `d_k * sigma_q**2 * sigma_k**2` → `d_k * (sigma_q**2 + sigma_k**2)`
            {what}: you predicted {got:.4g}, and 10,000 random pairs measure {measured:.4g}. You added the variances of
            q_c and k_c; for a product of two independent numbers with mean 0 the variances multiply: the mean of
            q_c²·k_c² is the mean of q_c² times the mean of k_c²
    """,
    read=one_number,
    compare=_predicted,
)
def score_variance():
    rng = check_rng()
    # both standard deviations differ from 1 before one of them is 1, so σ_q² and σ_k² can be told apart
    for d_k, sigma_q, sigma_k in ((1, 1.0, 1.0), (64, 1.0, 1.0), (16, 2.0, 3.0), (256, 0.5, 1.0)):
        q, k = rng.normal(0, sigma_q, (10_000, d_k)), rng.normal(0, sigma_k, (10_000, d_k))
        measured = float(np.var(np.sum(q * k, axis=-1)))  # the check measures what you predict
        what = f"score_variance({d_k}, {sigma_q}, {sigma_k})"
        yield Case(what, (d_k, sigma_q, sigma_k), facts={"d_k": d_k, "measured": measured}, expected=measured)


_SHAPES = ((3, 5, 16), (2, 6, 64))  # (T_q, T_k, d_k) of the two calls
_WHATS = [f"scaled_scores(Q, K) for Q ({T_q}, {d_k}) and K ({T_k}, {d_k})" for T_q, T_k, d_k in _SHAPES]


def _name_the_divisor(got, expected, case):
    """Each case's answer is its raw scores divided by one number, a wrong one that no registered way names."""
    divisors = [_divisor(part, raw) for part, raw in zip(got, case.facts["raw"], strict=True)]
    if None in divisors:
        return
    wrong = [i for i, (c, (*_, d_k)) in enumerate(zip(divisors, _SHAPES, strict=True)) if not np.isclose(c, d_k**0.5)]
    if not wrong:
        return
    i = wrong[0]
    what, d_k, c = _WHATS[i], _SHAPES[i][2], divisors[i]
    if np.allclose(divisors, divisors[0]):
        raise Mismatch(
            f"{what}: you divided by {c:g} whatever the input; here d_k = {d_k}, so divide by √{d_k} = {d_k**0.5:g}. "
            "Read d_k from the size of the inputs, so that the scaling follows it",
            "fixed-number",
        )
    known = {  # other divisors seen, named after the fact: (T_q, d_k) -> the divisor
        "the fourth root of d_k, a square root taken twice": lambda T_q, d_k: d_k**0.25,
        "the square root of the number of entries of Q, T_q·d_k": lambda T_q, d_k: (T_q * d_k) ** 0.5,
        "√(2·d_k)": lambda T_q, d_k: (2 * d_k) ** 0.5,
    }
    names = [n for n, divisor in known.items() if np.allclose(divisors, [divisor(T_q, d_k) for T_q, _, d_k in _SHAPES])]
    raise Mismatch(
        f"{what}: you divided every score by the same number, {c:.4g}{''.join(', ' + n for n in names[:1])}, not by "
        f"√d_k = {d_k**0.5:g}. d_k = {d_k} is the length of each query and key vector, the size of their last axis",
        "wrong-divisor",
    )


def _divisor(got, scores):
    """The one number c with got = scores / c (least squares, then checked), or None when there is none."""
    if got.shape != scores.shape or np.iscomplexobj(got) or not np.all(np.isfinite(got)):
        return None
    overlap = float(np.sum(scores * got))
    c = float(np.sum(scores * scores)) / overlap if overlap > 0 else None  # least squares
    return c if c is not None and np.allclose(got, scores / c, rtol=1e-4, atol=1e-6) else None


@exercise(
    hint="Compute the scores as in notebook 03, every query with every key, then divide them all by the square "
    "root of d_k, the length of each query and key vector, read from the inputs rather than written as a "
    "number. np.sqrt gives a square root.",
    hint2="Q is (T_q, d_k) and K is (T_k, d_k): Q times the transpose of K is (T_q, T_k), one row per query. d_k is "
    "the size of the last axis of Q (the same as K's), not the number of rows of either, and the divisor is "
    "its square root, √d_k, not d_k itself.",
    solution="""
        def scaled_scores(Q, K):
            d_k = Q.shape[-1]
            return Q @ K.T / np.sqrt(d_k)  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    """,
    # a mistake with no message is named by _name_the_divisor, which names the number the scores were divided by
    mistakes=r"""
        divided-by-d-k: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / d_k`
            {what}: you divided the scores by d_k = {d_k}; divide by its square root, √{d_k} = {root:g}. Dividing by d_k
            shrinks the scores' variance to 1/d_k instead of bringing it to 1
        not-scaled: ` / np.sqrt(d_k)` → ``
            {what}: the scores are not scaled; divide every score by √d_k = {root:g}, so that their variance is about 1
            whatever d_k is
        number-of-queries: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / np.sqrt(Q.shape[0])`
            {what}: you divided by √{T_q}, the square root of the number of queries (the rows of Q); d_k = {d_k} is the
            length of each query and key vector, the size of the last axis
        number-of-queries: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / Q.shape[0]`
            {what}: you divided by {T_q}, the number of queries (the rows of Q); divide by √d_k, the square root of the
            length of each query and key vector: √{d_k} = {root:g}
        number-of-keys: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / np.sqrt(len(K))`
            {what}: you divided by √{T_k}, the square root of the number of keys (the rows of K); d_k = {d_k} is the
            length of each query and key vector, the size of the last axis
        number-of-keys: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / len(K)`
            {what}: you divided by {T_k}, the number of keys (the rows of K); divide by √d_k, the square root of the
            length of each query and key vector: √{d_k} = {root:g}
        fixed-number: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / 8`
        keys-as-rows: `Q @ K.T` → `K @ Q.T`
            {what} has shape ({T_k}, {T_q}), one row per key: you multiplied K by the transpose of Q. The rows are the
            queries: Q times the transpose of K, ({T_q}, {T_k})
        multiplied: `/ np.sqrt` → `* np.sqrt`
            {what}: you multiplied the scores by √d_k = {root:g}; divide them by it, so that their variance shrinks from
            d_k to about 1
        power-precedence: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / d_k ** 1 / 2`
            {what}: you divided by {twice}, which is 2·d_k: a power of 1/2 written without brackets is read as d_k to
            the power 1, and the division by 2 then divides the scores once more (a power comes before a division).
            Bracket the exponent, or take a square root: √{d_k} = {root:g}
        power-precedence: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / (d_k ** 1 / 2)`
            {what}: you divided by {half:g}, which is d_k/2: a power of 1/2 written without brackets is read as d_k to
            the power 1, then divided by 2 (a power comes before a division). Bracket the exponent, or take a square
            root: √{d_k} = {root:g}
        wrong-divisor: `Q @ K.T / np.sqrt(d_k)` → `Q @ K.T / np.sqrt(Q.size)`
        softmax-applied:
            `return Q @ K.T / np.sqrt(d_k)` → `e = np.exp(Q @ K.T / d_k**0.5)\n    return e / e.sum(-1, keepdims=True)`
            {what}: your scores are already weights (each row sums to 1). Return the scaled scores themselves; the
            softmax comes after them, in attention
        softmax-applied:
            `return Q @ K.T / np.sqrt(d_k)` → `e = np.exp(Q @ K.T)\n    return e / e.sum(axis=-1, keepdims=True)`
    """,
    families=_name_the_divisor,
)
def scaled_scores():
    rng = check_rng()
    inputs = [(rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))) for T_q, T_k, d_k in _SHAPES]
    # T_q, T_k, √d_k, d_k/2 all differ in each case; both are run at once, so a name fits both
    facts = {"T_q": 3, "T_k": 5, "d_k": 16, "root": 4.0, "twice": 32, "half": 8.0}
    facts["raw"] = [Q @ K.T for Q, K in inputs]
    expected = tuple(Q @ K.T / np.sqrt(Q.shape[-1]) for Q, K in inputs)
    yield Case(_WHATS[0], facts=facts, expected=expected, run=lambda f: tuple(f(Q, K) for Q, K in inputs), parts=_WHATS)
