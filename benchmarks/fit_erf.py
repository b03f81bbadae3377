"""Fit the rational erf that helpers.pretrained.erf uses, and print how accurate it is.

erf(x) = x * P(x^2) / Q(x^2) for |x| <= CLIP, and +-1 beyond (erf(3.9) = 1 - 3.5e-8, below
float32's spacing near 1). P has degree m and Q degree n in u = x^2, Q(0) = 1. The fit
minimises the largest relative error (a Lawson-weighted linear least squares); the table
then gives the error of the float32 evaluation against math.erf, which is what the model sees.

    python benchmarks/fit_erf.py            # the table and the coefficients of the chosen degrees
"""

import math

import numpy as np

CLIP = 3.9
CHOSEN = (6, 5)
_ERF = np.frompyfunc(math.erf, 1, 1)


def exact_erf(x):
    """math.erf on every element, in float64."""
    return _ERF(np.asarray(x, dtype=np.float64)).astype(np.float64)


def fit(m, n, clip=CLIP, n_points=4000, iterations=60):
    """Coefficients (p, q), lowest degree first, of the rational fit; and its largest relative error."""
    k = np.arange(n_points)
    x = clip * np.sin(np.pi / 2 * (k + 0.5) / n_points)  # nodes crowd towards the clip end
    u = x * x  # (N,)
    f = exact_erf(x) / x  # erf(x)/x, smooth and even
    weights, q_previous = np.ones_like(u), np.ones_like(u)
    for step in range(iterations):
        # linearised: P(u) - f (Q(u) - 1) = f, divided by f Q_prev(u) so the residual is a relative error
        A = np.hstack([u[:, None] ** np.arange(m + 1), -f[:, None] * u[:, None] ** np.arange(1, n + 1)])
        scale = weights / (f * q_previous)
        c, *_ = np.linalg.lstsq(A * scale[:, None], f * scale, rcond=None)
        p, q = c[: m + 1], np.concatenate([[1.0], c[m + 1 :]])
        q_previous = np.polynomial.polynomial.polyval(u, q)
        error = np.polynomial.polynomial.polyval(u, p) / q_previous / f - 1
        if step > 5:  # Lawson: weigh up the points where the error is largest, towards the minimax fit
            weights = weights * np.abs(error)
            weights /= weights.mean()
    return p, q, np.abs(error).max()


def float32_error(p, q, x):
    """Largest |erf32(x) - math.erf(x)| of the float32 evaluation over the float32 points x."""
    from helpers.layers import rational_erf

    got = rational_erf(x.astype(np.float32), p.astype(np.float32), q.astype(np.float32), CLIP)
    return np.abs(got.astype(np.float64) - exact_erf(x.astype(np.float32))).max()


def main():
    x = np.linspace(-8, 8, 400_001)
    print(
        f"erf(x) = x P(x^2)/Q(x^2) on |x| <= {CLIP}; float32 rounding of erf alone is "
        f"{np.abs(exact_erf(x).astype(np.float32) - exact_erf(x)).max():.1e}"
    )
    print(f"{'deg P':>5} {'deg Q':>5} {'fit rel. error':>15} {'float32 max abs error':>22}")
    for m, n in [(4, 4), (5, 4), (5, 5), (6, 4), (6, 5), (7, 5)]:
        p, q, error = fit(m, n)
        print(f"{m:5d} {n:5d} {error:15.1e} {float32_error(p, q, x):22.1e}")
    p, q, _ = fit(*CHOSEN)
    print(f"\ncoefficients for degrees {CHOSEN}, lowest first:")
    print("P =", [float(np.float32(c)) for c in p])
    print("Q =", [float(np.float32(c)) for c in q])


if __name__ == "__main__":
    main()
