"""Exercise checks: ✓ correct / ✗ what differs + a hint / · not attempted. A check never raises.

In a notebook:

    def cosine_similarity(a, b):
        ...  # your code here
        raise NotImplementedError

    checks.cosine_similarity(cosine_similarity)   # prints one verdict line (and a hint)
    checks.hint("cosine_similarity")              # prints the hint
    checks.solution("cosine_similarity")          # prints a solution

Adding an exercise: write a function that takes the learner's answer and raises `Mismatch`
(through `expect_close` / `expect_equal` / `call`) when it is wrong, and decorate it with
`@exercise(notebook=..., hint=..., solution=..., wrong=...)`. `solution` and `wrong` are
source code defining the learner's function; the tests run every exercise's check on both,
on an untouched stub and on a crashing answer.
"""

import functools
import sys
import textwrap
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

CORRECT, INCORRECT, NOT_ATTEMPTED = "correct", "incorrect", "not attempted"


class Mismatch(Exception):
    """The answer is wrong; the message says what differs."""


class NotAttempted(Exception):
    """The answer is still the untouched stub."""


@dataclass
class Exercise:
    name: str  # the check's name, also the name of the function the learner writes
    notebook: str
    check: object  # callable(answer) -> None, raises Mismatch when wrong
    hint: str
    solution: str  # source code defining `name`
    wrong: str  # source code defining a plausible wrong `name` (for the tests)


@dataclass
class Result:
    """What a check found; the check has already printed `message`."""

    exercise: str
    status: str
    message: str

    def __bool__(self):
        return self.status == CORRECT

    def _ipython_display_(self):
        # printed when the check ran; showing it again as Out[] would double it
        pass


EXERCISES = {}


def exercise(*, notebook, hint, solution, wrong):
    """Register a check; the decorated name becomes `checks.<name>(answer) -> Result`."""

    def register(check_fn):
        name = check_fn.__name__
        if name in EXERCISES:  # a second one would silently replace the first
            raise ValueError(f"exercise {name!r} is registered twice (notebooks "
                             f"{EXERCISES[name].notebook} and {notebook}): rename one")
        EXERCISES[name] = Exercise(name, notebook, check_fn, textwrap.dedent(hint).strip(),
                                   textwrap.dedent(solution).strip(), textwrap.dedent(wrong).strip())

        @functools.wraps(check_fn)
        def run(answer):
            return _run(EXERCISES[name], answer)

        return run

    return register


def _is_untouched(value):
    return value is None or value is Ellipsis


def call(fn, *args, **kwargs):
    """Call the learner's function on copies of the arguments; an untouched stub -> NotAttempted."""
    if not callable(fn):
        raise Mismatch(f"expected a function, got {type(fn).__name__}")
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = fn(*copies, **kwargs)
    if _is_untouched(result):
        raise NotAttempted("Your function returned None: did you forget `return`?")
    return result


def _as_array(got, what):
    try:
        arr = np.asarray(got)
    except Exception:  # a ragged list, an object numpy cannot read
        raise Mismatch(f"{what} should be an array, got {type(got).__name__}") from None
    if arr.dtype == object:
        raise Mismatch(f"{what} should be an array of numbers, got {type(got).__name__}")
    return arr


def expect_close(got, expected, what, rtol=1e-5, atol=1e-8):
    """Raise Mismatch unless `got` has `expected`'s shape and values (to rtol/atol)."""
    expected = np.asarray(expected)
    arr = _as_array(got, what)
    if arr.shape != expected.shape:
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}")
    if not np.issubdtype(arr.dtype, np.number) and arr.dtype != bool:
        raise Mismatch(f"{what} should hold numbers, got dtype {arr.dtype}")
    if np.any(np.isnan(arr.astype(float))) and not np.any(np.isnan(expected.astype(float))):
        raise Mismatch(f"{what} contains NaN")
    if not np.allclose(arr, expected, rtol=rtol, atol=atol, equal_nan=True):
        diff = np.abs(arr.astype(float) - expected.astype(float))
        where = np.unravel_index(np.nanargmax(diff), diff.shape) if diff.ndim else ()
        at = f" at index {tuple(int(i) for i in where)}" if where else ""
        raise Mismatch(f"{what} differs from the expected values{at}: "
                       f"got {float(arr[where]):.4g}, expected {float(expected[where]):.4g}")


def expect_equal(got, expected, what):
    """Raise Mismatch unless `got` equals `expected` exactly (shape, dtype kind and values)."""
    expected = np.asarray(expected)
    arr = _as_array(got, what)
    if arr.shape != expected.shape:
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}")
    if expected.dtype == bool and arr.dtype != bool:
        raise Mismatch(f"{what} should be a boolean array (True = may attend), got dtype {arr.dtype}")
    if not np.array_equal(arr, expected):
        where = tuple(int(i) for i in np.argwhere(arr != expected)[0])
        raise Mismatch(f"{what} differs at index {where}: got {arr[where]}, expected {expected[where]}")


def _crash_summary(exc):
    """One line naming the exception and the line of the learner's code that raised it."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if f.filename != __file__]
    where = f" (line: {mine[-1].line})" if mine and mine[-1].line else ""
    return f"your code raised {type(exc).__name__}: {exc}{where}"


def _run(ex, answer):
    """Run one check and print one verdict; never raises (except KeyboardInterrupt)."""
    try:
        if _is_untouched(answer):
            raise NotAttempted("")
        ex.check(answer)
        status, message = CORRECT, f"✓ {ex.name}: correct!"
    except (NotAttempted, NotImplementedError) as exc:
        status = NOT_ATTEMPTED
        todo = (str(exc) if isinstance(exc, NotAttempted) and str(exc)
                else "Write your code in place of `raise NotImplementedError` and run the cell again.")
        message = f"· {ex.name}: not attempted yet. {todo}\n  checks.hint({ex.name!r}) gives a hint."
    except Mismatch as exc:
        status, message = INCORRECT, f"✗ {ex.name}: {exc}\n  Hint: {ex.hint}"
    except Exception as exc:  # a crash inside the learner's code is shown, never raised
        status, message = INCORRECT, f"✗ {ex.name}: {_crash_summary(exc)}\n  Hint: {ex.hint}"
    print(message)
    sys.stdout.flush()
    return Result(ex.name, status, message)


def _lookup(name):
    if name not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        print(f"No exercise called {name!r}. The exercises are: {known}")
        return None
    return EXERCISES[name]


def hint(name):
    """Print the hint for exercise `name`."""
    ex = _lookup(name)
    if ex:
        print(f"Hint for {name}: {ex.hint}")


def solution(name):
    """Print a solution for exercise `name`."""
    ex = _lookup(name)
    if ex:
        print(ex.solution)


def reference(name):
    """A working version of the learner's function, built from the solution's source."""
    namespace = {"np": np}
    exec(EXERCISES[name].solution, namespace)  # noqa: S102 - our own solution text
    return namespace[name]


def _rng():
    """Each check draws its test inputs from the same seed, so its messages are repeatable."""
    return np.random.default_rng(1234)


# ---------------------------------------------------------------------------------------
# 01_embeddings
# ---------------------------------------------------------------------------------------


@exercise(
    notebook="01_embeddings",
    hint="Divide the dot product a @ b by the product of the two lengths, np.linalg.norm(a) * np.linalg.norm(b).",
    solution="""
        def cosine_similarity(a, b):
            return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
    """,
    wrong="""
        def cosine_similarity(a, b):
            return a @ b
    """,
)
def cosine_similarity(answer):
    rng = _rng()
    for d in (2, 5, 384):
        a, b = rng.normal(size=d), rng.normal(size=d) * 3
        expected = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        expect_close(call(answer, a, b), expected, f"cosine_similarity(a, b) for d={d}")


@exercise(
    notebook="01_embeddings",
    hint="Get all the cosines at once: table @ v divided by np.linalg.norm(table, axis=1) * np.linalg.norm(v). "
         "Then np.argsort(-cosines)[:k] gives the rows of the k largest, best first.",
    solution="""
        def nearest_neighbours(v, table, k):
            cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))  # (V, d) @ (d,) -> (V,)
            return np.argsort(-cosines)[:k]
    """,
    wrong="""
        def nearest_neighbours(v, table, k):
            return np.argsort(-(table @ v))[:k]
    """,
)
def nearest_neighbours(answer):
    rng = _rng()
    # rows of very different lengths, so ranking by dot product and by cosine disagree
    table = rng.normal(size=(60, 8)) * rng.uniform(0.2, 5.0, size=(60, 1))
    for k in (5, 1):
        v = rng.normal(size=8)
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        expected = np.argsort(-cosines)[:k]
        got = _as_array(call(answer, v, table, k), f"nearest_neighbours(v, table, k={k})").ravel()
        if got.shape == expected.shape and set(got.tolist()) == set(expected.tolist()):
            if not np.array_equal(got, expected):
                raise Mismatch(f"nearest_neighbours(v, table, k={k}) has the right rows in the wrong order: "
                               "put the most similar first")
        expect_equal(got, expected, f"nearest_neighbours(v, table, k={k}) (row indices, best first)")


# --- end of 01_embeddings ---

# ---------------------------------------------------------------------------------------
# 02_similarity_matrix
# ---------------------------------------------------------------------------------------


@exercise(
    notebook="02_similarity_matrix",
    hint="Subtract each row's maximum (keepdims=True) before np.exp, then divide each row by its sum.",
    solution="""
        def row_softmax(S):
            e = np.exp(S - S.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """,
    wrong="""
        def row_softmax(S):
            e = np.exp(S)
            return e / e.sum()
    """,
)
def row_softmax(answer):
    rng = _rng()
    S = rng.normal(size=(4, 6)) * 3
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    expect_close(call(answer, S), e / e.sum(axis=-1, keepdims=True), "row_softmax(S) for S of shape (4, 6)")
    big = np.array([[1000.0, 1001.0, 1002.0]])
    e = np.exp(big - big.max())
    expect_close(call(answer, big), e / e.sum(), "row_softmax on scores near 1000 (overflow?)")


@exercise(
    notebook="02_similarity_matrix",
    hint="X @ X.T holds every dot product at once. For cosine=True, first divide each row by its length: "
         "X / np.linalg.norm(X, axis=1, keepdims=True).",
    solution="""
        def similarity_matrix(X, cosine=False):
            if cosine:
                X = X / np.linalg.norm(X, axis=1, keepdims=True)  # (T, d) / (T, 1) -> unit rows
            return X @ X.T  # (T, d) @ (d, T) -> (T, T)
    """,
    wrong="""
        def similarity_matrix(X, cosine=False):
            return X @ X.T
    """,
)
def similarity_matrix(answer):
    rng = _rng()
    X = rng.normal(size=(5, 7)) * rng.uniform(0.5, 3.0, size=(5, 1))
    expect_close(call(answer, X), X @ X.T, "similarity_matrix(X) for X of shape (5, 7)")
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    expect_close(call(answer, X, cosine=True), U @ U.T, "similarity_matrix(X, cosine=True)")


@exercise(
    notebook="02_similarity_matrix",
    hint="Three steps: scores S = X @ X.T (T, T); weights = softmax of each row of S (subtract the row max, "
         "np.exp, divide by the row sum); return weights @ X, shape (T, d).",
    solution="""
        def attention_without_weights(X):
            S = X @ X.T  # (T, d) @ (d, T) -> (T, T)
            e = np.exp(S - S.max(axis=-1, keepdims=True))
            weights = e / e.sum(axis=-1, keepdims=True)  # each row sums to 1
            return weights @ X  # (T, T) @ (T, d) -> (T, d)
    """,
    wrong="""
        def attention_without_weights(X):
            return (X @ X.T) @ X
    """,
)
def attention_without_weights(answer):
    rng = _rng()
    X = rng.normal(size=(4, 6)) * rng.uniform(0.3, 1.5, size=(4, 1))
    S = X @ X.T
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    expected = (e / e.sum(axis=-1, keepdims=True)) @ X
    expect_close(call(answer, X), expected, "attention_without_weights(X) for X of shape (4, 6)")


# --- end of 02_similarity_matrix ---


# ---------------------------------------------------------------------------------------
# 03_queries_keys_values
# ---------------------------------------------------------------------------------------


@exercise(
    notebook="03_queries_keys_values",
    hint="Project X three times (Q = X @ W_q, K = X @ W_k, V = X @ W_v). The scores compare every "
         "query with every key, rows = queries: Q @ K.T.",
    solution="""
        def qkv_scores(X, W_q, W_k, W_v):
            Q = X @ W_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            K = X @ W_k  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            V = X @ W_v  # (T, d_model) @ (d_model, d_v) -> (T, d_v)
            scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
            return Q, K, V, scores
    """,
    wrong="""
        def qkv_scores(X, W_q, W_k, W_v):
            Q = X @ W_q
            K = X @ W_k
            V = X @ W_v
            return Q, K, V, K @ Q.T
    """,
)
def qkv_scores(answer):
    rng = _rng()
    X = rng.normal(size=(4, 5))
    W_q, W_k, W_v = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    got = call(answer, X, W_q, W_k, W_v)
    if not isinstance(got, (tuple, list)) or len(got) != 4:
        raise Mismatch("return four things, in this order: Q, K, V, scores")
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    shapes = "X (4, 5), W_q and W_k (5, 3), W_v (5, 2)"
    for name, value, expected in zip(("Q", "K", "V"), got[:3], (Q, K, V), strict=True):
        expect_close(value, expected, f"{name} for {shapes}")
    scores = _as_array(got[3], "scores")
    if scores.shape == (4, 4) and np.allclose(scores, (Q @ K.T).T):
        raise Mismatch("scores is transposed: row i must hold query i's scores against every key (Q @ K.T)")
    expect_close(scores, Q @ K.T, f"scores for {shapes}")


def _softmax_rows(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@exercise(
    notebook="03_queries_keys_values",
    hint="Row by row: d_scores = weights * (d_weights - s), where s = sum(weights * d_weights) over the "
         "last axis. Use keepdims=True so s broadcasts back over the row.",
    solution="""
        def softmax_backward(d_weights, weights):
            inner = np.sum(d_weights * weights, axis=-1, keepdims=True)  # (..., T, 1)
            return weights * (d_weights - inner)  # (..., T, T)
    """,
    wrong="""
        def softmax_backward(d_weights, weights):
            return weights * d_weights
    """,
)
def softmax_backward(answer):
    rng = _rng()
    for shape in ((3, 4), (2, 3, 5)):
        weights = _softmax_rows(rng.normal(size=shape) * 2)
        d_weights = rng.normal(size=shape)
        expected = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
        expect_close(call(answer, d_weights, weights), expected, f"d_scores for weights of shape {shape}")


# --- end of 03_queries_keys_values ---


# ---------------------------------------------------------------------------------------
# 04_scaling
# ---------------------------------------------------------------------------------------


@exercise(
    notebook="04_scaling",
    hint="Divide Q @ K.T by the square root of d_k, the length of each query and key: Q.shape[-1].",
    solution="""
        def scaled_scores(Q, K):
            d_k = Q.shape[-1]
            return Q @ K.T / np.sqrt(d_k)  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    """,
    wrong="""
        def scaled_scores(Q, K):
            d_k = Q.shape[-1]
            return Q @ K.T / d_k
    """,
)
def scaled_scores(answer):
    rng = _rng()
    for T_q, T_k, d_k in ((3, 4, 16), (2, 5, 64)):
        Q, K = rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
        got = _as_array(call(answer, Q, K), "scaled_scores(Q, K)")
        raw = Q @ K.T
        if got.shape == raw.shape and np.allclose(got, raw / d_k):
            raise Mismatch(f"for d_k={d_k} you divided by d_k; divide by its square root")
        if got.shape == raw.shape and np.allclose(got, raw):
            raise Mismatch(f"for d_k={d_k} the scores are not scaled: divide Q @ K.T by sqrt(d_k)")
        expect_close(got, raw / np.sqrt(d_k), f"scaled_scores(Q, K) for Q ({T_q}, {d_k}), K ({T_k}, {d_k})")


@exercise(
    notebook="04_scaling",
    hint="q·k is a sum of d_k independent products q_c * k_c. Each product has mean 0 and variance "
         "sigma_q**2 * sigma_k**2, and the variances of independent terms add up.",
    solution="""
        def score_variance(d_k, sigma_q, sigma_k):
            return d_k * sigma_q**2 * sigma_k**2
    """,
    wrong="""
        def score_variance(d_k, sigma_q, sigma_k):
            return d_k
    """,
)
def score_variance(answer):
    rng = _rng()
    n_pairs = 10_000
    for d_k, sigma_q, sigma_k in ((1, 1.0, 1.0), (64, 1.0, 1.0), (16, 2.0, 1.0), (256, 0.5, 3.0)):
        q = rng.normal(0, sigma_q, (n_pairs, d_k))
        k = rng.normal(0, sigma_k, (n_pairs, d_k))
        measured = float(np.var(np.sum(q * k, axis=-1)))  # the check measures what you predict
        predicted = _as_array(call(answer, d_k, sigma_q, sigma_k), "your prediction")
        if predicted.shape != ():
            raise Mismatch(f"return one number, got an array of shape {predicted.shape}")
        if not np.isclose(float(predicted), measured, rtol=0.1):
            raise Mismatch(f"for d_k={d_k}, sigma_q={sigma_q}, sigma_k={sigma_k} you predicted "
                           f"{float(predicted):.4g}, but {n_pairs} random pairs measure {measured:.4g}")


# --- end of 04_scaling ---


# ---------------------------------------------------------------------------------------
# 05_masking
# ---------------------------------------------------------------------------------------


def _masking_causal_reference(T_q, T_k):
    """Brute force: query i sits at absolute position i + (T_k - T_q) and sees keys up to it."""
    mask = np.zeros((T_q, T_k), dtype=bool)
    for i in range(T_q):
        for j in range(T_k):
            mask[i, j] = j <= i + (T_k - T_q)
    return mask


@exercise(
    notebook="05_masking",
    hint="Compare positions: query i sits at position i + (T_k - T_q) and may see key j when j is at most "
         "that position. np.arange(T_k)[None, :] <= (np.arange(T_q) + T_k - T_q)[:, None] is a bool (T_q, T_k) array.",
    solution="""
        def build_causal_mask(T_q, T_k):
            query_pos = np.arange(T_q)[:, None] + (T_k - T_q)  # (T_q, 1): the queries are the last T_q positions
            key_pos = np.arange(T_k)[None, :]  # (1, T_k)
            return key_pos <= query_pos  # (T_q, T_k)
    """,
    wrong="""
        def build_causal_mask(T_q, T_k):
            return np.tril(np.ones((T_q, T_k), dtype=bool))  # right only when T_q == T_k
    """,
)
def build_causal_mask(answer):
    for T_q, T_k in ((1, 1), (4, 4), (6, 6), (2, 5), (1, 6), (3, 4)):
        expect_equal(call(answer, T_q, T_k), _masking_causal_reference(T_q, T_k), f"build_causal_mask({T_q}, {T_k})")


def _masking_softmax_reference(scores, mask):
    """Row by row: softmax over the allowed keys only; a row with no allowed key stays zero."""
    allowed = np.broadcast_to(mask, scores.shape)
    out = np.zeros(scores.shape)
    for row in np.ndindex(scores.shape[:-1]):
        keep = allowed[row]
        if keep.any():
            e = np.exp(scores[row][keep] - scores[row][keep].max())
            out[row][keep] = e / e.sum()
    return out


@exercise(
    notebook="05_masking",
    hint="np.where(mask, scores, -np.inf), then a stable softmax over the last axis. A row where every key is "
         "masked has max -inf: shift it by 0 instead, and divide by 1 where the row sum is 0, so the row is zeros.",
    solution="""
        def masked_softmax(scores, mask):
            scores = np.where(mask, scores, -np.inf)
            row_max = scores.max(axis=-1, keepdims=True)
            row_max = np.where(np.isfinite(row_max), row_max, 0)  # a fully masked row: shift by 0, not -inf
            e = np.exp(scores - row_max)  # exp(-inf) = 0: masked keys get exactly 0
            total = e.sum(axis=-1, keepdims=True)
            return e / np.where(total > 0, total, 1)  # a fully masked row: 0 / 1 = 0, not 0 / 0
    """,
    wrong="""
        def masked_softmax(scores, mask):
            scores = np.where(mask, scores, -1e9)  # a finite fill: a fully masked row becomes uniform
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """,
)
def masked_softmax(answer):
    rng = _rng()
    scores = rng.normal(size=(4, 4)) * 2
    causal = np.tril(np.ones((4, 4), dtype=bool))
    expect_close(call(answer, scores, causal), _masking_softmax_reference(scores, causal),
                 "masked_softmax(scores, causal mask) for 4 tokens")
    expect_close(call(answer, scores * 500, causal), _masking_softmax_reference(scores * 500, causal),
                 "masked_softmax on scores near ±1000 (overflow?)")
    batch = rng.normal(size=(2, 3, 4))
    keys = (np.arange(4)[None, :] < np.array([3, 0])[:, None])[:, None, :]  # (2, 1, 4): sentence 1 is all padding
    expect_close(call(answer, batch, keys), _masking_softmax_reference(batch, keys),
                 "masked_softmax with a (2, 1, 4) padding mask (sentence 1 has no real token: its rows must be 0)")


# --- end of 05_masking ---

# ---------------------------------------------------------------------------------------
# 06_multi_head_attention
# ---------------------------------------------------------------------------------------


@exercise(
    notebook="06_multi_head_attention",
    hint="Head i owns columns i*d_head:(i+1)*d_head. Reshape the last axis into (n_heads, d_head), giving "
         "(..., T, h, d_head), then swap the T and h axes with np.swapaxes(X, -3, -2). A reshape alone mixes tokens.",
    solution="""
        def split_heads_batched(X, n_heads):
            *batch, T, d_model = X.shape
            X = X.reshape(*batch, T, n_heads, d_model // n_heads)  # (..., T, h, d_head)
            return np.swapaxes(X, -3, -2)  # (..., h, T, d_head)
    """,
    wrong="""
        def split_heads_batched(X, n_heads):
            *batch, T, d_model = X.shape
            return X.reshape(*batch, n_heads, T, d_model // n_heads)  # the right shape, the wrong numbers
    """,
)
def split_heads_batched(answer):
    rng = _rng()
    for shape, n_heads in (((6, 4), 2), ((2, 5, 12), 3), ((2, 3, 4, 8), 4), ((3, 6), 1)):
        X = rng.normal(size=shape)
        d_head = shape[-1] // n_heads
        expected = np.stack([X[..., i * d_head:(i + 1) * d_head] for i in range(n_heads)], axis=-3)
        expect_close(call(answer, X, n_heads), expected, f"split_heads_batched(X of shape {shape}, n_heads={n_heads})")


@exercise(
    notebook="06_multi_head_attention",
    hint="Undo the split in reverse order: swap the heads and tokens axes back with np.swapaxes(H, -3, -2), "
         "giving (..., T, h, d_head), then reshape the last two axes into one of width h * d_head.",
    solution="""
        def merge_heads_batched(H):
            *batch, n_heads, T, d_head = H.shape
            H = np.swapaxes(H, -3, -2)  # (..., T, h, d_head)
            return H.reshape(*batch, T, n_heads * d_head)  # (..., T, d_model)
    """,
    wrong="""
        def merge_heads_batched(H):
            *batch, n_heads, T, d_head = H.shape
            return H.reshape(*batch, T, n_heads * d_head)  # the right shape, the wrong numbers
    """,
)
def merge_heads_batched(answer):
    rng = _rng()
    for shape in ((2, 6, 2), (2, 3, 5, 4), (3, 4, 2, 2, 3), (1, 3, 6)):
        H = rng.normal(size=shape)
        expected = np.concatenate([H[..., i, :, :] for i in range(shape[-3])], axis=-1)
        expect_close(call(answer, H), expected, f"merge_heads_batched(H of shape {shape})")


def _multihead_reference(x, context, W_q, W_k, W_v, W_o, n_heads, mask):
    """A loop over heads on column slices: the definition, written as plainly as possible."""
    Q, K, V = x @ W_q, context @ W_k, context @ W_v
    d_head = Q.shape[-1] // n_heads
    heads = []
    for i in range(n_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        scores = Q[:, cols] @ K[:, cols].T / np.sqrt(d_head)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ V[:, cols])
    return np.concatenate(heads, axis=-1) @ W_o


@exercise(
    notebook="06_multi_head_attention",
    hint="Queries come from x, keys and values from context. Split Q, K, V into heads, scale each head's scores "
         "by 1/sqrt(d_head) (not d_model), mask with -inf, softmax over the keys, mix V, merge the heads, then @ W_o.",
    solution="""
        def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
            d_head = W_q.shape[1] // n_heads

            def split(M):  # (T, d_model) -> (h, T, d_head)
                return M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(x @ W_q), split(context @ W_k), split(context @ W_v)
            scores = np.einsum("hqd,hkd->hqk", Q, K) / np.sqrt(d_head)  # (h, T_q, T_k)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights = weights / weights.sum(axis=-1, keepdims=True)
            heads = np.einsum("hqk,hkd->hqd", weights, V)  # (h, T_q, d_head)
            return heads.transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o  # (T_q, d_model) @ (d_model, d_model)
    """,
    wrong="""
        def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
            d_model = W_q.shape[1]
            d_head = d_model // n_heads

            def split(M):
                return M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(x @ W_q), split(context @ W_k), split(context @ W_v)
            scores = np.einsum("hqd,hkd->hqk", Q, K) / np.sqrt(d_model)  # the full width, not d_head
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights = weights / weights.sum(axis=-1, keepdims=True)
            heads = np.einsum("hqk,hkd->hqd", weights, V)
            return heads.transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o
    """,
)
def multi_head_cross_attention(answer):
    rng = _rng()
    causal = np.arange(5)[None, :] <= np.arange(3)[:, None] + 2  # (3, 5): the last 3 of 5 positions
    for d_model, n_heads, mask in ((8, 2, None), (8, 2, causal), (12, 4, causal), (6, 1, None)):
        x, context = rng.normal(size=(3, d_model)), rng.normal(size=(5, d_model))
        W_q, W_k, W_v, W_o = (rng.normal(size=(d_model, d_model)) for _ in range(4))
        expected = _multihead_reference(x, context, W_q, W_k, W_v, W_o, n_heads, mask)
        got = call(answer, x, context, W_q, W_k, W_v, W_o, n_heads, mask)
        masked = "a (3, 5) causal mask" if mask is not None else "no mask"
        expect_close(got, expected, f"multi_head_cross_attention with d_model={d_model}, n_heads={n_heads}, {masked}")


# --- end of 06_multi_head_attention ---
