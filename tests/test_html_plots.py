"""The HTML pictures the explorers draw."""

import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import html_plots


def test_html_heatmap_has_one_cell_per_entry_and_escapes_labels():
    matrix = np.array([[0.0, 1.0, -np.inf], [0.5, 0.25, 2.0]])
    markup = html_plots.heatmap(matrix, ["<b>", "q"], ["k1", "k2", "&"], title="T<1>")
    assert markup.count("<td") == 6
    assert "&lt;b&gt;" in markup and "&amp;" in markup and "T&lt;1&gt;" in markup and "<b>" not in markup
    assert "−∞" in markup and "2.00" in markup and "0.25" in markup
    # the largest value gets the colour map's top colour, the smallest its bottom colour
    top, bottom = (matplotlib.colors.to_hex(plt.get_cmap("viridis")(x)) for x in (1.0, 0.0))
    assert re.search(rf"background:{top};color:\w+\">2\.00", markup)
    assert re.search(rf"background:{bottom};color:\w+\">0\.00", markup)


def test_html_heatmap_rejects_a_shape_mismatch():
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        html_plots.heatmap(np.ones((2, 3)), ["a", "b"], ["c", "d"])
