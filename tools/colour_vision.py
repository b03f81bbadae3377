"""How far apart the workshop's categorical colours stay for a learner with a colour-vision deficiency.

    python tools/colour_vision.py

prints, for each palette (the sets of colours a figure shows together and a learner must tell apart), the smallest
colour distance between two of its colours under normal vision and under each simulated deficiency, and the pair
that gives it. `tests/test_palettes.py` holds every palette to a threshold.

The simulation is Machado, Oliveira and Fernandes (2009), "A Physiologically-based Model for Simulation of Color
Vision Deficiency", IEEE Transactions on Visualization and Computer Graphics 15(6): a 3 x 3 matrix per deficiency,
applied to linear (not gamma-encoded) sRGB; we use the matrices the paper tabulates for severity 1.0 (protanopia,
deuteranopia, tritanopia: one cone type missing). Achromatopsia (no colour at all) is simulated by the relative
luminance Y of ITU-R BT.709 / sRGB: each colour becomes the grey of the same luminance.

Distances are CIEDE2000 (Sharma, Wu and Dalal (2005), "The CIEDE2000 Color-Difference Formula: Implementation Notes,
Supplementary Test Data, and Mathematical Observations", Color Research and Application 30(1)), between CIELAB colours
(sRGB, D65 white); CIE76 (the plain Euclidean distance in CIELAB) is printed beside it for comparison.
"""

import sys
from pathlib import Path

import numpy as np

# Machado et al. (2009), the severity-1.0 rows of their table of matrices; each maps linear RGB to linear RGB
MACHADO_2009 = {
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}
CONDITIONS = ("normal", "protanopia", "deuteranopia", "tritanopia", "achromatopsia")
LUMINANCE = np.array([0.2126, 0.7152, 0.0722])  # WCAG 2's relative luminance from linear R, G, B (BT.709)
SRGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)  # linear sRGB -> CIE XYZ; its middle row is the luminance Y (LUMINANCE, to more digits)
WHITE_D65 = SRGB_TO_XYZ.sum(axis=1)  # (3,): the XYZ of sRGB white, (0.9505, 1, 1.0888)


def to_hex(rgb):
    """(n, 3) floats in [0, 1] -> n '#rrggbb' strings."""
    return ["#" + "".join(f"{round(v * 255):02x}" for v in color) for color in np.asarray(rgb, dtype=float)]


def hex_to_rgb(colors):
    """'#rrggbb' strings -> (n, 3) floats in [0, 1] (gamma-encoded sRGB)."""
    colors = [colors] if isinstance(colors, str) else list(colors)
    for c in colors:
        if not (isinstance(c, str) and len(c) == 7 and c.startswith("#")):
            raise ValueError(f"colors must be '#rrggbb' strings, got {c!r}")
    return np.array([[int(c[i : i + 2], 16) / 255 for i in (1, 3, 5)] for c in colors])


def to_linear(rgb):
    """Gamma-encoded sRGB in [0, 1] -> linear light (IEC 61966-2-1). Shapes: (..., 3) -> (..., 3)."""
    rgb = np.asarray(rgb, dtype=float)
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def to_srgb(linear):
    """Linear light -> gamma-encoded sRGB, clipped to [0, 1] (what a screen can show). Shapes: (..., 3) -> (..., 3)."""
    linear = np.clip(np.asarray(linear, dtype=float), 0.0, 1.0)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


def simulate(rgb, condition):
    """What a viewer with `condition` sees for sRGB colours `rgb`: Machado et al. (2009) in linear RGB.

    condition: one of CONDITIONS ("normal" returns the colours unchanged).
    Shapes: rgb (..., 3) floats in [0, 1] -> (..., 3) floats in [0, 1].
    """
    rgb = np.asarray(rgb, dtype=float)
    if rgb.shape[-1:] != (3,):
        raise ValueError(f"rgb must have shape (..., 3), got {rgb.shape}")
    if condition == "normal":
        return rgb.copy()
    linear = to_linear(rgb)
    if condition == "achromatopsia":
        return to_srgb(np.repeat((linear @ SRGB_TO_XYZ[1])[..., None], 3, axis=-1))
    if condition not in MACHADO_2009:
        raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")
    return to_srgb(linear @ MACHADO_2009[condition].T)


def relative_luminance(rgb):
    """WCAG 2 relative luminance of sRGB colours. Shapes: (..., 3) -> (...)."""
    return to_linear(rgb) @ LUMINANCE


def contrast_ratio(rgb_a, rgb_b):
    """WCAG 2 contrast ratio (L_light + 0.05) / (L_dark + 0.05), from 1 to 21. Shapes: (..., 3), (..., 3) -> (...)."""
    a, b = relative_luminance(rgb_a), relative_luminance(rgb_b)
    return (np.maximum(a, b) + 0.05) / (np.minimum(a, b) + 0.05)


def to_lab(rgb):
    """sRGB in [0, 1] -> CIELAB (L* 0..100) under D65. Shapes: (..., 3) -> (..., 3)."""
    xyz = to_linear(rgb) @ SRGB_TO_XYZ.T / WHITE_D65
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def delta_e_76(lab_a, lab_b):
    """CIE76 colour difference: the Euclidean distance in CIELAB. Shapes: (..., 3), (..., 3) -> (...)."""
    return np.linalg.norm(np.asarray(lab_a, dtype=float) - np.asarray(lab_b, dtype=float), axis=-1)


def delta_e_2000(lab_a, lab_b):
    """CIEDE2000 colour difference (k_L = k_C = k_H = 1), as written out by Sharma, Wu and Dalal (2005).

    Shapes: lab_a (..., 3), lab_b (..., 3) -> (...).
    """
    lab_a, lab_b = np.broadcast_arrays(np.asarray(lab_a, dtype=float), np.asarray(lab_b, dtype=float))
    L1, a1, b1 = np.moveaxis(lab_a, -1, 0)
    L2, a2, b2 = np.moveaxis(lab_b, -1, 0)
    C_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    G = 0.5 * (1 - np.sqrt(C_mean**7 / (C_mean**7 + 25.0**7)))
    a1p, a2p = (1 + G) * a1, (1 + G) * a2
    C1p, C2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360
    chroma_zero = C1p * C2p == 0
    dLp, dCp = L2 - L1, C2p - C1p
    dhp = h2p - h1p
    dhp = np.where(dhp > 180, dhp - 360, np.where(dhp < -180, dhp + 360, dhp))
    dhp = np.where(chroma_zero, 0.0, dhp)
    dHp = 2 * np.sqrt(C1p * C2p) * np.sin(np.radians(dhp) / 2)
    Lp_mean, Cp_mean = (L1 + L2) / 2, (C1p + C2p) / 2
    # hues exactly opposite (a gap of 180, as in Sharma et al.'s pair 14) take the first branch; the gap's last bits
    # differ between numpy versions (arctan2), so "exactly" is within 1e-9 degrees
    h_sum, h_gap = h1p + h2p, np.abs(h1p - h2p)
    hp_mean = np.where(h_gap <= 180 + 1e-9, h_sum / 2, np.where(h_sum < 360, (h_sum + 360) / 2, (h_sum - 360) / 2))
    hp_mean = np.where(chroma_zero, h_sum, hp_mean)
    T = (
        1
        - 0.17 * np.cos(np.radians(hp_mean - 30))
        + 0.24 * np.cos(np.radians(2 * hp_mean))
        + 0.32 * np.cos(np.radians(3 * hp_mean + 6))
        - 0.20 * np.cos(np.radians(4 * hp_mean - 63))
    )
    d_theta = 30 * np.exp(-(((hp_mean - 275) / 25) ** 2))
    R_C = 2 * np.sqrt(Cp_mean**7 / (Cp_mean**7 + 25.0**7))
    S_L = 1 + 0.015 * (Lp_mean - 50) ** 2 / np.sqrt(20 + (Lp_mean - 50) ** 2)
    S_C = 1 + 0.045 * Cp_mean
    S_H = 1 + 0.015 * Cp_mean * T
    R_T = -np.sin(np.radians(2 * d_theta)) * R_C
    return np.sqrt((dLp / S_L) ** 2 + (dCp / S_C) ** 2 + (dHp / S_H) ** 2 + R_T * (dCp / S_C) * (dHp / S_H))


METRICS = {"CIEDE2000": delta_e_2000, "CIE76": delta_e_76}


def distances(colors, condition, metric="CIEDE2000"):
    """Every pair's colour distance as seen under `condition`. colors: n '#rrggbb' strings -> (n, n) floats."""
    lab = to_lab(simulate(hex_to_rgb(colors), condition))
    return METRICS[metric](lab[:, None], lab[None, :])


def closest_pair(colors, condition, metric="CIEDE2000"):
    """The smallest distance between two of `colors` under `condition`, and the pair. -> (float, i, j) with i < j."""
    d = distances(colors, condition, metric)
    i, j = np.triu_indices(len(colors), 1)
    k = int(np.argmin(d[i, j]))
    return float(d[i[k], j[k]]), int(i[k]), int(j[k])


def palettes():
    """The sets of colours the workshop shows together, that a learner must tell apart. -> {name: (colours, names)}."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from helpers import head_views, html_plots

    tab10, heads, kinds = html_plots.TAB10, html_plots.HEAD_COLORS, tuple(head_views.KIND_COLORS.values())
    return {
        # line_chart_svg's curves: 6 at most (notebook 11's six variants), 3 in notebook 08; labelled_scatter's 5
        # groups (notebook 01) and arrows_2d's 4 arrows (01) take the first ones too
        "TAB10[:6], curves": (tab10[:6], [f"TAB10[{i}]" for i in range(6)]),
        "TAB10, all 10": (tab10, [f"TAB10[{i}]" for i in range(10)]),  # cycled past six curves (no figure, today)
        # notebook 09 draws all 12 heads of a layer at once as thin lines (layer_lines, the attention explorer)
        "HEAD_COLORS, 12 heads": (heads, [f"head {h}" for h in range(12)]),
        # ... and each dash of them (head h's line dashed by h % 3, the second cue: only these differ by colour alone)
        **{
            f"HEAD_COLORS, dash {dash}": (heads[dash::3], [f"head {h}" for h in range(dash, 12, 3)])
            for dash in range(3)
        },
        # kinds_grid: 7 kinds as filled cells with a number written on each
        "KIND_COLORS, 7 kinds": (kinds, list(head_views.KIND_COLORS)),
    }


def table():
    """Each palette's smallest distance under each condition, and the pair that gives it: lines of text."""
    lines = [
        "smallest colour distance between two colours of a palette: CIEDE2000 (CIE76 in brackets)",
        f"{'':<22}" + "".join(f"{c:>15}" for c in CONDITIONS),
    ]
    for name, (colors, names) in palettes().items():
        cells = [f"{closest_pair(colors, c)[0]:.1f} ({closest_pair(colors, c, 'CIE76')[0]:.1f})" for c in CONDITIONS]
        lines.append(f"{name:<22}" + "".join(f"{x:>15}" for x in cells))
        for condition in CONDITIONS:
            _, i, j = closest_pair(colors, condition)
            lines.append(f"{'':<22}closest under {condition}: {names[i]} {colors[i]}, {names[j]} {colors[j]}")
    return lines


def main():
    print("\n".join(table()))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from helpers import head_views

    ratios = contrast_ratio(hex_to_rgb(list(head_views.KIND_COLORS.values())), np.zeros(3))
    worst = list(head_views.KIND_COLORS)[int(np.argmin(ratios))]
    print(f"black numbers on the kind colours: WCAG contrast {ratios.min():.2f} to 1 at the least ({worst})")
    for name, (colors, _) in list(palettes().items())[1:3]:
        ratios = contrast_ratio(hex_to_rgb(colors), np.ones(3))
        print(f"{name} on white: WCAG contrast {ratios.min():.2f} to 1 at the least ({colors[int(np.argmin(ratios))]})")


if __name__ == "__main__":
    main()
