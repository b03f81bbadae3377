"""What 07_positional_encoding adds: its exercises' targeted messages, and the position explorer driven by code.

(tests/test_checks.py feeds every check, these included, a right answer, each registered mistake, an untouched
stub and crashing answers; tests/test_widgets.py drives every explorer's demo.)
"""

import numpy as np
import pytest
from _answers import define, solution
from _feedback import code_in

from helpers import checks, sinusoidal_positional_encoding, widgets
from helpers.checks import nb07_positional_encoding as nb07
from helpers.positional import apply_rotary


def verdict(name, answer, capsys):
    result = getattr(checks, name)(answer)
    return result, capsys.readouterr().out


def mistake(name, code):
    return define(checks.EXERCISES[name].mistakes[code], name)


def test_the_words_the_checks_assemble_have_no_code():
    """The parts of messages kept in tables (test_checks reads only the literal Mismatch texts)."""
    texts = list(nb07._PARTS.values()) + [says for _, says in nb07._LENGTH_MISTAKES.values()]
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
    np.testing.assert_allclose(nb07._table(positions.astype(float), 8, (), None),
                               sinusoidal_positional_encoding(101, 8)[positions], atol=1e-12)


@pytest.mark.parametrize(("code", "words"), [
    ("inverted-frequencies", "the pairs speed up instead of slowing down"),
    ("pair-index", "uses the pair number i where the pair's first column 2i belongs"),
    ("integer-division", "whole-number division"),
    ("per-column", "the two columns of a pair turn at one speed"),
    ("sin-cos-swapped", "sines and cosines are swapped"),
    ("sines-then-cosines", "all the sines come first"),
    ("ignores-positions", "row t encodes position t, the row number"),
    ("transposed", "one row per position and one column per dimension"),
    ("half-width", "one column per pair"),
    ("integer-table", "holds whole numbers"),
])
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


@pytest.mark.parametrize(("code", "words"), [
    ("added-lengths", "you added the two lengths"),
    ("no-square-root", "the length is its square root"),
    ("full-width", "its squared length is d_model/2"),
    ("unsquared-length", "square x's length too"),
    ("encoding-only", "the length of the encoding alone"),
])
def test_added_length_each_mistake_is_named_with_the_measurement(code, words, capsys):
    result, printed = verdict("added_length", mistake("added_length", code), capsys)
    assert result.mistake == code and words in printed and "Measured over 400 random vectors" in printed, printed


@pytest.mark.parametrize(("prediction", "code"), [
    (lambda x_length, d_model: 2 * np.sqrt(x_length**2 + d_model / 2), "wrong-values"),
    (lambda x_length, d_model: np.array([1.0, 2.0]), "wrong-shape"),
    (lambda x_length, d_model: 1 + 2j, "not-an-array"),
])
def test_added_length_other_wrong_predictions(prediction, code, capsys):
    result, printed = verdict("added_length", prediction, capsys)
    assert result.mistake == code, printed


def test_added_length_accepts_a_prediction_within_the_measurement_noise(capsys):
    result, _ = verdict("added_length", lambda x_length, d_model: 1.01 * np.sqrt(x_length**2 + d_model / 2), capsys)
    assert result.status == checks.CORRECT
    result, _ = verdict("added_length", lambda x_length, d_model: np.array([np.sqrt(x_length**2 + d_model / 2)]),
                        capsys)
    assert result.status == checks.CORRECT  # one number in an array of one is one number


# ---------------------------------------------------------------------------------------
# exercise 3: rotate_pair(pair, position, theta)
# ---------------------------------------------------------------------------------------


def test_rotate_pair_the_workshops_own_rotation_is_not_an_answer(capsys):
    result, printed = verdict("rotate_pair", lambda pair, position, theta: apply_rotary(
        np.asarray(pair)[None], [position * theta])[0], capsys)
    assert result.mistake == "forbidden" and "apply_rotary" in printed, printed


def test_rotate_pair_solution_is_apply_rotary_on_one_pair():
    rotate_pair = solution("rotate_pair")
    pair = np.array([0.3, -1.2])
    np.testing.assert_allclose(rotate_pair(pair, 4, 0.25), apply_rotary(pair[None], [1.0])[0], atol=1e-15)


@pytest.mark.parametrize(("code", "words"), [
    ("clockwise", "turned the pair clockwise"),
    ("theta-only", "the angle is the position times theta, here 0.7 rad"),
    ("degrees", "read the angle 1 as degrees"),
    ("coordinates-swapped", "the right two numbers in the wrong order"),
])
def test_rotate_pair_each_mistake_is_named_in_words(code, words, capsys):
    result, printed = verdict("rotate_pair", mistake("rotate_pair", code), capsys)
    assert result.mistake == code and words in printed, printed


def test_rotate_pair_returning_the_pair_unturned_gets_the_generic_message(capsys):
    result, printed = verdict("rotate_pair", lambda pair, position, theta: np.asarray(pair), capsys)
    assert result.mistake == "wrong-values" and "differs" in printed, printed


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
