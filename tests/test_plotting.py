"""The matplotlib pictures: arrows, scatter, heatmaps and the per-head grid."""

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_hex

from helpers import html_plots, plotting


def test_arrows_2d_draws_one_arrow_and_label_per_vector():
    vectors = np.array([[3.0, 1.0], [-1.0, 2.0], [0.5, -2.0]])
    ax = plotting.arrows_2d(vectors, ["a", "b", "c"], title="t")
    arrows = [child for child in ax.get_children() if isinstance(child, matplotlib.text.Annotation)]
    assert len(arrows) == 3
    assert sorted(text.get_text().strip() for text in ax.texts if text.get_text().strip()) == ["a", "b", "c"]
    left, right = ax.get_xlim()
    assert left < -1.0 and right > 3.0  # every tip is inside the axes


def test_arrows_2d_and_scatter_reject_bad_input():
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        plotting.arrows_2d(np.ones((3, 3)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="labels has 2 entries"):
        plotting.arrows_2d(np.ones((3, 2)), ["a", "b"])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        plotting.labelled_scatter(np.ones(4), ["a"] * 4)
    with pytest.raises(ValueError, match="one entry per point"):
        plotting.labelled_scatter(np.ones((4, 2)), ["a"] * 4, groups=["g"] * 3)


def test_labelled_scatter_colours_by_group_in_input_order():
    points = np.arange(10.0).reshape(5, 2)
    with matplotlib.rc_context({"axes.prop_cycle": matplotlib.cycler(color=["black"])}):  # the palette, not rc's
        ax = plotting.labelled_scatter(points, list("abcde"), ["x", "y", "x", "z", "y"])
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["x", "y", "z"]
    assert sorted(t.get_text() for t in ax.texts) == list("abcde")
    assert sum(len(collection.get_offsets()) for collection in ax.collections) == 5
    dots = [to_hex(collection.get_facecolor()[0]) for collection in ax.collections]
    assert dots == list(html_plots.TAB10[:3])  # x, y, z: the palette's first three colours
    labels = {text.get_text(): to_hex(text.get_color()) for text in ax.texts}
    groups = dict(zip("abcde", "xyxzy", strict=True))
    assert labels == {label: html_plots.TAB10["xyz".index(group)] for label, group in groups.items()}


def test_arrows_and_lines_draw_in_the_palettes_colours():
    ax = plotting.arrows_2d(np.eye(2), ["a", "b"])
    assert [to_hex(text.get_color()) for text in ax.texts if text.get_text().strip()] == list(html_plots.TAB10[:2])
    ax = plotting.token_lines(np.full((2, 2), 0.5), ["a", "b"])
    assert {to_hex(line.get_color()) for line in ax.lines} == {html_plots.BLUE}


def label_boxes(ax):
    """The pixel boxes (x0, y0, x1, y1) of the scatter's point labels, without their leader lines.

    (The legend's texts are not in ax.texts.)
    """
    ax.figure.canvas.draw()  # puts each annotation's text where it is drawn
    renderer = ax.figure.canvas.get_renderer()
    return [tuple(matplotlib.text.Text.get_window_extent(text, renderer).extents) for text in ax.texts]


def overlapping_pairs(boxes):
    return [
        (i, j)
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if min(boxes[i][2], boxes[j][2]) > max(boxes[i][0], boxes[j][0])
        and min(boxes[i][3], boxes[j][3]) > max(boxes[i][1], boxes[j][1])
    ]


def test_labelled_scatter_labels_do_not_overlap_on_01s_pca_map(emb):
    from helpers.embeddings import pca_2d

    words = [
        "cat",
        "dog",
        "kitten",
        "puppy",
        "horse",
        "cow",
        "lion",
        "tiger",
        "king",
        "queen",
        "prince",
        "princess",
        "man",
        "woman",
        "boy",
        "girl",
        "apple",
        "banana",
        "bread",
        "cheese",
        "pizza",
        "rice",
        "soup",
        "cake",
        "paris",
        "london",
        "france",
        "germany",
        "berlin",
        "tokyo",
        "japan",
        "china",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
    ]  # 01_embeddings' 40 words, in crowded groups
    points = pca_2d(np.stack([emb.vector(word) for word in words]))
    ax = plotting.labelled_scatter(points, words, [str(i // 8) for i in range(40)])
    boxes = label_boxes(ax)
    assert len(boxes) == 40 and overlapping_pairs(boxes) == []


def test_labelled_scatter_spreads_the_labels_of_a_tight_cluster(rng):
    spread = rng.random((20, 2))  # (20, 2) over the unit square
    cluster = 0.5 + 0.005 * rng.standard_normal((6, 2))  # (6, 2): six points almost on one spot
    ax = plotting.labelled_scatter(np.concatenate([spread, cluster]), [f"label {i}" for i in range(26)])
    assert overlapping_pairs(label_boxes(ax)) == []


def test_head_grid_draws_each_head_in_its_own_panel(rng):
    weights = rng.random(size=(5, 3, 4))
    axes = plotting.head_grid(weights, ["x", "y", "z"], ["a", "b", "c", "d"], ncols=3)
    assert axes.shape == (2, 3)
    for i in range(5):
        image = axes.flat[i].get_images()[0]
        assert np.allclose(image.get_array(), weights[i])
        assert image.get_clim() == (0, 1)  # one colour scale for every head
        assert axes.flat[i].get_title() == f"head {i}"
    assert not axes.flat[5].axison  # the unused slot is blank


@pytest.mark.parametrize(
    ("weights", "kwargs", "match"),
    [
        (np.zeros((3, 3)), {}, "3-D"),
        (np.zeros((2, 3, 4)), {}, "key labels"),
        (np.zeros((2, 3, 3)), {"titles": ["only one"]}, "titles"),
    ],
)
def test_head_grid_rejects_bad_shapes(weights, kwargs, match):
    with pytest.raises(ValueError, match=match):
        plotting.head_grid(weights, ["a", "b", "c"], **kwargs)


def test_every_picture_takes_query_labels_then_key_labels():
    import inspect

    for function in (plotting.heatmap, plotting.token_lines, plotting.head_grid, html_plots.heatmap):
        assert list(inspect.signature(function).parameters)[1:3] == ["query_labels", "key_labels"], function
    weights = np.full((2, 3, 4), 0.25)
    axes = plotting.head_grid(weights, ["q0", "q1", "q2"], ["k0", "k1", "k2", "k3"], ncols=2)
    assert [t.get_text() for t in axes[0, 0].get_yticklabels()] == ["q0", "q1", "q2"]  # rows are queries
    assert [t.get_text() for t in axes[0, 0].get_xticklabels()] == ["k0", "k1", "k2", "k3"]
    ax = plotting.token_lines(weights[0], ["q0", "q1", "q2"], ["k0", "k1", "k2", "k3"])
    assert [t.get_text() for t in ax.texts[:3]] == ["q0", "q1", "q2"]  # the queries on the left
