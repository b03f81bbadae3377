"""The exercises of 01_embeddings."""

from helpers.checks._core import Case, check_rng, exercise
from helpers.checks._expect import as_array, expect_equal
from helpers.checks._families import other_order


@exercise(
    hint="The cosine is the dot product of a and b divided by the product of their two lengths; "
    "np.linalg.norm gives a vector's length.",
    hint2="Try it on two vectors you can do in your head: a = (3, 4) and b = (6, 8) point the same way, so the "
    "cosine must be exactly 1, and −1 with b = (−6, −8). If you get 25 or 0.04 instead, look at what you "
    "divide by: the product of the two lengths, one number.",
    solution="""
        def cosine_similarity(a, b):
            return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
    """,
    mistakes=r"""
        dot-product: ` / (np.linalg.norm(a) * np.linalg.norm(b))` → ``
            {what}: you returned the dot product, {got:.4g}; the cosine divides it by both lengths, so it lies in [-1,
            1]
        one-length: `(np.linalg.norm(a) * np.linalg.norm(b))` → `np.linalg.norm(a)`
            {what}: you divided the dot product by the length of a only; the cosine divides it by both lengths, |a|
            times |b|
        one-length: `(np.linalg.norm(a) * np.linalg.norm(b))` → `np.linalg.norm(b)`
            {what}: you divided the dot product by the length of b only; the cosine divides it by both lengths, |a|
            times |b|
        no-brackets: `(np.linalg.norm(a) * np.linalg.norm(b))` → `np.linalg.norm(a) * np.linalg.norm(b)`
            {what}: you divided by the length of a, then multiplied by the length of b. Division and multiplication run
            from left to right: divide by the product of the two lengths, in brackets
        elementwise: `a @ b` → `a * b`
            {what} has shape ({d},), one number per dimension: you multiplied a and b entry by entry; the dot product
            also adds those products up into one number
        squared-lengths: `(np.linalg.norm(a) * np.linalg.norm(b))` → `(np.sum(a * a) * np.sum(b * b))`
            {what}: you divided by the squared lengths, a·a times b·b. A vector's length is the square root of its dot
            product with itself, √(a·a)
        sum-of-lengths: ` * np.linalg.norm(b)` → ` + np.linalg.norm(b)`
            {what}: you divided the dot product by the sum of the two lengths, |a| + |b|; the cosine divides it by their
            product, |a| times |b|
        absolute-value: `return a @ b` → `return abs(a @ b)`
            {what}: you returned {got:.4g}, the size of the cosine without its sign. Vectors pointing apart have a
            negative cosine, down to −1 for opposite directions: keep the sign
        distance: `return ` → `return 1 - `
            {what}: you returned 1 minus the cosine, the cosine distance ({got:.4g}), which is 0 for vectors pointing
            the same way; the exercise asks for the cosine itself, which is 1 for them
        angle: `return ` → `return np.arccos(`, `norm(b))` → `norm(b)))`
            {what}: you returned the angle between a and b, {got:.4g} radians; the exercise asks for its cosine, which
            the dot product over the two lengths gives without any angle
        angle: `return ` → `return np.degrees(np.arccos(`, `norm(b))` → `norm(b))))`
            {what}: you returned the angle between a and b, {got:.4g} degrees; the exercise asks for its cosine, which
            the dot product over the two lengths gives without any angle
    """,
    forbid=("helpers.embeddings.cosine_similarity",),
)
def cosine_similarity():
    rng = check_rng()
    for d in (2, 5, 384):
        a, b = rng.normal(size=d), rng.normal(size=d) * 3
        yield Case(f"cosine_similarity(a, b) for a and b of shape ({d},)", (a, b), facts={"d": d})


def _ranks(got, what):
    """The learner's k row numbers: a column or a row of k numbers is read as k numbers."""
    got = as_array(got, what)
    return got.reshape(-1) if got.ndim == 2 and 1 in got.shape else got


@exercise(
    hint="Compute the cosine of v with every row of the table at once, then find the rows with the k largest "
    "cosines, best first. np.argsort gives the order of the rows.",
    hint2="Check the shapes on the way: the cosines of v with the table are one number per row, shape (n,), and"
    " the answer is k row numbers, best first. np.argsort puts the smallest first, and you want the "
    "largest. If v is itself a row of the table, that row must come out first, with cosine 1.",
    solution="""
        def nearest_neighbours(v, table, k):
            cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))  # (n, d) @ (d,) -> (n,)
            return np.argsort(-cosines)[:k]
    """,
    mistakes=r"""
        dot-product: `np.linalg.norm(table, axis=1) * ` → ``
            {what} ranks the rows as their dot products with v do, so long rows win: divide each row's dot product by
            that row's own length (dividing by one length for the whole table does not change the order)
        least-similar: `np.argsort(-cosines)[:k]` → `np.argsort(cosines)[:k]`
            {what} gave the least similar rows: np.argsort sorts from smallest to largest, so sort the negated cosines
            to get the largest first
        wrong-order: `np.argsort(-cosines)[:k]` → `np.argsort(cosines)[-k:]`
            {what} has the right rows in the wrong order: put the most similar first (np.argsort sorts from smallest to
            largest)
        values-not-rows: `np.argsort(-cosines)[:k]` → `-np.sort(-cosines)[:k]`
            {what} returned the {k} largest cosines themselves; return the numbers of their rows in the table, best
            first
        lengths-as-a-column: `axis=1)` → `axis=1, keepdims=True)`
            {what} has shape {got.shape}, not {k} row numbers: the row lengths, kept as a column of shape ({n}, 1), met
            the {n} dot products, shape ({n},), and made a ({n}, {n}) table of every length with every dot product.
            Divide the {n} dot products by {n} lengths of the same shape, ({n},), one per row
        column-lengths: `axis=1)` → `axis=0)`
            {what}: your {n} dot products, shape ({n},), met {d} lengths, shape ({d},): those are the lengths of the
            table's {d} columns. Each row needs its own length, {n} of them, measured along the rows
        column-lengths: `axis=1)` → `axis=0, keepdims=True)`
            {what}: your {n} dot products, shape ({n},), met {d} lengths, shape (1, {d}): those are the lengths of the
            table's {d} columns. Each row needs its own length, {n} of them, measured along the rows
        rows-not-numbers: `return np.argsort(-cosines)[:k]` → `return table[np.argsort(-cosines)[:k]]`
            {what} returned the {k} most similar rows themselves, shape ({k}, {d}); return their numbers in the table,
            {k} row indices, best first
    """,
    read=_ranks,
    compare=lambda got, expected, case: expect_equal(got, expected, f"{case.what} (row indices, best first)"),
    families=lambda got, expected, case: "wrong-order" if other_order(got, expected) else None,
)
def nearest_neighbours():
    rng = check_rng()
    # rows of very different lengths, so ranking by dot product and by cosine disagree
    n, d = 60, 8
    table = rng.normal(size=(n, d)) * rng.uniform(0.2, 5.0, size=(n, 1))
    for k in (5, 1):
        what = f"nearest_neighbours(v, table, k={k}) for a table of shape ({n}, {d}) and v of shape ({d},)"
        yield Case(what, (rng.normal(size=d), table, k), facts={"n": n, "d": d, "k": k})
