"""Run a benchmark script's measurements in a fresh Jupyter kernel (as a learner's notebook runs them) and print
what they printed. Used by the benchmarks that time widgets: `python benchmarks/<script>.py` calls
`print_from_fresh_kernel(__file__)`, and the kernel runs the same script with `--here`."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def print_from_fresh_kernel(script):
    """Start a fresh python3 kernel in the repository, `%run script --here` in it, print its standard output."""
    import nbformat
    from nbclient import NotebookClient

    cell = nbformat.v4.new_code_cell(f"%run {Path(script).resolve()} --here")
    nb = nbformat.v4.new_notebook(cells=[cell])
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    for output in nb.cells[0].outputs:
        if output.output_type == "stream" and output.name == "stdout":
            print(output.text, end="")
