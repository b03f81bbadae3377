"""Notebook 11's tiny GPT over several seeds, and its variants (residual or not, pre- or post-LN, 2 or 4 layers).

    python benchmarks/tiny_gpt.py --seeds 5
    python benchmarks/tiny_gpt.py --seeds 3 --parts             # the residual and the LayerNorm's place
    python benchmarks/tiny_gpt.py --seeds 3 --parts --steps 600 # shorter runs

Per seed, the notebook's model (train_default): seconds of training, the last 100 steps' mean loss, the
held-out loss against a bigram model's, the sentences it writes at temperature 1 (3,000 words) judged by
the grammar (its shape and agreement; also with all nouns different), the bigram model's and the untrained
model's, agreement accuracy on held-out sentences at the word before the verb, and the KV cache's speed-up
for a 200-word generation (best of 3, one BLAS thread). Times belong here, not in the notebook.
With --parts: for each variant, the loss after the steps, the gradient norm that reaches the first
block (the gradient of the loss w.r.t. the first block's input, at the first step and at the last), and
how different the words' vectors are after the last block (0 when every word ends on one vector: rank collapse).
"""

import argparse
import functools
import time

import numpy as np

from helpers import next_word as nw
from helpers import tiny_gpt as tg
from helpers.losses import softmax_cross_entropy
from helpers.threads import blas_single_thread

VARIANTS = {
    "2 layers, pre-LN": tg.Config(),
    "2 layers, pre-LN, no residual": tg.Config(residual=False),
    "2 layers, post-LN": tg.Config(norm="post"),
    "4 layers, pre-LN": tg.Config(n_layers=4),
    "4 layers, pre-LN, no residual": tg.Config(n_layers=4, residual=False),
    "4 layers, post-LN": tg.Config(n_layers=4, norm="post"),
}


def written(params, config, seed, n_words=3000):
    words = tg.generate(params, config, ["."], n_words, temperature=1.0, rng=seed)
    return nw.sentence_report(nw.split_sentences(words))


def cache_speedup(params, config, n_new=200):
    times = {}
    for cache in (True, False):
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            words = tg.generate(params, config, ["."], n_new, rng=0, cache=cache)
            best = min(best, time.perf_counter() - start)
        times[cache] = (best, words)
    assert times[True][1] == times[False][1], "the cache changed the words"
    return times[False][0] / times[True][0]


def seeds_table(seeds, steps):
    print(
        f"{'seed':>4}{'train s':>9}{'loss':>7}{'held-out':>9}{'bigram':>8}   {'shape+agrees':>12}{'+distinct':>10}"
        f"{'bigram':>8}{'untrained':>10}   {'agreement':>9}{'cache x':>8}"
    )
    rows = []
    for seed in range(seeds):
        losses = []
        start = time.perf_counter()
        params, config = tg.train_default(seed, steps=steps, callback=lambda step, loss, out=losses: out.append(loss))
        seconds = time.perf_counter() - start
        train, test = tg.default_corpus(seed)
        train_ids, test_ids = tg.stream(train), tg.stream(test)
        bigram = nw.Bigram(train_ids, config.vocab_size)
        model = functools.partial(tg.forward, params, config)  # ids (B, T) -> logits (B, T, V)
        model_loss = nw.held_out_loss(model, test_ids, config.context)
        bigram_loss = nw.held_out_loss(bigram.logits, test_ids, config.context)
        report = written(params, config, seed)
        bigram_words = [tg.VOCAB[i] for i in bigram.generate([tg.WORD_ID["."]], 3000, rng=seed)]
        bigram_report = nw.sentence_report(nw.split_sentences(bigram_words))
        untrained = written(tg.init_params(config, rng=seed), config, seed)
        agreement = nw.verb_agreement(model, test, tg.WORD_ID["."], tg.WORD_ID)
        with blas_single_thread():
            speedup = cache_speedup(params, config)
        row = (
            seconds,
            np.mean(losses[-100:]),
            model_loss,
            bigram_loss,
            report["agrees"],
            report["grammatical"],
            bigram_report["agrees"],
            untrained["agrees"],
            agreement,
            speedup,
        )
        rows.append(row)
        print(
            f"{seed:>4}{row[0]:>9.1f}{row[1]:>7.3f}{row[2]:>9.3f}{row[3]:>8.3f}   {row[4]:>12.3f}{row[5]:>10.3f}"
            f"{row[6]:>8.3f}{row[7]:>10.3f}   {row[8]:>9.3f}{row[9]:>8.1f}",
            flush=True,
        )
    v = np.array(rows)
    print(
        f"mean{v[:, 0].mean():>9.1f}{v[:, 1].mean():>7.3f}{v[:, 2].mean():>9.3f}{v[:, 3].mean():>8.3f}   "
        f"{v[:, 4].mean():>12.3f}{v[:, 5].mean():>10.3f}{v[:, 6].mean():>8.3f}{v[:, 7].mean():>10.3f}   "
        f"{v[:, 8].mean():>9.3f}{v[:, 9].mean():>8.1f}"
    )
    print(
        f"min {v[:, 0].min():>9.1f}{v[:, 1].min():>7.3f}{v[:, 2].min():>9.3f}{v[:, 3].min():>8.3f}   "
        f"{v[:, 4].min():>12.3f}{v[:, 5].min():>10.3f}{v[:, 6].min():>8.3f}{v[:, 7].min():>10.3f}   "
        f"{v[:, 8].min():>9.3f}{v[:, 9].min():>8.1f}"
    )
    return rows


def spread(x):
    """How different the words' vectors are: their distance from the mean vector over their size (0: all one)."""
    flat = x.reshape(-1, x.shape[-1])  # (B*T, d): every word of every window
    return float(np.linalg.norm(flat - flat.mean(axis=0)) / np.linalg.norm(flat))


def first_block_gradient(params, config, ids):
    """The norm of the loss's gradient w.r.t. the first block's input (the word vectors), and the spread of the
    last block's output (0 when every word ends on the same vector: rank collapse)."""
    inputs, targets = ids[:, :-1], ids[:, 1:]
    logits, cache = tg.forward_with_cache(params, config, inputs)
    loss, d_logits = softmax_cross_entropy(logits, targets)
    d_x = tg.input_gradient(d_logits, params, config, cache)
    return float(np.linalg.norm(d_x)), spread(cache["x"])


def parts_table(seeds, steps):
    print(
        f"{'variant':<32}{'seed':>5}{'loss':>8}{'held-out':>9}{'agrees':>8}{'|grad| first block: start':>27}"
        f"{'end':>8}{'spread of the last output: start':>34}{'end':>8}"
    )
    for name, config in VARIANTS.items():
        results = []
        for seed in range(seeds):
            train, test = tg.default_corpus(seed)
            rng = np.random.default_rng(seed)
            params = tg.init_params(config, rng)
            train_ids = tg.stream(train)
            probe = tg.random_windows(train_ids, config.context + 1, 32, np.random.default_rng(100 + seed))
            g_start, s_start = first_block_gradient(params, config, probe)
            losses = tg.train_next_word(params, config, train_ids, steps=steps, rng=rng)
            g_end, s_end = first_block_gradient(params, config, probe)
            held = nw.held_out_loss(functools.partial(tg.forward, params, config), tg.stream(test), config.context)
            agrees = written(params, config, seed)["agrees"]
            results.append((np.mean(losses[-100:]), held, agrees, g_start, g_end, s_start, s_end))
            print(
                f"{name:<32}{seed:>5}{results[-1][0]:>8.3f}{held:>9.3f}{agrees:>8.3f}{g_start:>27.3f}"
                f"{g_end:>8.3f}{s_start:>34.3f}{s_end:>8.3f}",
                flush=True,
            )
        v = np.array(results)
        print(
            f"{name:<32}{'mean':>5}{v[:, 0].mean():>8.3f}{v[:, 1].mean():>9.3f}{v[:, 2].mean():>8.3f}"
            f"{v[:, 3].mean():>27.3f}{v[:, 4].mean():>8.3f}{v[:, 5].mean():>34.3f}{v[:, 6].mean():>8.3f}\n",
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: the notebook's)")
    parser.add_argument("--parts", action="store_true", help="the residual and pre/post-LN variants")
    args = parser.parse_args()
    steps = args.steps or tg.DEFAULT_STEPS
    if args.parts:
        parts_table(args.seeds, steps)
    else:
        seeds_table(args.seeds, steps)


if __name__ == "__main__":
    main()
