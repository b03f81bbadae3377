"""The pieces of a transformer layer that are not attention: the error function, GELU, LayerNorm.

Taught in 09_attention_in_a_real_model (the pretrained model's layers, helpers.pretrained).
The tiny transformer of notebook 08 (helpers.transformer) uses gelu and layer_norm too.
"""

import math

import numpy as np

from helpers._validate import as_float_array

__all__ = ["ERF_CLIP", "ERF_P", "ERF_Q", "rational_erf", "erf", "gelu", "layer_norm"]

# erf(x) ~ x P(x^2) / Q(x^2) on |x| <= ERF_CLIP, lowest degree first; fitted by benchmarks/fit_erf.py.
# Evaluated in float32: largest error against math.erf 3.4e-7 (tests/test_pretrained.py).
ERF_CLIP = 3.9  # erf(3.9) = 1 - 3.5e-8: beyond it float32 cannot tell erf from +-1
ERF_P = (1.12837923, 0.184829026, 0.0537056439, 0.00376157975, 0.000354750198, 4.02537353e-06, -9.72968905e-09)
ERF_Q = (1, 0.497133821, 0.113306545, 0.0151989842, 0.00125631155, 5.68808537e-05)
_MATH_ERF = np.frompyfunc(math.erf, 1, 1)


def _horner(coefficients, u):
    """c0 + c1 u + c2 u^2 + ..., evaluated in u's dtype, in place after the first product."""
    result = u * u.dtype.type(coefficients[-1])
    for c in coefficients[-2:0:-1]:
        result += u.dtype.type(c)
        result *= u
    result += u.dtype.type(coefficients[0])
    return result


def rational_erf(x, p, q, clip):
    """x P(x^2) / Q(x^2) with x clipped to [-clip, clip], in x's dtype. Shapes: (...) -> (...)."""
    x = np.clip(x, -clip, clip).astype(x.dtype, copy=False)
    u = x * x
    numerator = _horner(p, u)
    numerator *= x
    numerator /= _horner(q, u)
    return np.clip(numerator, -1, 1, out=numerator)  # the fit may pass 1 by a float32 step near the clip


def _blockwise(f, x, block=1 << 15):
    """f on every element of x, one block of `block` elements at a time (x's shape kept).

    An elementwise formula of 30 numpy operations makes 30 temporary arrays; in blocks of 32k
    elements they stay in the CPU's cache and are reused, where arrays the size of the model's
    (N, 1536) feed-forward layer are fresh memory every time (benchmarks/minilm_speed.py: the
    whole model runs about 1.2x faster).
    """
    if x.size <= block:
        return f(x)
    flat = x.reshape(-1)  # (n,)
    out = np.empty_like(flat)
    for start in range(0, flat.size, block):
        out[start : start + block] = f(flat[start : start + block])
    return out.reshape(x.shape)


def _erf32(x):
    return rational_erf(x, ERF_P, ERF_Q, np.float32(ERF_CLIP))


def erf(x):
    """The error function, erf(x) = 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt.

    float32 (and narrower) input: a rational approximation, vectorised, max error 3.4e-7.
    float64 input: math.erf on every element (exact, about 100x slower).
    Shapes: (...) -> (...), same dtype.
    """
    x = as_float_array(x, "x")
    if x.dtype == np.float64:
        return _MATH_ERF(x).astype(np.float64)
    x32 = x.astype(np.float32, copy=False)  # float16 would lose the coefficients' digits
    return _blockwise(_erf32, x32).astype(x.dtype, copy=False)


def _gelu(x):
    phi = erf(x * x.dtype.type(1 / math.sqrt(2)))  # (...)
    phi += 1
    phi *= x
    phi *= x.dtype.type(0.5)
    return phi


def gelu(x):
    """The exact GELU, x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)) (not the tanh approximation).

    Shapes: (...) -> (...), same dtype.
    """
    return _blockwise(_gelu, as_float_array(x, "x"))


def layer_norm(x, gamma, beta, eps=1e-12):
    """Normalise each row to mean 0 and variance 1, then scale by gamma and shift by beta.

    Shapes: x (..., d), gamma (d,), beta (d,) -> (..., d).
    """
    centred = x - x.mean(axis=-1, keepdims=True)  # (..., d)
    variance = np.mean(centred * centred, axis=-1, keepdims=True)  # (..., 1)
    return centred / np.sqrt(variance + eps) * gamma + beta
