"""Fixtures shared by the helpers' tests."""

import warnings

import matplotlib

matplotlib.use("Agg")  # no window: the tests draw into memory

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    """A fresh, seeded generator per test, so a failure reproduces."""
    return np.random.default_rng(20240601)


@pytest.fixture
def strict_numpy():
    """Make overflow, invalid (NaN) and divide-by-zero, and every warning, an error (underflow to 0 is fine)."""
    with np.errstate(over="raise", invalid="raise", divide="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.fixture(autouse=True)
def close_figures():
    """Every test starts and ends without open figures."""
    yield
    plt.close("all")


@pytest.fixture
def shown(monkeypatch):
    """The HTML strings the explorers display, recorded instead of sent to a front end."""
    import IPython.display

    markup = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, *args, **kwargs: markup.append(obj.data))
    return markup


@pytest.fixture(scope="session")
def emb():
    """The real token embeddings (skips the test when the weights package is missing)."""
    from helpers.embeddings import load_token_embeddings
    from helpers.pretrained import WeightsNotFoundError

    try:
        return load_token_embeddings()
    except WeightsNotFoundError as exc:
        pytest.skip(str(exc))
