"""The exercises of 01_embeddings."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close, expect_equal


@exercise(
    notebook="01_embeddings",
    hint="The cosine is the dot product of a and b divided by the product of their two lengths; "
         "np.linalg.norm gives a vector's length.",
    hint2="Compute three numbers: the dot product of a and b (one number, not one per dimension), the length of a "
          "and the length of b. The cosine is the first divided by the product of the other two: put that product "
          "in brackets, since division and multiplication run from left to right.",
    solution="""
        def cosine_similarity(a, b):
            return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
    """,
    mistakes={
        "dot-product": """
            def cosine_similarity(a, b):
                return a @ b
        """,
        "one-length": """
            def cosine_similarity(a, b):
                return a @ b / np.linalg.norm(a)
        """,
        "no-brackets": """
            def cosine_similarity(a, b):
                return a @ b / np.linalg.norm(a) * np.linalg.norm(b)
        """,
        "elementwise": """
            def cosine_similarity(a, b):
                return a * b / (np.linalg.norm(a) * np.linalg.norm(b))
        """,
    },
    forbid=("helpers.embeddings.cosine_similarity",),
)
def cosine_similarity(answer):
    rng = check_rng()
    for d in (2, 5, 384):
        a, b = rng.normal(size=d), rng.normal(size=d) * 3
        what = f"cosine_similarity(a, b) for two vectors of length d={d}"
        got = as_array(call(answer, a, b), what)
        length_a, length_b = np.linalg.norm(a), np.linalg.norm(b)
        if got.shape == (d,) and np.allclose(got.sum(), a @ b / (length_a * length_b)):
            raise Mismatch(f"{what} has shape ({d},), one number per dimension: you multiplied a and b entry by "
                           "entry; the dot product also adds those products up into one number", "elementwise")
        if got.shape == () and np.isclose(got, a @ b):
            raise Mismatch(f"{what}: you returned the dot product, {a @ b:.4g}; the cosine divides it by both "
                           "lengths, so it lies in [-1, 1]", "dot-product")
        if got.shape == () and np.isclose(got, a @ b / length_a * length_b):
            raise Mismatch(f"{what}: you divided by the length of a, then multiplied by the length of b. Division "
                           "and multiplication run from left to right: divide by the product of the two lengths, "
                           "in brackets", "no-brackets")
        for length, which in ((length_a, "a"), (length_b, "b")):
            if got.shape == () and np.isclose(got, a @ b / length):
                raise Mismatch(f"{what}: you divided by the length of {which} only; divide by both lengths",
                               "one-length")
        expect_close(got, a @ b / (length_a * length_b), what)


@exercise(
    notebook="01_embeddings",
    hint="Compute the cosine of v with every row of the table at once, then find the rows with the k largest "
         "cosines, best first. np.argsort gives the order of the rows.",
    hint2="The table (n, d) times v (d,) is n dot products, one per row; divide each by its row's length and by "
          "v's length (np.linalg.norm along the rows gives the n lengths). np.argsort sorts from smallest to "
          "largest: sort the negated cosines, and keep the first k row numbers.",
    solution="""
        def nearest_neighbours(v, table, k):
            cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))  # (n, d) @ (d,) -> (n,)
            return np.argsort(-cosines)[:k]
    """,
    mistakes={
        "dot-product": """
            def nearest_neighbours(v, table, k):
                return np.argsort(-(table @ v))[:k]
        """,
        "least-similar": """
            def nearest_neighbours(v, table, k):
                cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
                return np.argsort(cosines)[:k]
        """,
        "wrong-order": """
            def nearest_neighbours(v, table, k):
                cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
                return np.argsort(cosines)[-k:]
        """,
        "values-not-rows": """
            def nearest_neighbours(v, table, k):
                cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
                return -np.sort(-cosines)[:k]
        """,
    },
)
def nearest_neighbours(answer):
    rng = check_rng()
    # rows of very different lengths, so ranking by dot product and by cosine disagree
    table = rng.normal(size=(60, 8)) * rng.uniform(0.2, 5.0, size=(60, 1))
    for k in (5, 1):
        v = rng.normal(size=8)
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        expected = np.argsort(-cosines)[:k]
        what = f"nearest_neighbours(v, table, k={k}) for a table of 60 rows"
        got = as_array(call(answer, v, table, k), what).ravel()
        if got.shape == expected.shape and np.allclose(got, np.sort(cosines)[::-1][:k]):
            raise Mismatch(f"{what} returned the {k} largest cosines themselves; return the numbers of their rows "
                           "in the table, best first", "values-not-rows")
        if got.shape == expected.shape and not np.array_equal(got, expected):
            if set(got.tolist()) == set(expected.tolist()):
                raise Mismatch(f"{what} has the right rows in the wrong order: put the most similar first "
                               "(np.argsort sorts from smallest to largest)", "wrong-order")
            if k > 1 and np.array_equal(got, np.argsort(cosines)[:k]):
                raise Mismatch(f"{what} gave the least similar rows: np.argsort sorts from smallest to largest, so "
                               "sort the negated cosines to get the largest first", "least-similar")
            if np.array_equal(got, np.argsort(-(table @ v))[:k]):
                raise Mismatch(f"{what} ranks by the dot product, so long rows win: divide by the lengths (cosine)",
                               "dot-product")
        expect_equal(got, expected, f"{what} (row indices, best first)")
