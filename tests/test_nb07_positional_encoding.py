"""What 07_positional_encoding adds: its exercises' targeted messages, and the position explorer driven by code.

(tests/test_checks.py feeds every check, these included, a right, a wrong, an untouched and crashing answers;
tests/test_widgets.py drives every explorer's demo.)
"""

import numpy as np
import pytest
from _answers import solution

from helpers import checks, sinusoidal_positional_encoding, widgets
from helpers.positional import apply_rotary


def verdict(name, answer, capsys):
    result = getattr(checks, name)(answer)
    return result, capsys.readouterr().out


# ---------------------------------------------------------------------------------------
# exercise 1: sinusoidal_table(positions, d_model)
# ---------------------------------------------------------------------------------------


def table_with(speed, first=np.sin, second=np.cos, layout="interleaved"):
    """A learner's table built with a given pair speed w(i, d) and functions, in a given layout."""

    def sinusoidal_table(positions, d_model):
        positions = np.asarray(positions, dtype=float)
        angles = positions[:, None] * speed(np.arange(d_model // 2), d_model)  # (T, d/2)
        if layout == "halves":
            return np.concatenate([first(angles), second(angles)], axis=1)
        table = np.zeros((len(positions), d_model))
        table[:, 0::2], table[:, 1::2] = first(angles), second(angles)
        return table

    return sinusoidal_table


RIGHT_SPEED = lambda i, d: 10000.0 ** (-2 * i / d)  # noqa: E731


def test_sinusoidal_table_solution_matches_the_helper_at_any_positions():
    table = solution("sinusoidal_table")
    np.testing.assert_allclose(table(np.arange(30), 12), sinusoidal_positional_encoding(30, 12), atol=1e-12)
    np.testing.assert_allclose(table(np.array([5, 2]), 12), sinusoidal_positional_encoding(6, 12)[[5, 2]], atol=1e-12)


@pytest.mark.parametrize(("answer", "message"), [
    (table_with(RIGHT_SPEED, np.cos, np.sin), "sines and cosines are swapped"),
    (table_with(RIGHT_SPEED, layout="halves"), "all the sines come first"),
    (table_with(lambda i, d: 10000.0 ** (-i / d)), "the exponent uses 2i"),
])
def test_sinusoidal_table_common_mistakes_get_their_own_message(answer, message, capsys):
    result, printed = verdict("sinusoidal_table", answer, capsys)
    assert result.status == checks.INCORRECT and message in printed, printed


def test_sinusoidal_table_cosine_column_with_its_own_speed(capsys):
    def sinusoidal_table(positions, d_model):
        columns = np.arange(d_model)
        angles = np.asarray(positions, dtype=float)[:, None] * 10000.0 ** (-columns / d_model)  # (T, d)
        return np.where(columns % 2 == 0, np.sin(angles), np.cos(angles))

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.status == checks.INCORRECT and "both columns of a pair turn at one speed" in printed


def test_sinusoidal_table_ignoring_the_positions(capsys):
    def sinusoidal_table(positions, d_model):
        return table_with(RIGHT_SPEED)(np.arange(len(positions)), d_model)  # rows 0..T-1 whatever was asked

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.status == checks.INCORRECT and "row t must encode position positions[t]" in printed


def test_sinusoidal_table_half_width(capsys):
    def sinusoidal_table(positions, d_model):
        return np.sin(np.asarray(positions, dtype=float)[:, None] * 10000.0 ** (-np.arange(0, d_model, 2) / d_model))

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.status == checks.INCORRECT and "return all d_model columns" in printed


# ---------------------------------------------------------------------------------------
# exercise 2: added_length(x_length, d_model), predicted then measured
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("prediction", "expected"), [
    (lambda x_length, d_model: x_length + np.sqrt(d_model / 2), "you added the two lengths"),
    (lambda x_length, d_model: np.sqrt(x_length**2 + d_model), "you predicted"),
    (lambda x_length, d_model: np.sqrt(d_model / 2), "you predicted"),
    (lambda x_length, d_model: np.array([1.0, 2.0]), "return one number"),
])
def test_added_length_wrong_predictions(prediction, expected, capsys):
    result, printed = verdict("added_length", prediction, capsys)
    assert result.status == checks.INCORRECT and expected in printed, printed


def test_added_length_accepts_a_prediction_within_the_measurement_noise(capsys):
    result, _ = verdict("added_length", lambda x_length, d_model: 1.01 * np.sqrt(x_length**2 + d_model / 2), capsys)
    assert result.status == checks.CORRECT


# ---------------------------------------------------------------------------------------
# exercise 3: rotate_pair(pair, position, theta)
# ---------------------------------------------------------------------------------------


def test_rotate_pair_the_workshops_own_rotation_is_not_an_answer(capsys):
    result, printed = verdict("rotate_pair", lambda pair, position, theta: apply_rotary(
        np.asarray(pair)[None], [position * theta])[0], capsys)
    assert result.status == checks.INCORRECT and "apply_rotary" in printed, printed


def test_sinusoidal_table_the_helper_is_not_an_answer(capsys):
    def sinusoidal_table(positions, d_model):
        return sinusoidal_positional_encoding(max(positions) + 1, d_model)[positions]

    result, printed = verdict("sinusoidal_table", sinusoidal_table, capsys)
    assert result.status == checks.INCORRECT and "sinusoidal_positional_encoding" in printed, printed


def test_rotate_pair_solution_is_apply_rotary_on_one_pair():
    rotate_pair = solution("rotate_pair")
    pair = np.array([0.3, -1.2])
    np.testing.assert_allclose(rotate_pair(pair, 4, 0.25), apply_rotary(pair[None], [1.0])[0], atol=1e-15)


def turn(pair, angle):
    a, b = pair
    return np.array([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)])


@pytest.mark.parametrize(("answer", "message"), [
    (lambda pair, position, theta: turn(pair, -position * theta), "clockwise"),
    (lambda pair, position, theta: turn(pair, theta), "position * theta"),
    (lambda pair, position, theta: np.asarray(pair), "differs"),
])
def test_rotate_pair_common_mistakes(answer, message, capsys):
    result, printed = verdict("rotate_pair", answer, capsys)
    assert result.status == checks.INCORRECT and message in printed, printed


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
    assert "PE[150]" in shown[-1] and "off the curve" in shown[-1]  # offset 150 > POSITION_MAX_OFFSET
    box.controls["band"].value = (0, 31)  # a wide band: the table shows its first 8 pairs
    assert "first 8 shown" in shown[-1] and ">15</th>" in shown[-1] and ">16</th>" not in shown[-1]
