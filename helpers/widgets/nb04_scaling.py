"""Explorers of 04_scaling: d_k, temperature and the 1/sqrt(d_k) scale.

Taught in 04_scaling.
"""

import numpy as np

from helpers import html_plots
from helpers.attention import entropy, softmax
from helpers.widgets._explorer import explorer, ipw, show_html, temperature_slider

__all__ = ["SCALING_MAX_D_K", "scaling_weights", "scaling_explorer"]

SCALING_MAX_D_K = 1024


def scaling_weights(d_k, temperature=1.0, scaled=False, T=8, seed=0):
    """What scaling_explorer draws: one random query's softmax weights over T random keys.

    q and the keys have unit-variance entries, cut from one fixed draw of SCALING_MAX_D_K
    dimensions, so a larger d_k adds dimensions to the same vectors. The scores are
    q·k / temperature, also divided by sqrt(d_k) when `scaled`.
    Shapes: -> weights (T,), entropy float (nats).
    """
    if not 1 <= d_k <= SCALING_MAX_D_K:
        raise ValueError(f"d_k must be in [1, {SCALING_MAX_D_K}], got {d_k}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(SCALING_MAX_D_K)  # (max_d_k,)
    K = rng.standard_normal((T, SCALING_MAX_D_K))  # (T, max_d_k)
    scores = K[:, :d_k] @ q[:d_k]  # (T, d_k) @ (d_k,) -> (T,)
    if scaled:
        scores = scores / np.sqrt(d_k)
    weights = softmax(scores / temperature)
    return weights, float(entropy(weights))


def scaling_explorer(T=8, seed=0, d_k=64, temperature=1.0, scaled=False):
    """Sliders for d_k and temperature and a 'divide by √d_k' box: one query's weights as bars, and their entropy.

    Shapes: -> a widget (T keys). The numbers come from scaling_weights.
    """
    controls = {
        "d_k": ipw.SelectionSlider(options=[2**i for i in range(11)], value=d_k, description="d_k"),
        "temperature": temperature_slider(temperature, powers=(-1, 2)),
        "scaled": ipw.Checkbox(value=scaled, description="divide by √d_k"),
    }
    labels = [f"key {j}" for j in range(T)]

    def draw(d_k, temperature, scaled):
        weights, h = scaling_weights(d_k, temperature, scaled, T, seed)
        divisor = f"({temperature:.2f} · √{d_k})" if scaled else f"{temperature:.2f}"
        bars = html_plots.weight_bars(weights, labels, f"softmax(q·k / {divisor})")
        show_html(
            f"{bars}<div>largest weight {weights.max():.3f} · entropy {h:.3f} nats "
            f"(uniform: {np.log(T):.3f}, one-hot: 0)</div>"
        )

    return explorer(controls, draw)


def demos():
    """scaling_explorer: the extremes of d_k, the scale box and a high temperature."""
    box = scaling_explorer()
    yield "scaling_explorer (04)", box, [("d_k", 1), ("d_k", 1024), ("scaled", True), ("temperature", 10.0)]
