"""Labels next to scatter points that do not overlap each other or the points (used by plotting).

Greedy: crowded points are labelled first; each label tries spots at growing distances around
its point and takes the first whose box touches no label placed before and no point. A label
pushed far from its point gets a thin line back to it.
"""

import numpy as np

# candidate directions, right of the point first (where a reader looks for a label)
_DIRECTIONS = [(1, 0.4), (1, -0.6), (-1, 0.4), (-1, -0.6), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)]
_RADII = (3, 8, 14, 22, 32, 44)  # points (1/72 inch) from the dot to the nearest corner of the label
_DOT = 3.0  # half the size of a dot's keep-out square, in points
_GAP = 3.0  # the least space between two labels side by side, in points


def _overlap(box, boxes):
    """Total area shared by `box` (x0, y0, x1, y1) and each of `boxes` (n, 4). -> float."""
    if len(boxes) == 0:
        return 0.0
    boxes = np.asarray(boxes)
    width = np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0])
    height = np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1])
    return float(np.sum(np.clip(width, 0, None) * np.clip(height, 0, None)))


def place_labels(ax, points, labels, colors, fontsize=8):
    """Annotate each point with its label where it overlaps nothing already drawn; returns the Annotations.

    Shapes: points (n, 2) in data coordinates; labels n strings; colors n matplotlib colours.
    """
    fig = ax.figure
    ax.autoscale_view()
    scale = fig.dpi / 72  # points -> pixels
    xy = ax.transData.transform(points)  # (n, 2) pixels
    renderer = fig.canvas.get_renderer()
    dots = np.concatenate([xy - _DOT * scale, xy + _DOT * scale], axis=1)  # (n, 4) keep-out boxes
    crowd = (np.linalg.norm(xy[:, None] - xy[None, :], axis=-1) < 30 * scale).sum(axis=1)  # (n,)
    placed, texts = [], [None] * len(points)
    for i in np.argsort(-crowd, kind="stable"):
        probe = ax.text(0, 0, labels[i], fontsize=fontsize)  # measured, then removed
        extent = probe.get_window_extent(renderer)
        probe.remove()
        pad = _GAP * scale  # keep a gap between neighbouring labels
        box, radius = _best_box(xy[i], extent.width + pad, extent.height, scale, placed, np.delete(dots, i, axis=0))
        far = radius > _RADII[1]  # pushed away from its dot: draw a thin line back to it
        texts[i] = ax.annotate(
            labels[i],
            points[i],
            xytext=((box[0] - xy[i, 0]) / scale, (box[1] - xy[i, 1]) / scale),
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=fontsize,
            color=colors[i],
            arrowprops={"arrowstyle": "-", "color": colors[i], "lw": 0.5, "shrinkA": 1, "shrinkB": 2} if far else None,
        )
        placed.append(box)
    return texts


def _best_box(xy, w, h, scale, placed, dots):
    """The first label box (x0, y0, x1, y1), in pixels, around the dot at `xy` that overlaps nothing
    (else the least overlapping one), and its distance from the dot in points."""
    best = None
    for radius in _RADII:
        for dx, dy in _DIRECTIONS:
            # put the label's nearest corner (or edge middle) `radius` points from the dot
            x0 = xy[0] + dx * radius * scale - (w if dx < 0 else w / 2 if dx == 0 else 0)
            y0 = xy[1] + dy * radius * scale - (h if dy < 0 else h / 2 if dy == 0 else 0)
            box = (x0, y0, x0 + w, y0 + h)
            cost = _overlap(box, placed) + _overlap(box, dots)
            if best is None or cost < best[0]:
                best = (cost, box, radius)
            if cost == 0:
                return box, radius
    return best[1], best[2]
