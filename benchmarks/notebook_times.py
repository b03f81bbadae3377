"""Execute every notebook in a fresh kernel and print seconds per notebook and the total.

    python benchmarks/notebook_times.py [notebooks/05_masking.ipynb ...]

The notebooks on disk are not changed. The slowest cell of each notebook is shown too,
since the workshop's rule is that every cell finishes in seconds on a 2-core laptop.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


class TimedClient(NotebookClient):
    """A NotebookClient that records each code cell's wall time."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cell_seconds = []

    async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
        start = time.perf_counter()
        result = await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        if cell.cell_type == "code":
            self.cell_seconds.append((time.perf_counter() - start, cell_index))
        return result


TIMEOUT = 120  # seconds nbclient waits for a cell's reply


def time_notebook(path, attempts=3):
    """(total seconds, slowest cell seconds, slowest cell index) for one fresh-kernel run.

    nbclient itself sometimes waits for a reply that has already come, up to its whole timeout
    (seen in about 1 of 6 runs of 01, in a cell that updates a widget from code; the same cell
    takes milliseconds in JupyterLab and under nbval). A run with a cell that took the whole
    timeout is such a stall, not the notebook's time: it is reported and the notebook run again.
    """
    for attempt in range(1, attempts + 1):
        nb = nbformat.read(path, as_version=4)
        client = TimedClient(
            nb, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        start = time.perf_counter()
        client.execute()
        total = time.perf_counter() - start
        slowest, index = max(client.cell_seconds)
        if slowest < TIMEOUT - 1:
            return total, slowest, index
        print(
            f"{path.name}: cell #{index} waited the whole {TIMEOUT} s timeout (a stall of nbclient's, "
            f"not the notebook's time); run {attempt} of {attempts}",
            file=sys.stderr,
        )
    return total, slowest, index


def main(paths):
    paths = [Path(p) for p in paths] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    rows = [(path.name, *time_notebook(path)) for path in paths]
    total = sum(row[1] for row in rows)
    width = max(len(name) for name, *_ in rows)
    print(f"{'notebook':<{width}}  {'seconds':>8}  {'share':>6}  {'slowest cell':>14}")
    for name, seconds, slowest, index in rows:
        print(f"{name:<{width}}  {seconds:8.1f}  {seconds / total:6.1%}  {slowest:7.2f} s (#{index})")
    print(f"{'total':<{width}}  {total:8.1f}  {1:6.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
