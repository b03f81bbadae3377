"""Explorers of 07_positional_encoding: two positions, a band of frequencies, and RoPE's rotation.

Taught in 07_positional_encoding.
"""

import html

import numpy as np

from helpers import html_plots
from helpers.positional import apply_rotary, rotary_angles, sinusoidal_positional_encoding
from helpers.widgets._explorer import WIDE_LABEL, explorer, ipw, show_html

__all__ = ["POSITION_MAX_OFFSET", "position_pair_summary", "position_explorer"]

POSITION_MAX_OFFSET = 200  # the offset curve runs over k = 0..POSITION_MAX_OFFSET, every offset of the sliders
_MAX_SHOWN_PAIRS = 8  # the encodings' table shows at most this many pairs of the band
_TEXT_INK = "#222"  # the arrows' labels: dark ink on the picture's own white background (see html_plots.CHART_STYLE)
_ARROW = np.array([1.0, 0.0])  # the 2-D pair RoPE turns in the picture: it starts pointing right


def position_pair_summary(d_model, p, q, band):
    """What position_explorer draws, for positions p, q and the sinusoidal pairs band[0]..band[1] (inclusive).

    Returns a dict: pairs (n,) pair numbers; columns (2n,) their columns 2i, 2i+1; pe_p, pe_q (2n,) the two
    encodings there; dot = pe_p . pe_q; offset_curve (POSITION_MAX_OFFSET + 1,) = PE[p] . PE[p + k] over the
    band for k = 0, 1, ... (the same for every p); angle_p, angle_q: the angles RoPE turns the band's first
    pair by at p and q; arrow_p, arrow_q (2,): the pair (1, 0) turned by them.
    """
    first, last = (int(b) for b in band)
    if not 0 <= first <= last < d_model // 2:
        raise ValueError(
            f"band must be (first, last) pair numbers with 0 <= first <= last < d_model/2 = {d_model // 2}, got {band}"
        )
    if p < 0 or q < 0:
        raise ValueError(f"positions must be >= 0, got p={p}, q={q}")
    pairs = np.arange(first, last + 1)  # (n,)
    columns = np.stack([2 * pairs, 2 * pairs + 1], axis=1).ravel()  # (2n,): 2i, 2i+1 for each pair
    PE = sinusoidal_positional_encoding(max(p, q) + 1, d_model)[:, columns]  # (max(p, q) + 1, 2n)
    from_zero = sinusoidal_positional_encoding(POSITION_MAX_OFFSET + 1, d_model)[:, columns]  # any p gives the same
    angles = rotary_angles(np.array([p, q]), d_model)[:, first]  # (2,): the first pair's angle at p and at q
    arrows = apply_rotary(np.tile(_ARROW, (2, 1)), angles)  # (2, 2): one pair per position, turned by its angle
    return {
        "pairs": pairs,
        "columns": columns,
        "pe_p": PE[p],
        "pe_q": PE[q],
        "dot": float(PE[p] @ PE[q]),
        "offset_curve": from_zero @ from_zero[0],
        "angle_p": float(angles[0]),
        "angle_q": float(angles[1]),
        "arrow_p": arrows[0],
        "arrow_q": arrows[1],
    }


def _offset_curve_svg(curve, k):
    """PE[p]·PE[p+k] against the offset k as an SVG chart, with a dot at this k when it is on the curve. -> str."""
    top = max(1.0, np.abs(curve).max())  # the dot product of a band of n pairs lies in [-n, n]
    points = np.stack([np.arange(len(curve)), curve], axis=1)  # (POSITION_MAX_OFFSET + 1, 2): (k, dot product)
    here = f"at k = {k} it is {curve[k]:.2f}" if k < len(curve) else f"k = {k} is off the curve"
    description = (
        f"Line chart of PE[p]·PE[p+k] against the offset k from 0 to {len(curve) - 1}: {curve[0]:.2f} at k = 0, "
        f"lowest {curve.min():.2f} at k = {int(np.argmin(curve))}; {here} (the dot)"
    )
    chart = html_plots.line_chart_svg(
        {"PE[p]·PE[p+k]": points},
        (0, len(curve) - 1),
        (-top, top),
        x_label="offset k",
        y_ticks=(-top, 0, top),
        dots=points[k : k + 1],
        colors=(html_plots.PURPLE,),
        legend=False,
        width=260,
        height=160,
        description=description,
    )
    return html_plots.titled(f"PE[p]·PE[p+k], k = 0..{len(curve) - 1}", chart)


def _arrows_svg(arrows, labels, title, size=170):
    """2-D vectors of length about 1 as SVG arrows from the centre, on a unit circle. -> str.

    Two arrows that (nearly) coincide get their labels one above the other, where they would print over each other.
    The picture is an image to a screen reader, named by each arrow's label and angle; it has its own background.
    """
    c, r = size / 2, size / 2 - 35  # room for the labels outside the circle
    colors = (html_plots.BLUE, html_plots.ORANGE)
    tips = np.asarray(arrows, dtype=float)  # (n, 2)
    close = len(tips) == 2 and np.linalg.norm(tips[0] - tips[1]) < 0.5  # labels about 30 px wide, 70 px out
    parts = [f'<circle cx="{c}" cy="{c}" r="{r}" fill="none" stroke="#bbb"/>']
    for i, ((a, b), label, color) in enumerate(zip(tips, labels, colors, strict=False)):
        tip_x, tip_y = c + a * r, c - b * r  # SVG's y axis points down
        at_a, at_b = tips.mean(axis=0) / max(np.linalg.norm(tips.mean(axis=0)), 1e-9) if close else (a, b)
        text_x, text_y = c + at_a * (r + 20), c - at_b * (r + 20) + 4 + ((i - 0.5) * 13 if close else 0)
        parts.append(
            f'<line x1="{c}" y1="{c}" x2="{tip_x:.1f}" y2="{tip_y:.1f}" stroke="{color}" stroke-width="3"/>'
            f'<circle cx="{tip_x:.1f}" cy="{tip_y:.1f}" r="4" fill="{color}"/>'
            f'<text x="{text_x:.1f}" y="{text_y:.1f}" fill="{_TEXT_INK}" text-anchor="middle">'
            f"{html.escape(label)}</text>"
        )
    angles = [np.degrees(np.arctan2(b, a)) for a, b in tips]
    description = f"{title}: arrows on a circle, " + ", ".join(
        f"{label} at {angle:.0f} degrees" for label, angle in zip(labels, angles, strict=False)
    )
    return html_plots.titled(
        title,
        f'<svg width="{size}" height="{size}" role="img" aria-label="{html.escape(description)}" '
        f'style="font:11px sans-serif;{html_plots.CHART_STYLE}"><title>{html.escape(description)}</title>'
        f"{''.join(parts)}</svg>",
    )


def position_explorer(d_model=64, p=10, q=13, band=(0, 3), max_position=200):
    """Two positions and a band of sinusoidal pairs: their encodings, the dot product against the offset,
    and RoPE's rotation of the band's first pair drawn as arrows (in HTML and SVG, so it redraws at once).

    Shapes: -> a widget; the numbers come from position_pair_summary.
    """
    style = WIDE_LABEL
    controls = {
        "p": ipw.IntSlider(value=p, min=0, max=max_position, description="position p", style=style),
        "q": ipw.IntSlider(value=q, min=0, max=max_position, description="position q", style=style),
        "band": ipw.IntRangeSlider(
            value=band, min=0, max=d_model // 2 - 1, description="pairs (fast → slow)", style=style
        ),
    }

    def draw(p, q, band):
        s = position_pair_summary(d_model, p, q, band)
        shown = slice(0, 2 * _MAX_SHOWN_PAIRS)  # a wide band: its first pairs only
        more = f", first {_MAX_SHOWN_PAIRS} shown" if len(s["pairs"]) > _MAX_SHOWN_PAIRS else ""
        table = html_plots.heatmap(
            np.stack([s["pe_p"][shown], s["pe_q"][shown]]),
            [f"PE[{p}]", f"PE[{q}]"],
            [str(c) for c in s["columns"][shown]],
            cmap="RdBu_r",
            vmin=-1,
            vmax=1,
            title=f"columns of pairs {band[0]}-{band[1]}{more}",
        )
        k = abs(q - p)
        curve = _offset_curve_svg(s["offset_curve"], k)
        turn = s["angle_q"] - s["angle_p"]
        on_circle = (turn + np.pi) % (2 * np.pi) - np.pi  # the same turn, in (-π, π]
        arrows = _arrows_svg([s["arrow_p"], s["arrow_q"]], [f"p={p}", f"q={q}"], f"RoPE, pair {band[0]}")
        words = (
            f"<div>dot product of the two encodings over the band: <b>{s['dot']:.3f}</b> "
            f"(offset |q − p| = {k}{'' if k <= POSITION_MAX_OFFSET else ', off the curve'}). "
            f"RoPE turns pair {band[0]} by {turn:+.2f} rad from p to q "
            f"({on_circle:+.2f} rad on the circle).</div>"
        )
        show_html(html_plots.side_by_side(table, curve, arrows) + words)  # they wrap onto two lines in a narrow window

    return explorer(controls, draw)


def demos():
    """position_explorer as in 07, with the moves its notebook suggests."""
    yield "position_explorer (07)", position_explorer(), [("q", 14), ("band", (24, 31)), ("p", 150), ("q", 200)]
