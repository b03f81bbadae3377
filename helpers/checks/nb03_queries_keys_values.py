"""The exercises of 03_queries_keys_values."""

from helpers.checks._core import Case, check_rng, exercise


@exercise(
    hint="Project X three times, once by each matrix, to get Q, K and V: a token is a row, so X comes first in each "
    "product. The scores compare every query with every key: Q times the transpose of K, one row per query.",
    hint2="Write the shapes down before the products: X is (T, d_model) and each W has d_model rows, so each "
    "projection keeps the T rows and changes the width. The scores must be (T, T), row i for query i; a "
    "(d_k, d_k) result compares dimensions. Return the raw scores, with no softmax and no √d_k (notebook "
    "04's subject), after Q, K and V.",
    solution="""
        def qkv_scores(X, W_q, W_k, W_v):
            Q = X @ W_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            K = X @ W_k  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            V = X @ W_v  # (T, d_model) @ (d_model, d_v) -> (T, d_v)
            scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
            return Q, K, V, scores
    """,
    mistakes=r"""
        transposed: `Q @ K.T` → `K @ Q.T`
            {what}: your scores are transposed, keys times queries. Row i must hold query i's scores against every key,
            so the queries come first in the product
        scaled: `Q @ K.T` → `Q @ K.T / np.sqrt(K.shape[-1])`
            {what}: your scores are divided by √d_k = √{d_k}. Scaling is notebook 04's subject; here return the plain
            dot products of the queries with the keys
        scaled: `Q @ K.T` → `Q @ K.T / np.sqrt(X.shape[-1])`
            {what}: your scores are divided by √d_model = √{d_model}. Scaling is notebook 04's subject; here return the
            plain dot products of the queries with the keys
        weights-not-scores:
            `return Q, K, V, scores` → `e = np.exp(scores)\n    return Q, K, V, e / e.sum(axis=-1, keepdims=True)`
            {what}: your scores are already weights (each row sums to 1). Return the raw scores, the dot products of the
            queries with the keys, before any softmax
        weights-not-scores: `Q @ K.T  #` → `np.exp(Q @ K.T / np.sqrt(K.shape[-1]))  #`
            `V, scores` → `V, scores / scores.sum(axis=-1, keepdims=True)`
        elementwise: `Q @ K.T` → `Q * K`
            {what}: your scores have shape ({T}, {d_k}): you multiplied Q and K entry by entry, which pairs each token
            only with itself. The scores pair every query with every key: a ({T}, {T}) table of dot products
        scores-of-x: `Q @ K.T` → `X @ X.T`
            {what}: your scores compare X with itself, as notebook 02 did. Here they compare the queries with the keys:
            query i's dot product with key j
        swapped-q-and-k: `Q = X @ W_q` → `Q = X @ W_k`, `K = X @ W_k` → `K = X @ W_q`
            {what}: your Q is X times W_k and your K is X times W_q, swapped. The queries come from W_q and the keys
            from W_k; swapped, entry (i, j) of the scores would be query j's score for key i
        tokens-as-columns: `X @ W_q` → `W_q.T @ X.T`, `X @ W_k` → `W_k.T @ X.T`, `X @ W_v` → `W_v.T @ X.T`
            `Q @ K.T` → `Q.T @ K`
            {what}: your Q has shape ({d_k}, {T}), one column per token. In this series tokens are rows: Q is X ({T},
            {d_model}) times W_q ({d_model}, {d_k}), X first, so Q has shape ({T}, {d_k}), row i for token i
        not-four-things: `return Q, K, V, scores` → `return scores`
            {what} returned one array of shape ({T}, {T}), the scores alone: return four things, in this order: Q, K, V
            and the scores
    """,
    returns=("Q", "K", "V", "the scores"),
)
def qkv_scores():
    rng = check_rng()
    T, d_model, d_k, d_v = 4, 5, 3, 2
    X = rng.normal(size=(T, d_model))
    W_q, W_k, W_v = rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_v))
    shapes = f"X ({T}, {d_model}), W_q and W_k ({d_model}, {d_k}), W_v ({d_model}, {d_v})"
    facts = {"T": T, "d_model": d_model, "d_k": d_k}
    yield Case(f"qkv_scores(X, W_q, W_k, W_v) for {shapes}", (X, W_q, W_k, W_v), facts=facts)


@exercise(
    hint="Follow the formula above the exercise: each entry of the result is its weight times (its own d_weight minus "
    "the row's average of the d_weights, weighted by that row's weights). That is one sum per row, over the last axis.",
    hint2="Check it on a row whose answer you know: if every d_weight in the row is the same number, the result is all "
    "zeros (adding one constant to every score changes no weight). The weighted average of a row's d_weights is one "
    "number per row, and it belongs to its own row only: for weights of shape (..., T) it needs the shape (..., 1).",
    solution="""
        def softmax_backward(d_weights, weights):
            inner = np.sum(d_weights * weights, axis=-1, keepdims=True)  # (..., T, 1)
            return weights * (d_weights - inner)  # (..., T, T)
    """,
    mistakes=r"""
        first-term-only: `(d_weights - inner)` → `d_weights`
            {what} is the weights times the d_weights, entry by entry: only the first term. Every weight of a row also
            moves when one score moves (the row sums to 1), so subtract the row's weighted average of the d_weights from
            each d_weight first
        wrong-axis: `axis=-1` → `axis=-2`
            {what}: you summed down each column (over the second-to-last axis). Each row is its own softmax, so sum
            along each row, over the last axis
        diagonal-only: `weights * (d_weights - inner)` → `weights * (1 - weights) * d_weights`
            {what}: you used w·(1 − w) times the d_weight, the diagonal of the softmax's Jacobian only (the sigmoid's
            derivative). Moving score i also changes every other weight j of the row, by −w_i·w_j, so the row's sum of
            w_j·g_j enters every entry
        unweighted-sum: `d_weights * weights, axis` → `d_weights, axis`
            {what}: the sum you subtract adds up the d_weights alone; weigh each by its weight, Σ_j w_j·g_j, the row's
            weighted average of the d_weights
        sums-as-a-row: `, keepdims=True` → ``
            {what}: the row sums came out with shape {rows}, the summed axis gone, so numpy, lining shapes up from the
            right, could not subtract them from the d_weights, shape {shape}. Keep the summed axis, shape {column}, so
            that each row's sum is subtracted along its own row
        sign-flipped: `(d_weights - inner)` → `(inner - d_weights)`
            {what} is the right answer with its sign flipped: each entry is w·(g − Σ_j w_j·g_j), the d_weight minus the
            row's weighted average, not the other way round
        roles-swapped: `weights * (d_weights - inner)` → `d_weights * (weights - inner)`
            {what}: the weights and the d_weights have swapped roles: each entry is the weight times (its d_weight minus
            the row's weighted average of the d_weights), w·(g − Σ_j w_j·g_j)
        weights-factor-missing: `weights * (d_weights - inner)` → `d_weights - inner`
            {what} is each d_weight minus the row's weighted average, without the factor in front: multiply that by the
            weight itself, w·(g − Σ_j w_j·g_j)
    """,
    forbid=("helpers.softmax_backward",),
)
def softmax_backward():
    from helpers.attention import softmax

    rng = check_rng()
    for shape in ((3, 4), (2, 3, 5)):
        weights = softmax(rng.normal(size=shape) * 2)  # (..., T), each row sums to 1
        facts = {"shape": shape, "rows": shape[:-1], "column": shape[:-1] + (1,)}
        what = f"softmax_backward(d_weights, weights) for weights of shape {shape}"
        yield Case(what, (rng.normal(size=shape), weights), facts=facts)
