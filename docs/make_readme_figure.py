"""Draw docs/attention.png, the README's picture: one sentence's attention, two ways.

    python docs/make_readme_figure.py

Parameter-free attention (notebook 02) on the real token vectors of all-MiniLM-L6-v2,
with a causal mask (notebook 05): the heatmap and the same weights as lines.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from helpers import causal_mask, scaled_dot_product_attention  # noqa: E402
from helpers.embeddings import load_token_embeddings, unit_rows  # noqa: E402
from helpers.plotting import heatmap, token_lines  # noqa: E402

sentence = "The cat sat on the mat"
embeddings = load_token_embeddings()
tokens = embeddings.tokenize(sentence)
X = unit_rows(embeddings.vectors(sentence)) * 1.6  # (T, 384): unit rows, a little sharpened
_, weights = scaled_dot_product_attention(X, X, X, mask=causal_mask(len(tokens)), scale=1.0)

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [1.4, 1]})
heatmap(
    np.where(causal_mask(len(tokens)), weights, np.nan),
    tokens,
    tokens,
    ax=left,
    title="attention weights (rows: queries)",
    colorbar=False,
)
token_lines(weights, tokens, ax=right, title="the same weights as lines")
fig.tight_layout()
out = Path(__file__).with_name("attention.png")
fig.savefig(out, dpi=110)
print(f"wrote {out}")
