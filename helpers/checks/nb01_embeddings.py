"""The exercises of 01_embeddings."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close, expect_equal
from helpers.checks._mistakes import broadcast_clash


@exercise(
    notebook="01_embeddings",
    hint="The cosine is the dot product of a and b divided by the product of their two lengths; "
    "np.linalg.norm gives a vector's length.",
    hint2=(
        "Try it on two vectors you can do in your head: a = (3, 4) and b = (6, 8) point the same way, so the "
        "cosine must be exactly 1, and −1 with b = (−6, −8). If you get 25 or 0.04 instead, look at what you "
        "divide by: the product of the two lengths, one number."
    ),
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
        "squared-lengths": """
            def cosine_similarity(a, b):
                return a @ b / (np.sum(a * a) * np.sum(b * b))
        """,
        "sum-of-lengths": """
            def cosine_similarity(a, b):
                return a @ b / (np.linalg.norm(a) + np.linalg.norm(b))
        """,
        "absolute-value": """
            def cosine_similarity(a, b):
                return abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))
        """,
        "distance": """
            def cosine_similarity(a, b):
                return 1 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        """,
        "angle": """
            def cosine_similarity(a, b):
                return np.arccos(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        """,
    },
    forbid=("helpers.embeddings.cosine_similarity",),
)
def cosine_similarity(answer):
    rng = check_rng()
    for d in (2, 5, 384):
        a, b = rng.normal(size=d), rng.normal(size=d) * 3
        what = f"cosine_similarity(a, b) for a and b of shape ({d},)"
        got = as_array(call(answer, a, b), what)
        length_a, length_b = np.linalg.norm(a), np.linalg.norm(b)
        if got.shape == (d,) and np.allclose(got.sum(), a @ b / (length_a * length_b)):
            raise Mismatch(
                f"{what} has shape ({d},), one number per dimension: you multiplied a and b entry by "
                "entry; the dot product also adds those products up into one number",
                "elementwise",
            )
        if got.shape == () and np.isclose(got, a @ b):
            raise Mismatch(
                f"{what}: you returned the dot product, {a @ b:.4g}; the cosine divides it by both "
                "lengths, so it lies in [-1, 1]",
                "dot-product",
            )
        if got.shape == () and np.isclose(got, a @ b / length_a * length_b):
            raise Mismatch(
                f"{what}: you divided by the length of a, then multiplied by the length of b. Division "
                "and multiplication run from left to right: divide by the product of the two lengths, "
                "in brackets",
                "no-brackets",
            )
        if got.shape == () and np.isclose(got, a @ b / (length_a * length_b) ** 2):
            raise Mismatch(
                f"{what}: you divided by the squared lengths, a·a times b·b. A vector's length is the "
                "square root of its dot product with itself, √(a·a)",
                "squared-lengths",
            )
        for length, which in ((length_a, "a"), (length_b, "b")):
            if got.shape == () and np.isclose(got, a @ b / length):
                raise Mismatch(
                    f"{what}: you divided the dot product by the length of {which} only; the cosine "
                    "divides it by both lengths, |a| times |b|",
                    "one-length",
                )
        cosine = a @ b / (length_a * length_b)
        if got.shape == () and not np.iscomplexobj(got):
            _name_what_else_came_back(float(got), cosine, a @ b / (length_a + length_b), what)
        expect_close(got, cosine, what)


def _name_what_else_came_back(got, cosine, over_the_sum, what):
    """Raise Mismatch when the number `got` is a relative of the cosine: |cos|, 1 − cos, the angle, a·b/(|a| + |b|)."""
    if np.isclose(got, over_the_sum) and not np.isclose(over_the_sum, cosine):
        raise Mismatch(
            f"{what}: you divided the dot product by the sum of the two lengths, |a| + |b|; the cosine "
            "divides it by their product, |a| times |b|",
            "sum-of-lengths",
        )
    if cosine < -1e-3 and np.isclose(got, -cosine):
        raise Mismatch(
            f"{what}: you returned {got:.4g}, the size of the cosine without its sign. Vectors pointing "
            "apart have a negative cosine, down to −1 for opposite directions: keep the sign",
            "absolute-value",
        )
    if np.isclose(got, 1 - cosine) and not np.isclose(1 - cosine, cosine):
        raise Mismatch(
            f"{what}: you returned 1 minus the cosine, the cosine distance ({got:.4g}), which is 0 for "
            "vectors pointing the same way; the exercise asks for the cosine itself, which is 1 for them",
            "distance",
        )
    angle = float(np.arccos(np.clip(cosine, -1, 1)))
    if np.isclose(got, angle) or np.isclose(got, np.degrees(angle)):
        unit = "radians" if np.isclose(got, angle) else "degrees"
        raise Mismatch(
            f"{what}: you returned the angle between a and b, {got:.4g} {unit}; the exercise asks for "
            "its cosine, which the dot product over the two lengths gives without any angle",
            "angle",
        )


@exercise(
    notebook="01_embeddings",
    hint="Compute the cosine of v with every row of the table at once, then find the rows with the k largest "
    "cosines, best first. np.argsort gives the order of the rows.",
    hint2=(
        "Check the shapes on the way: the cosines of v with the table are one number per row, shape (n,), and"
        " the answer is k row numbers, best first. np.argsort puts the smallest first, and you want the "
        "largest. If v is itself a row of the table, that row must come out first, with cosine 1."
    ),
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
        "lengths-as-a-column": """
            def nearest_neighbours(v, table, k):
                cosines = table @ v / (np.linalg.norm(table, axis=1, keepdims=True) * np.linalg.norm(v))
                return np.argsort(-cosines)[:k]
        """,
        "column-lengths": """
            def nearest_neighbours(v, table, k):
                cosines = table @ v / (np.linalg.norm(table, axis=0) * np.linalg.norm(v))
                return np.argsort(-cosines)[:k]
        """,
        "rows-not-numbers": """
            def nearest_neighbours(v, table, k):
                cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
                return table[np.argsort(-cosines)[:k]]
        """,
    },
)
def nearest_neighbours(answer):
    rng = check_rng()
    # rows of very different lengths, so ranking by dot product and by cosine disagree
    n, d = 60, 8
    table = rng.normal(size=(n, d)) * rng.uniform(0.2, 5.0, size=(n, 1))
    for k in (5, 1):
        v = rng.normal(size=d)
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        expected = np.argsort(-cosines)[:k]
        what = f"nearest_neighbours(v, table, k={k}) for a table of shape ({n}, {d}) and v of shape ({d},)"
        try:
            raw = as_array(call(answer, v, table, k), what)
        except ValueError as exc:
            clash = broadcast_clash(exc)
            if clash in ({(n,), (d,)}, {(n,), (1, d)}):  # the column lengths, their axis kept or not
                lengths = (1, d) if (1, d) in clash else (d,)
                raise Mismatch(
                    f"{what}: your {n} dot products, shape ({n},), met {d} lengths, shape {lengths}: those "
                    f"are the lengths of the table's {d} columns. Each row needs its own length, {n} "
                    "of them, measured along the rows",
                    "column-lengths",
                ) from None
            raise
        if raw.ndim == 2 and raw.shape[-1] == n:
            raise Mismatch(
                f"{what} has shape {raw.shape}, not {k} row numbers: the row lengths, kept as a column "
                f"of shape ({n}, 1), met the {n} dot products, shape ({n},), and made a ({n}, {n}) table "
                f"of every length with every dot product. Divide the {n} dot products by {n} lengths of "
                f"the same shape, ({n},), one per row",
                "lengths-as-a-column",
            )
        got = raw.reshape(-1) if raw.shape in ((k, 1), (1, k)) else raw  # a column or a row of k numbers is fine
        if got.shape == (k, d) and np.allclose(got, table[expected]):
            raise Mismatch(
                f"{what} returned the {k} most similar rows themselves, shape ({k}, {d}); return their "
                f"numbers in the table, {k} row indices, best first",
                "rows-not-numbers",
            )
        if got.shape == expected.shape and np.allclose(got, np.sort(cosines)[::-1][:k]):
            raise Mismatch(
                f"{what} returned the {k} largest cosines themselves; return the numbers of their rows "
                "in the table, best first",
                "values-not-rows",
            )
        if got.shape == expected.shape and not np.array_equal(got, expected):
            if set(got.tolist()) == set(expected.tolist()):
                raise Mismatch(
                    f"{what} has the right rows in the wrong order: put the most similar first "
                    "(np.argsort sorts from smallest to largest)",
                    "wrong-order",
                )
            if k > 1 and set(got.tolist()) == set(np.argsort(cosines)[:k].tolist()):
                raise Mismatch(
                    f"{what} gave the least similar rows: np.argsort sorts from smallest to largest, so "
                    "sort the negated cosines to get the largest first",
                    "least-similar",
                )
            if np.array_equal(got, np.argsort(-(table @ v))[:k]):
                raise Mismatch(
                    f"{what} ranks the rows as their dot products with v do, so long rows win: divide "
                    "each row's dot product by that row's own length (dividing by one length for the "
                    "whole table does not change the order)",
                    "dot-product",
                )
        if got.dtype.kind == "f" and got.shape == expected.shape and np.array_equal(got, expected):
            raise Mismatch(
                f"{what} holds the right row numbers, but as floats (dtype {got.dtype}); a float cannot "
                "index the table: keep them whole numbers, as the sort gives them",
                "not-an-array",
            )
        expect_equal(got, expected, f"{what} (row indices, best first)")
