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
)
def cosine_similarity(answer):
    rng = check_rng()
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
    rng = check_rng()
    # rows of very different lengths, so ranking by dot product and by cosine disagree
    table = rng.normal(size=(60, 8)) * rng.uniform(0.2, 5.0, size=(60, 1))
    for k in (5, 1):
        v = rng.normal(size=8)
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        expected = np.argsort(-cosines)[:k]
        got = as_array(call(answer, v, table, k), f"nearest_neighbours(v, table, k={k})").ravel()
        if got.shape == expected.shape and set(got.tolist()) == set(expected.tolist()):
            if not np.array_equal(got, expected):
                raise Mismatch(f"nearest_neighbours(v, table, k={k}) has the right rows in the wrong order: "
                               "put the most similar first")
        expect_equal(got, expected, f"nearest_neighbours(v, table, k={k}) (row indices, best first)")
