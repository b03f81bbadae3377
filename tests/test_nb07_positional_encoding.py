"""What 07_positional_encoding adds: its exercises' targeted messages, and the position explorer driven by code.

(tests/test_checks.py feeds every check, these included, a right answer, each registered mistake, an untouched
stub and crashing answers; tests/test_widgets.py drives every explorer's demo.)
"""

import re

import numpy as np
import pytest
from _answers import define, solution
from _feedback import code_in

from helpers import checks, sinusoidal_positional_encoding, widgets
from helpers.checks import nb07_positional_encoding as nb07
from helpers.checks._reference import sinusoidal_loop
from helpers.positional import apply_rotary


def verdict(name, answer, capsys):
    result = getattr(checks, name)(answer)
    return result, capsys.readouterr().out


def mistake(name, code):
    return define(checks.EXERCISES[name].mistakes[code], name)


def test_the_words_the_checks_assemble_have_no_code():
    """The parts of messages kept in tables (test_checks reads only the literal Mismatch texts)."""
    texts = [*nb07._TURN_SAYS.values()]
    for text in texts:
        assert code_in(text) is None, f"{code_in(text)}: {text}"


# ---------------------------------------------------------------------------------------
# exercise 1: sinusoidal_table(positions, d_model)
# ---------------------------------------------------------------------------------------


def test_sinusoidal_table_solution_matches_the_helper_at_any_positions():
    table = solution("sinusoidal_table")
    np.testing.assert_allclose(table(np.arange(30), 12), sinusoidal_positional_encoding(30, 12), atol=1e-12)
    np.testing.assert_allclose(table(np.array([5, 2]), 12), sinusoidal_positional_encoding(6, 12)[[5, 2]], atol=1e-12)
    np.testing.assert_allclose(table(np.array([5.0, 2.0]), 12), sinusoidal_positional_encoding(6, 12)[[5, 2]])


def test_the_checks_own_table_is_the_helpers():
    """The check builds its expected table itself (it must not compare the helper with itself): the same numbers."""
    positions = np.array([0, 3, 7, 100, 2])
    np.testing.assert_allclose(
        sinusoidal_loop(positions, 8), sinusoidal_positional_encoding(101, 8)[positions], atol=1e-12
    )


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("inverted-frequencies", "the pairs speed up instead of slowing down"),
        ("pair-index", "uses the pair number i where the pair's first column 2i belongs"),
        ("integer-division", "whole-number division"),
        ("per-column", "the two columns of a pair turn at one speed"),
        ("sin-cos-swapped", "sines and cosines are swapped"),
        ("sines-then-cosines", "all the sines come first"),
        ("ignores-positions", "row t encodes position t, the row number"),
        ("integer-table", "holds whole numbers"),
        ("rounded-exponent", "rounded down to −1"),
        ("sines-twice", "the odd columns hold sines too"),
        ("stacked-pairs", "has shape (5, 4, 2): each pair's sine and cosine on an axis of their own"),
        ("transposed-angles", "your angles came out (4, 5), one row per pair"),
    ],
)
def test_sinusoidal_table_each_mistake_is_named_in_words(code, words, capsys):
    result, printed = verdict("sinusoidal_table", mistake("sinusoidal_table", code), capsys)
    assert result.mistake == code and words in printed, printed


def pair_index_table(as_float):
    """The pair-index mistake as learners write it: np.arange(d_model // 2) / d_model, ints or floats in."""

    def sinusoidal_table(positions, d_model):
        if as_float:
            positions = np.asarray(positions, dtype=float)
        i = np.arange(d_model // 2)
        angles = positions[:, None] / 10000 ** (i / d_model)
        table = np.zeros((len(positions), d_model))
        table[:, ::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
        return table

    return sinusoidal_table


@pytest.mark.parametrize("as_float", [False, True], ids=["int positions", "float positions"])
def test_sinusoidal_table_pair_index_is_named_whatever_the_positions_type(as_float, capsys):
    result, _ = verdict("sinusoidal_table", pair_index_table(as_float), capsys)
    assert result.mistake == "pair-index"


def test_sinusoidal_table_two_mistakes_are_both_named(capsys):
    def sinusoidal_table(positions, d_model):
        angles = np.outer(positions, 10000 ** (np.arange(d_model // 2) / d_model))  # i for 2i, and +
        return np.hstack([np.sin(angles), np.cos(angles)])  # and the halves layout

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.mistake == "pair-index", printed
    for words in ("pair number i", "speed up instead of slowing down", "all the sines come first"):
        assert words in printed, printed


def test_sinusoidal_table_the_helper_is_not_an_answer(capsys):
    def sinusoidal_table(positions, d_model):
        return sinusoidal_positional_encoding(int(max(positions)) + 1, d_model)[np.asarray(positions, dtype=int)]

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.mistake == "forbidden" and "sinusoidal_positional_encoding" in printed, printed


def test_sinusoidal_table_dividing_by_the_speed_is_named_as_inverted_frequencies(capsys):
    def sinusoidal_table(positions, d_model):
        angles = np.asarray(positions, dtype=float)[:, None] / 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
        table = np.zeros((len(positions), d_model))
        table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
        return table

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.mistake == "inverted-frequencies" and "or divided by the shrinking one" in printed, printed


@pytest.mark.parametrize("shape", [(8, 5), (5, 4)], ids=["the whole table transposed", "sines only"])
def test_sinusoidal_table_other_shapes_get_the_shape_named(shape, capsys):
    result, printed = verdict("sinusoidal_table", lambda positions, d_model: np.zeros(shape), capsys)
    assert result.mistake == "wrong-shape" and f"has shape {shape}, expected (5, 8)" in printed, printed


def test_sinusoidal_table_rotary_angles_is_not_an_answer(capsys):
    def sinusoidal_table(positions, d_model):
        from helpers.positional import rotary_angles

        angles = rotary_angles(positions, d_model)
        return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(len(positions), d_model)

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.mistake == "forbidden" and "rotary_angles" in printed, printed


def test_sinusoidal_table_another_base_gets_the_generic_message(capsys):
    def sinusoidal_table(positions, d_model):
        angles = np.asarray(positions, dtype=float)[:, None] * 1000.0 ** (-np.arange(0, d_model, 2) / d_model)
        table = np.zeros((len(positions), d_model))
        table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
        return table

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.mistake == "wrong-values" and "differs from the expected values at index" in printed


# ---------------------------------------------------------------------------------------
# exercise 2: added_length(x_length, d_model), predicted then measured
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("added-lengths", "you added the two lengths"),
        ("no-square-root", "that is the squared length; take its square root"),
        ("full-width", "its squared length is d_model/2"),
        ("unsquared-length", "you added x's length to the encoding's squared length"),
        ("encoding-only", "the encoding's length alone"),
        ("unit-encoding", "but a row has d_model/2 pairs"),
        ("pairs-squared", "so its length is √(d_model/2)"),
    ],
)
def test_added_length_each_mistake_is_named_with_the_measurement(code, words, capsys):
    result, printed = verdict("added_length", mistake("added_length", code), capsys)
    assert result.mistake == code and words in printed and "Measured over 400 random vectors" in printed, printed


@pytest.mark.parametrize(
    ("prediction", "code"),
    [
        (lambda x_length, d_model: 2 * np.sqrt(x_length**2 + d_model / 2), "wrong-values"),
        (lambda x_length, d_model: np.array([1.0, 2.0]), "wrong-shape"),
        (lambda x_length, d_model: 1 + 2j, "not-an-array"),
    ],
)
def test_added_length_other_wrong_predictions(prediction, code, capsys):
    result, printed = verdict("added_length", prediction, capsys)
    assert result.mistake == code, printed


def test_added_length_accepts_a_prediction_within_the_measurement_noise(capsys):
    result, _ = verdict("added_length", lambda x_length, d_model: 1.01 * np.sqrt(x_length**2 + d_model / 2), capsys)
    assert result.status == checks.CORRECT
    result, _ = verdict(
        "added_length", lambda x_length, d_model: np.array([np.sqrt(x_length**2 + d_model / 2)]), capsys
    )
    assert result.status == checks.CORRECT  # one number in an array of one is one number


# ---------------------------------------------------------------------------------------
# exercise 3: score_from_offset(q_pair, k_pair, offset, theta)
# ---------------------------------------------------------------------------------------


def test_score_from_offset_solution_is_the_rotary_score_at_any_positions():
    """The score from the offset alone equals apply_rotary's q at m dotted with its k at n, for any m."""
    score = solution("score_from_offset")
    q, k = np.array([0.3, -1.2]), np.array([2.0, 0.5])
    for m, n in ((0, 4), (7, 3), (1000, 1002)):
        rotated = apply_rotary(np.stack([q, k]), [m * 0.25, n * 0.25], base=10000)  # (2, 2): d = 2 turns by p
        assert score(q, k, n - m, 0.25) == pytest.approx(rotated[0] @ rotated[1], rel=1e-12)


def test_score_from_offset_the_workshops_rotation_is_not_an_answer(capsys):
    def score_from_offset(q_pair, k_pair, offset, theta):
        return float(q_pair @ apply_rotary(np.asarray(k_pair)[None], [offset * theta])[0])

    result, printed = verdict("score_from_offset", score_from_offset, capsys)
    assert result.mistake == "forbidden" and "apply_rotary" in printed, printed


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("wrong-direction", "that is the score at the opposite offset, -3"),
        ("unturned", "that is q·k, the score at offset 0"),
        ("in-place", "computed from its already-turned first coordinate"),
        ("not-a-rotation", "is not a rotation: it changes the key's length from 2.12 to 1.61"),
        ("cosines-off-diagonal", "a key (a, b) must stay (a, b)"),
    ],
)
def test_score_from_offset_each_mistake_is_named_in_words(code, words, capsys):
    result, printed = verdict("score_from_offset", mistake("score_from_offset", code), capsys)
    assert result.mistake == code and words in printed and "both turned, the score is -2.286" in printed, printed


def turned_key(signs, swapped=False):
    """A learner's score_from_offset whose turn of the key has these signs (and cosines off the diagonal)."""

    def score_from_offset(q_pair, k_pair, offset, theta):
        c, s = np.cos(offset * theta), np.sin(offset * theta)
        entries = (s, c, c, s) if swapped else (c, s, s, c)
        turn = (np.array(signs) * entries).reshape(2, 2)
        return float(q_pair @ turn @ k_pair)

    return score_from_offset


@pytest.mark.parametrize(
    ("signs", "swapped", "code", "words"),
    [
        ((1, 1, -1, 1), False, "wrong-direction", "opposite offset"),  # clockwise
        ((1, 1, 1, 1), False, "not-a-rotation", "changes the key's length"),
        ((1, -1, 1, -1), False, "not-a-rotation", "changes the key's length"),
        ((1, 1, 1, -1), False, "not-a-rotation", "mirrors the key"),
        ((1, -1, 1, 1), True, "cosines-off-diagonal", "sines and cosines in each other's places"),
        ((1, 1, 1, -1), True, "cosines-off-diagonal", "sines and cosines in each other's places"),  # rows swapped
        ((-1, 1, -1, -1), False, "scaled-by-a-constant", "with its sign flipped"),  # a rotation by the angle + π
    ],
)
def test_score_from_offset_every_sign_slip_is_named_by_what_the_turn_does(signs, swapped, code, words, capsys):
    result, printed = verdict("score_from_offset", turned_key(signs, swapped), capsys)
    assert result.mistake == code and words in printed, printed


@pytest.mark.parametrize("returned", ["the turned key", "the matrix"])
def test_score_from_offset_returning_an_array_is_told_the_score_is_one_number(returned, capsys):
    def score_from_offset(q_pair, k_pair, offset, theta):
        c, s = np.cos(offset * theta), np.sin(offset * theta)
        turn = np.array([[c, -s], [s, c]])
        return turn @ k_pair if returned == "the turned key" else turn

    result, printed = verdict("score_from_offset", score_from_offset, capsys)
    assert result.mistake == "wrong-shape" and "should be one real number" in printed, printed


def test_score_from_offset_other_correct_forms_pass(capsys):
    def turn(angle):
        return np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])

    for answer in (
        lambda q, k, offset, theta: (turn(-offset * theta) @ q) @ k,  # the query turned back instead
        lambda q, k, offset, theta: (turn(-offset * theta / 2) @ q) @ (turn(offset * theta / 2) @ k),
        lambda q, k, offset, theta: [np.float32(q @ turn(offset * theta) @ k)],
    ):
        result, printed = verdict("score_from_offset", answer, capsys)
        assert result.status == checks.CORRECT, printed


# ---------------------------------------------------------------------------------------
# the position explorer
# ---------------------------------------------------------------------------------------


def test_position_pair_summary_numbers():
    s = widgets.position_pair_summary(64, 10, 13, (0, 3))
    PE = sinusoidal_positional_encoding(14, 64)
    np.testing.assert_array_equal(s["pairs"], [0, 1, 2, 3])
    np.testing.assert_array_equal(s["columns"], np.arange(8))
    np.testing.assert_allclose(s["pe_p"], PE[10, :8])
    np.testing.assert_allclose(s["pe_q"], PE[13, :8])
    assert s["dot"] == pytest.approx(PE[10, :8] @ PE[13, :8])
    assert s["dot"] == pytest.approx(s["offset_curve"][3])  # only the offset counts
    assert s["offset_curve"][0] == pytest.approx(4)  # 4 pairs, each of length 1
    assert s["angle_p"] == pytest.approx(10) and s["angle_q"] == pytest.approx(13)  # pair 0: 1 rad per position
    np.testing.assert_allclose(s["arrow_q"], [np.cos(13), np.sin(13)])


def test_position_pair_summary_slow_band():
    s = widgets.position_pair_summary(64, 0, 150, (24, 31))
    np.testing.assert_array_equal(s["columns"][:2], [48, 49])
    assert s["dot"] > 0.9 * len(s["pairs"])  # the slow pairs barely turn in 150 positions
    assert s["angle_q"] == pytest.approx(150 * 10000 ** (-48 / 64))


@pytest.mark.parametrize("band", [(3, 1), (-1, 2), (0, 32)])
def test_position_pair_summary_bad_band(band):
    with pytest.raises(ValueError, match="band must be"):
        widgets.position_pair_summary(64, 1, 2, band)


def test_position_pair_summary_bad_position():
    with pytest.raises(ValueError, match="positions must be >= 0"):
        widgets.position_pair_summary(64, -1, 2, (0, 1))


def test_position_explorer_shows_what_the_summary_says(shown):
    box = widgets.position_explorer(d_model=64)
    assert len(shown) == 1 and "dot product of the two encodings over the band: <b>-1.433</b>" in shown[0]
    box.controls["band"].value = (24, 31)
    box.controls["q"].value = 150
    box.controls["p"].value = 0
    expected = widgets.position_pair_summary(64, 0, 150, (24, 31))
    assert len(shown) == 4
    assert f"<b>{expected['dot']:.3f}</b>" in shown[-1]
    assert f"by {expected['angle_q'] - expected['angle_p']:+.2f} rad from p to q" in shown[-1]
    assert "PE[150]" in shown[-1] and "off the curve" not in shown[-1]  # the curve covers every offset of the sliders
    box.controls["band"].value = (0, 31)  # a wide band: the table shows its first 8 pairs
    assert "first 8 shown" in shown[-1] and ">15</th>" in shown[-1] and ">16</th>" not in shown[-1]


def test_position_explorer_past_the_curve_says_so(shown):
    box = widgets.position_explorer(d_model=64, max_position=400)
    box.controls["q"].value = 300
    assert "(offset |q − p| = 290, off the curve)" in shown[-1]


def text_positions(markup):
    """The (x, y) of each SVG label, in the order drawn."""
    return [(float(x), float(y)) for x, y in re.findall(r'<text x="([-\d.]+)" y="([-\d.]+)" fill=', markup)]


def test_position_explorer_labels_of_arrows_that_coincide_do_not_overlap(shown):
    """p = q (or a slow pair that barely turns) draws both arrows on one spot: their labels go one above the other."""
    box = widgets.position_explorer(d_model=64)
    box.controls["q"].value = 10  # p = q = 10
    (x_p, y_p), (x_q, y_q) = text_positions(shown[-1])[-2:]
    assert x_p == x_q and abs(y_q - y_p) >= 12
    box.controls["q"].value = 13
    box.controls["band"].value = (24, 31)  # pair 24 turns by 0.03 rad in 3 positions
    (x_p, y_p), (x_q, y_q) = text_positions(shown[-1])[-2:]
    assert abs(y_q - y_p) >= 12
    box.controls["band"].value = (0, 3)  # pair 0 turns by 3 rad: each label at its own arrow
    (x_p, y_p), (x_q, y_q) = text_positions(shown[-1])[-2:]
    assert np.hypot(x_q - x_p, y_q - y_p) > 40
