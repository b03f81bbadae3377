"""The categorical palettes stay apart under simulated colour-vision deficiency (tools/colour_vision.py).

The thresholds are CIEDE2000 distances (ΔE00):
- about 1 is a just noticeable difference between two large patches side by side: the scale the formula was
  fitted to (Sharma, Wu and Dalal 2005, "The CIEDE2000 Color-Difference Formula").
- CELL_MIN = 10 for filled cells (kinds_grid): "distinct at a glance". Colour-measurement papers often quote
  classes of ΔE: below 2 very small, 3-6 medium, 6-12 large, above 12 "a different colour"; 10 sits high in "large".
- LINE_MIN = 15 for thin lines, small dots and coloured text: the difference needed to tell two colours apart
  grows as the mark shrinks (Stone, Szafir and Setlur 2014, "An Engineering Model for Color Difference as a
  Function of Size"; Szafir 2017, "Modeling Color Difference for Visualization Design"); the factor 1.5 over
  CELL_MIN is our choice. For scale: Okabe and Ito's "Color Universal Design" palette, the usual colour-blind-safe
  choice, reaches 10.9 under the three dichromacies (by this tool).
- MANY_MIN = 11 for more than six thin lines at once: the 12 heads notebook 09 draws together, and TAB10 cycled past
  six curves (no figure does that today). No 12 line colours we found clear LINE_MIN under every deficiency with
  distinct hues and 3:1 contrast on white: max-min searches over the sRGB colours in steps of 1/30 reached 11 to 12
  with distinct hues (HEAD_COLORS came from one, at 11.3), 15 only with several near-identical muddy mauves
  and olives. So a figure that draws all heads at once dashes head h's line by h % 3 as well, and the heads of one
  dash clear LINE_MIN; MANY_MIN only keeps the colours from getting worse.
Achromatopsia (no colour at all) is printed by the tool, not tested: 12 greys cannot be told apart.
"""

import colour_vision as cv
import numpy as np
import pytest

from helpers import head_views, html_plots

DICHROMACIES = ("protanopia", "deuteranopia", "tritanopia")
TESTED = ("normal", *DICHROMACIES)
CELL_MIN, LINE_MIN, MANY_MIN = 10.0, 15.0, 11.0
WHITE, BLACK = np.ones(3), np.zeros(3)

# Sharma, Wu and Dalal (2005), Table 1: L1 a1 b1, L2 a2 b2, ΔE00 (all 34 pairs of their test data)
SHARMA_2005 = """
50.0000 2.6772 -79.7751 50.0000 0.0000 -82.7485 2.0425
50.0000 3.1571 -77.2803 50.0000 0.0000 -82.7485 2.8615
50.0000 2.8361 -74.0200 50.0000 0.0000 -82.7485 3.4412
50.0000 -1.3802 -84.2814 50.0000 0.0000 -82.7485 1.0000
50.0000 -1.1848 -84.8006 50.0000 0.0000 -82.7485 1.0000
50.0000 -0.9009 -85.5211 50.0000 0.0000 -82.7485 1.0000
50.0000 0.0000 0.0000 50.0000 -1.0000 2.0000 2.3669
50.0000 -1.0000 2.0000 50.0000 0.0000 0.0000 2.3669
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0009 7.1792
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0010 7.1792
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0011 7.2195
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0012 7.2195
50.0000 -0.0010 2.4900 50.0000 0.0009 -2.4900 4.8045
50.0000 -0.0010 2.4900 50.0000 0.0010 -2.4900 4.8045
50.0000 -0.0010 2.4900 50.0000 0.0011 -2.4900 4.7461
50.0000 2.5000 0.0000 50.0000 0.0000 -2.5000 4.3065
50.0000 2.5000 0.0000 73.0000 25.0000 -18.0000 27.1492
50.0000 2.5000 0.0000 61.0000 -5.0000 29.0000 22.8977
50.0000 2.5000 0.0000 56.0000 -27.0000 -3.0000 31.9030
50.0000 2.5000 0.0000 58.0000 24.0000 15.0000 19.4535
50.0000 2.5000 0.0000 50.0000 3.1736 0.5854 1.0000
50.0000 2.5000 0.0000 50.0000 3.2972 0.0000 1.0000
50.0000 2.5000 0.0000 50.0000 1.8634 0.5757 1.0000
50.0000 2.5000 0.0000 50.0000 3.2592 0.3350 1.0000
60.2574 -34.0099 36.2677 60.4626 -34.1751 39.4387 1.2644
63.0109 -31.0961 -5.8663 62.8187 -29.7946 -4.0864 1.2630
61.2901 3.7196 -5.3901 61.4292 2.2480 -4.9620 1.8731
35.0831 -44.1164 3.7933 35.0232 -40.0716 1.5901 1.8645
22.7233 20.0904 -46.6940 23.0331 14.9730 -42.5619 2.0373
36.4612 47.8580 18.3852 36.2715 50.5065 21.2231 1.4146
90.8027 -2.0831 1.4410 91.1528 -1.6435 0.0447 1.4441
90.9257 -0.5406 -0.9208 88.6381 -0.8985 -0.7239 1.5381
6.7747 -0.2908 -2.4247 5.8714 -0.0985 -2.2286 0.6377
2.0776 0.0795 -1.1350 0.9033 -0.0636 -0.5514 0.9082
"""


# --- the simulation and the colour difference, against known values -----------------------------------------------


@pytest.mark.parametrize("condition", cv.MACHADO_2009)
def test_each_machado_matrix_row_sums_to_one_so_white_grey_and_black_stay_put(condition):
    assert np.allclose(cv.MACHADO_2009[condition].sum(axis=1), 1.0, atol=2e-6)  # the paper's 6 decimals
    greys = np.array([BLACK, [0.25] * 3, [0.5] * 3, [0.8] * 3, WHITE])
    assert np.allclose(cv.simulate(greys, condition), greys, atol=1e-5)


def test_the_simulation_gives_the_values_of_an_independent_implementation():
    # colorspacious 1.1.2, cspace_convert(rgb, {"name": "sRGB1+CVD", "cvd_type": ..., "severity": 100}, "sRGB1"),
    # clipped to [0, 1] and rounded to 4 decimals: the same paper's matrices, applied in linear sRGB
    rgb = np.array([[1.0, 0.5, 0.0], [0.2, 0.6, 0.9]])  # an orange and a sky blue
    expected = {
        "protanopia": [[0.6481, 0.5683, 0.0], [0.4602, 0.6117, 0.9128]],
        "deuteranopia": [[0.7683, 0.6829, 0.0], [0.3604, 0.5477, 0.8943]],
        "tritanopia": [[1.0, 0.3823, 0.4272], [0.0, 0.6727, 0.7082]],
    }
    for condition, values in expected.items():
        assert np.allclose(cv.simulate(rgb, condition), values, atol=6e-5), condition
    assert np.array_equal(cv.simulate(rgb, "normal"), rgb)


def test_red_and_green_become_alike_for_the_red_green_deficiencies_only():
    red, green = cv.to_lab(cv.hex_to_rgb(["#d62728", "#2ca02c"]))  # matplotlib's tab:red and tab:green
    seen = {c: cv.distances(["#d62728", "#2ca02c"], c)[0, 1] for c in cv.CONDITIONS}
    assert seen["normal"] == pytest.approx(cv.delta_e_2000(red, green))
    assert seen["deuteranopia"] < 0.25 * seen["normal"] and seen["protanopia"] < 0.5 * seen["normal"]
    assert seen["tritanopia"] > 0.5 * seen["normal"]


def test_achromatopsia_keeps_only_the_lightness():
    rgb = cv.hex_to_rgb(["#1f77b4", "#ff7f0e", "#2ca02c"])
    lab, grey = cv.to_lab(rgb), cv.to_lab(cv.simulate(rgb, "achromatopsia"))
    assert np.allclose(grey[:, 0], lab[:, 0], atol=1e-6) and np.allclose(grey[:, 1:], 0, atol=1e-6)


def test_cielab_of_white_black_and_srgb_red():
    assert np.allclose(cv.to_lab([WHITE, BLACK]), [[100, 0, 0], [0, 0, 0]], atol=1e-4)
    assert np.allclose(cv.to_lab([1.0, 0.0, 0.0]), [53.2408, 80.0925, 67.2032], atol=1e-3)  # sRGB red under D65


def test_ciede2000_gives_sharma_wu_and_dalal_s_34_test_values_both_ways_round():
    table = np.array([[float(x) for x in line.split()] for line in SHARMA_2005.strip().splitlines()])
    assert table.shape == (34, 7)
    assert np.allclose(cv.delta_e_2000(table[:, 0:3], table[:, 3:6]), table[:, 6], atol=1e-4)
    assert np.allclose(cv.delta_e_2000(table[:, 3:6], table[:, 0:3]), table[:, 6], atol=1e-4)
    assert cv.delta_e_76([50, 0, 0], [53, 4, 0]) == pytest.approx(5.0)


def test_wcag_contrast_of_black_on_white_is_21_and_of_a_colour_on_itself_1():
    assert cv.contrast_ratio(BLACK, WHITE) == pytest.approx(21.0)
    assert cv.contrast_ratio(cv.hex_to_rgb("#767676")[0], WHITE) == pytest.approx(4.54, abs=0.01)  # AA's grey
    assert cv.contrast_ratio(cv.hex_to_rgb("#ff7f0e")[0], cv.hex_to_rgb("#ff7f0e")[0]) == pytest.approx(1.0)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="condition"):
        cv.simulate(WHITE, "colour-blind")
    with pytest.raises(ValueError, match=r"rgb must have shape \(\.\.\., 3\), got \(4,\)"):
        cv.simulate(np.ones(4), "protanopia")
    with pytest.raises(ValueError, match="colors must be '#rrggbb'"):
        cv.hex_to_rgb(["red"])


# --- the palettes --------------------------------------------------------------------------------------------------


def _closest(colors, names, condition):
    d, i, j = cv.closest_pair(colors, condition)
    return d, f"{names[i]} {colors[i]} and {names[j]} {colors[j]} are {d:.1f} apart under {condition}"


@pytest.mark.parametrize("condition", TESTED)
def test_the_first_six_line_colours_stay_apart_as_thin_lines(condition):
    # line_chart_svg's curves (six in notebook 11, three in 08), labelled_scatter's five groups (01), arrows_2d (01)
    d, where = _closest(html_plots.TAB10[:6], [f"TAB10[{i}]" for i in range(6)], condition)
    assert d >= LINE_MIN, where


@pytest.mark.parametrize("condition", TESTED)
def test_all_ten_line_colours_stay_as_far_apart_as_ten_can(condition):
    # line_chart_svg cycles through all ten past six curves
    d, where = _closest(html_plots.TAB10, [f"TAB10[{i}]" for i in range(10)], condition)
    assert d >= MANY_MIN, where


@pytest.mark.parametrize("condition", TESTED)
def test_the_twelve_head_colours_stay_as_far_apart_as_twelve_can(condition):
    d, where = _closest(html_plots.HEAD_COLORS, [f"head {h}" for h in range(12)], condition)
    assert d >= MANY_MIN, where


@pytest.mark.parametrize("condition", TESTED)
def test_heads_of_one_dash_stay_apart_as_thin_lines(condition):
    # the second cue: head h's line is dashed by h % 3, so only heads of one dash must differ by colour alone
    for dash in range(3):
        heads = range(dash, 12, 3)
        d, where = _closest([html_plots.HEAD_COLORS[h] for h in heads], [f"head {h}" for h in heads], condition)
        assert d >= LINE_MIN, where


@pytest.mark.parametrize("condition", TESTED)
def test_the_kind_colours_stay_apart_as_filled_cells(condition):
    d, where = _closest(tuple(head_views.KIND_COLORS.values()), list(head_views.KIND_COLORS), condition)
    assert d >= CELL_MIN, where


def test_line_colours_have_3_to_1_contrast_on_white():
    # WCAG 2.1 success criterion 1.4.11 (non-text contrast): a line a learner must see against the page
    for name, colors in (("TAB10", html_plots.TAB10), ("HEAD_COLORS", html_plots.HEAD_COLORS)):
        ratios = cv.contrast_ratio(cv.hex_to_rgb(colors), WHITE)
        assert ratios.min() >= 3.0, f"{name}[{ratios.argmin()}] {colors[ratios.argmin()]}: {ratios.min():.2f} to 1"


def test_black_numbers_on_every_kind_colour_pass_wcag_aa():
    # kinds_grid writes each head's number in black on its kind's colour: WCAG 2 AA asks 4.5 to 1 for text
    ratios = cv.contrast_ratio(cv.hex_to_rgb(list(head_views.KIND_COLORS.values())), BLACK)
    worst = list(head_views.KIND_COLORS)[int(ratios.argmin())]
    assert ratios.min() >= 4.5, f"black on {worst}: {ratios.min():.2f} to 1"


def test_the_named_colours_keep_their_hue():
    # prose and code call them blue, orange, green, red and purple: CIELAB hue angles of those names
    hues = {"BLUE": (240, 295), "ORANGE": (50, 75), "GREEN": (120, 170), "RED": (20, 45), "PURPLE": (285, 330)}
    for name, (low, high) in hues.items():
        _, a, b = cv.to_lab(cv.hex_to_rgb(getattr(html_plots, name))[0])
        hue = np.degrees(np.arctan2(b, a)) % 360
        assert low <= hue <= high and np.hypot(a, b) >= 30, f"{name} has hue {hue:.0f}°, chroma {np.hypot(a, b):.0f}"
    assert html_plots.TAB10[:5] == (
        html_plots.BLUE,
        html_plots.ORANGE,
        html_plots.GREEN,
        html_plots.RED,
        html_plots.PURPLE,
    )


def test_the_tool_prints_every_palette_under_every_condition(capsys):
    cv.main()
    out = capsys.readouterr().out
    for name in cv.palettes():
        assert out.count(name) == 1 + (name in ("TAB10, all 10", "HEAD_COLORS, 12 heads"))  # and contrast on white
    rows = out.splitlines()
    # a palette's row: its name in 22 characters, then one "distance (CIE76)" per condition
    numbers = [row for row in rows if len(row[22:].split()) == 10 and row[22:].replace("(", "").strip()[0].isdigit()]
    assert [row[:22].strip() for row in numbers] == list(cv.palettes())
    assert out.count("closest under deuteranopia") == len(cv.palettes())
    assert "black numbers on the kind colours" in out
