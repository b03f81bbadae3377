"""Explorers of 10_efficient_attention: tiled attention's tiles, time and memory.

Taught in 10_efficient_attention.
"""

import html
import time
import tracemalloc

import numpy as np

from helpers.efficient import TILE_COMPUTED, TILE_MASKED, TILE_SKIPPED, block_grid, tiled_attention
from helpers.widgets._explorer import explorer, ipw, show_html

__all__ = ["TILE_COLOURS", "TILE_NAMES", "tile_counts", "block_grid_html", "measure_tiled", "tiled_attention_explorer"]

TILE_COLOURS = {TILE_COMPUTED: "#4c78a8", TILE_MASKED: "#f58518", TILE_SKIPPED: "#eeeeee"}  # blue, orange, pale grey
TILE_NAMES = {TILE_COMPUTED: "computed", TILE_MASKED: "computed with a mask", TILE_SKIPPED: "skipped"}


def tile_counts(grid):
    """{"computed": n, "computed with a mask": n, "skipped": n} for a block_grid."""
    grid = np.asarray(grid)
    return {TILE_NAMES[kind]: int((grid == kind).sum()) for kind in (TILE_COMPUTED, TILE_MASKED, TILE_SKIPPED)}


def _mib_text(n_bytes):
    """A size in MiB with the decimals a small one needs: "64 MiB", "0.25 MiB"."""
    mib = n_bytes / 2**20
    return f"{mib:.0f} MiB" if mib >= 10 else f"{mib:.3g} MiB"


def _tiles_summary(T, block_size, grid):
    """One line: how many tiles, their size (a block of T or more makes one T × T tile), and what was done to each."""
    side = min(block_size, T)
    n = grid.size
    counts = ", ".join(f"{count} {name}" for name, count in tile_counts(grid).items())
    note = (
        f" (a block of {block_size} covers all {T} tokens: one tile holds every score, so tiling saves no memory)"
        if block_size >= T
        else ""
    )
    return f"<b>{n} tile{'s' if n != 1 else ''} of {side}×{side}</b>{note}: {counts}"


def block_grid_html(grid, cell_px=10):
    """A block_grid as a table of coloured squares (rows = query blocks, columns = key blocks) and a legend."""
    grid = np.asarray(grid)
    square = f"width:{cell_px}px;height:{cell_px}px;padding:0;border:1px solid white"
    rows = "".join(
        "<tr>" + "".join(f'<td style="{square};background:{TILE_COLOURS[int(kind)]}"></td>' for kind in row) + "</tr>"
        for row in grid
    )
    legend = " ".join(
        f'<span style="background:{TILE_COLOURS[kind]};padding:0 8px;margin-left:8px"></span> '
        f"{html.escape(TILE_NAMES[kind])}"
        for kind in (TILE_COMPUTED, TILE_MASKED, TILE_SKIPPED)
    )
    counts = ", ".join(f"{count} {name}" for name, count in tile_counts(grid).items())
    description = f"A grid of {grid.shape[0]} by {grid.shape[1]} tiles, query blocks down, key blocks across: {counts}"
    return (
        f'<div style="font:12px sans-serif">rows: query blocks, columns: key blocks{legend}</div>'
        f'<table role="img" aria-label="{html.escape(description)}" style="border-collapse:collapse;margin:4px 0">'
        f"{rows}</table>"
    )


def measure_tiled(T, block_size, causal, d=64, seed=0):
    """One call of tiled_attention on one thread, random float32 (T, d) inputs: (seconds, peak MiB of new buffers).

    The peak is tracemalloc's: the buffers numpy allocates during the call, the output included. One
    thread, as in the notebook's measurements: each extra thread keeps its own copies of K and V, so
    on all cores the peak would grow with the machine's core count.
    """
    q, k, v = (np.random.default_rng(seed + i).standard_normal((T, d), dtype=np.float32) for i in range(3))
    tracemalloc.start()
    start = time.perf_counter()
    tiled_attention(q, k, v, causal=causal, block_size=block_size, n_threads=1)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak / 2**20


def tiled_attention_explorer(T=1024, block_size=256, causal=True, d=64):
    """Pick T, the block size and causal on/off: see which tiles are computed, masked or skipped, and what it costs.

    Shapes: one head, q, k, v (T, d) float32. Each update runs tiled_attention once (time and
    tracemalloc peak) and draws block_grid in HTML, beside the size the naive (T, T) scores would take.
    """
    controls = {
        "T": ipw.SelectionSlider(options=[256, 512, 1024, 2048, 4096], value=T, description="T"),
        "block_size": ipw.SelectionSlider(options=[128, 256, 512, 1024], value=block_size, description="block size"),
        "causal": ipw.Checkbox(value=causal, description="causal"),
    }

    def draw(T, block_size, causal):
        seconds, peak = measure_tiled(T, block_size, causal, d)
        grid = block_grid(T, T, block_size, causal)
        short = block_size < T and T * T * 4 / 2**20 < peak  # the (T, d) buffers weigh more than the scores would
        note = (
            "; at this length the (T, d) copies of K and V and the output weigh more than the scores, so "
            "tiling pays off only on longer texts"
            if short
            else ""
        )
        show_html(
            f"<div>{_tiles_summary(T, block_size, grid)}<br>"
            f"tiled attention: {seconds * 1e3:.1f} ms, peak {peak:.2f} MiB of new buffers "
            f"(the naive ({T}, {T}) float32 scores alone: {_mib_text(T * T * 4)}){note}</div>"
            + block_grid_html(grid, cell_px=max(4, min(24, 320 // grid.shape[0])))
        )

    return explorer(controls, draw)


def demos():
    """tiled_attention_explorer: a longer sequence, smaller blocks, then the mask off."""
    box = tiled_attention_explorer(T=512)
    yield "tiled_attention_explorer (10)", box, [("T", 2048), ("block_size", 128), ("causal", False)]
