"""The exercises of 01_embeddings."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close, expect_equal


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
    forbid=("helpers.embeddings.cosine_similarity",),
)
def cosine_similarity(answer):
    rng = check_rng()
    for d in (2, 5, 384):
        a, b = rng.normal(size=d), rng.normal(size=d) * 3
        got = as_array(call(answer, a, b), f"cosine_similarity(a, b) for d={d}")
        if got.shape == () and np.isclose(got, a @ b):
            raise Mismatch(f"for d={d} you returned the dot product a @ b = {a @ b:.4g}; the cosine divides it by "
                           "both lengths, so it lies in [-1, 1]")
        for length, which in ((np.linalg.norm(a), "a"), (np.linalg.norm(b), "b")):
            if got.shape == () and np.isclose(got, a @ b / length):
                raise Mismatch(f"for d={d} you divided by the length of {which} only; divide by both lengths")
        expect_close(got, a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), f"cosine_similarity(a, b) for d={d}")


@exercise(
    notebook="01_embeddings",
    hint="Get all the cosines at once: table @ v divided by np.linalg.norm(table, axis=1) * np.linalg.norm(v). "
         "Then np.argsort(-cosines)[:k] gives the rows of the k largest, best first.",
    solution="""
        def nearest_neighbours(v, table, k):
            cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))  # (n, d) @ (d,) -> (n,)
            return np.argsort(-cosines)[:k]
    """,
    wrong="""
        def nearest_neighbours(v, table, k):
            return np.argsort(-(table @ v))[:k]
    """,
)
def nearest_neighbours(answer):
    rng = check_rng()
    # rows of very different lengths, so ranking by dot product and by cosine disagree
    table = rng.normal(size=(60, 8)) * rng.uniform(0.2, 5.0, size=(60, 1))
    for k in (5, 1):
        v = rng.normal(size=8)
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        expected = np.argsort(-cosines)[:k]
        what = f"nearest_neighbours(v, table, k={k})"
        got = as_array(call(answer, v, table, k), what).ravel()
        if got.shape == expected.shape and not np.array_equal(got, expected):
            if set(got.tolist()) == set(expected.tolist()):
                raise Mismatch(f"{what} has the right rows in the wrong order: put the most similar first "
                               "(np.argsort sorts ascending: sort -cosines)")
            if k > 1 and np.array_equal(got, np.argsort(cosines)[:k]):
                raise Mismatch(f"{what} gave the least similar rows: np.argsort sorts ascending, so sort -cosines "
                               "to get the largest cosines first")
            if np.array_equal(got, np.argsort(-(table @ v))[:k]):
                raise Mismatch(f"{what} ranks by the dot product, so long rows win: divide by the lengths (cosine)")
        expect_equal(got, expected, f"{what} (row indices, best first)")
