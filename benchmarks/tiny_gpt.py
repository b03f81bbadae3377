"""Notebook 11's tiny GPT over several seeds: its losses against the grammar's own, what it writes, what its heads
do at the verb, and its variants (residual or not, pre- or post-LN, 2 or 4 layers).

    python benchmarks/tiny_gpt.py --seeds 5
    python benchmarks/tiny_gpt.py --seeds 5 --heads             # where each head looks at the verb, and what it does
    python benchmarks/tiny_gpt.py --seeds 3 --parts             # the residual and the LayerNorm's place
    python benchmarks/tiny_gpt.py --seeds 3 --parts --steps 600 # shorter runs

Per seed, the notebook's model (train_default): seconds of training; its loss on the held-out text and on the
training text, scored the same way (next_word.held_out_loss), against the bigram model's and the grammar's own
(gpt_probes.grammar_loss: reading each window as the model does, "floor", and knowing the whole text, "whole"),
and how far above the grammar's it is on each text ("gap", "train gap"); the sentences it writes at temperature 1
(3,000 words) judged by the grammar (its shape and agreement; also with all nouns different), the share of its
grammatical sentences that are not in the training text against a perfect sampler's (gpt_probes.unseen_share),
the bigram model's and the untrained model's sentences; agreement at the word before the verb on held-out
sentences; and the KV cache's speed-up for a 200-word generation (best of 3, one BLAS thread). Times belong here,
not in the notebook: they are this machine's, under whatever else it runs.
With --heads: for each head, its mean weight on the subject at the word before the verb (held-out sentences with a
noun between), the least and the most over the eight subjects, and agreement with its row there zeroed or put all
on the "." before the sentence (gpt_probes.verb_heads).
With --parts: for each variant, the loss after the steps, the gradient norm that reaches the first
block (the gradient of the loss w.r.t. the first block's input, at the first step and at the last), the
feed-forward gradient of the first and the last block at the first step (where Xiong et al. 2020 measured),
and how different the words' vectors are after the last block (0 when every word ends on one vector).
"""

import argparse
import functools
import time

import numpy as np

from helpers import gpt_probes as gp
from helpers import grammar
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
    return nw.split_sentences(tg.generate(params, config, ["."], n_words, temperature=1.0, rng=seed))


def unseen(sentences, train):
    """The share of the grammatical sentences (repeats counted) that are not in the training text."""
    seen = {s.words for s in train}
    good = [tuple(s) for s in sentences if all(nw.judge(s).values())]
    return np.mean([s not in seen for s in good])


def cache_speedup(params, config, n_new=200):
    times = {}
    for kv_cache in (True, False):
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            words = tg.generate(params, config, ["."], n_new, rng=0, kv_cache=kv_cache)
            best = min(best, time.perf_counter() - start)
        times[kv_cache] = (best, words)
    assert times[True][1] == times[False][1], "the cache changed the words"
    return times[False][0] / times[True][0]


SEED_COLUMNS = {  # name: (width, decimals)
    "train s": (8, 1),
    "held-out": (9, 3),
    "train text": (11, 3),
    "bigram": (7, 3),
    "floor": (7, 3),
    "whole": (7, 3),
    "gap": (7, 3),
    "train gap": (10, 3),
    "agrees": (8, 3),
    "+distinct": (10, 3),
    "unseen": (8, 3),
    "sampler": (8, 3),
    "bigram ag": (10, 3),
    "untrained": (10, 3),
    "verb acc": (9, 3),
    "cache x": (8, 1),
}


def seed_row(seed, steps):
    losses, start = [], time.perf_counter()
    params, config = tg.train_default(seed, steps=steps, callback=lambda step, loss: losses.append(loss))
    row = {"train s": time.perf_counter() - start}
    train, test = tg.default_corpus(seed)
    train_ids, test_ids = tg.stream(train), tg.stream(test)
    bigram = nw.Bigram(train_ids, config.vocab_size)
    model = functools.partial(tg.forward, params, config)  # ids (B, T) -> logits (B, T, V)
    row["held-out"], row["train text"] = (nw.held_out_loss(model, ids, config.context) for ids in (test_ids, train_ids))
    row["bigram"] = nw.held_out_loss(bigram.logits, test_ids, config.context)
    row["floor"] = gp.grammar_loss(test_ids, config.context)
    row["whole"] = gp.grammar_loss(test_ids, config.context, whole_text=True)
    row["gap"] = row["held-out"] - row["floor"]  # above the best any model can expect, on each text
    row["train gap"] = row["train text"] - gp.grammar_loss(train_ids, config.context)
    sentences = written(params, config, seed)
    report = nw.sentence_report(sentences)
    row["agrees"], row["+distinct"] = report["agrees"], report["grammatical"]
    row["unseen"], row["sampler"] = unseen(sentences, train), gp.unseen_share(train)
    bigram_words = [tg.VOCAB[i] for i in bigram.generate([tg.WORD_ID["."]], 3000, rng=seed)]
    row["bigram ag"] = nw.sentence_report(nw.split_sentences(bigram_words))["agrees"]
    row["untrained"] = nw.sentence_report(written(tg.init_params(config, rng=seed), config, seed))["agrees"]
    row["verb acc"] = nw.verb_agreement(model, test, tg.WORD_ID["."], tg.WORD_ID)
    with blas_single_thread():
        row["cache x"] = cache_speedup(params, config)
    return row


def seeds_table(seeds, steps):
    print(f"{'seed':>4}" + "".join(f"{name:>{width}}" for name, (width, _) in SEED_COLUMNS.items()))
    rows = []
    for seed in range(seeds):
        rows.append(seed_row(seed, steps))
        print(f"{seed:>4}" + "".join(f"{rows[-1][n]:>{w}.{d}f}" for n, (w, d) in SEED_COLUMNS.items()), flush=True)
    for label, summary in (("mean", np.mean), ("min", np.min), ("max", np.max)):
        print(
            f"{label:<4}" + "".join(f"{summary([r[n] for r in rows]):>{w}.{d}f}" for n, (w, d) in SEED_COLUMNS.items())
        )


def heads_table(seeds, steps):
    print(f"{'seed':>4}{'agreement':>10}{'head':>15}{'on subject':>11}{'least':>7}{'most':>6}{'zeroed':>8}{'on .':>6}")
    for seed in range(seeds):
        params, config = tg.train_default(seed, steps=steps)
        test = tg.default_corpus(seed)[1]
        found = gp.verb_heads(params, config, test)
        between = np.array([any(a < s.verb for a in s.attractors) for s in test])  # (N,): a noun between
        subject = np.array([s.words[s.subject] for s in test])
        agreement = np.mean(found["chosen"] == found["verbs"])
        for layer in range(config.n_layers):
            for head in range(config.n_heads):
                on = found["on_subject"][layer, head]
                by_subject = [on[between & (subject == w)].mean() for w in grammar.NOUNS]
                zeroed, onto = (np.mean(found[k][layer, head] == found["verbs"]) for k in ("zeroed", "onto_end"))
                print(
                    f"{seed:>4}{agreement:>10.3f}{f'layer {layer} head {head}':>15}{on[between].mean():>11.2f}"
                    f"{min(by_subject):>7.2f}{max(by_subject):>6.2f}{zeroed:>8.3f}{onto:>6.3f}",
                    flush=True,
                )


def first_block_gradient(params, config, ids):
    """The norm of the loss's gradient w.r.t. the first block's input (the word vectors), the norms of the first
    and the last block's feed-forward gradients, and the spread of the last block's output."""
    inputs, targets = ids[:, :-1], ids[:, 1:]
    logits, saved = tg.forward_and_saved(params, config, inputs)
    loss, d_logits = softmax_cross_entropy(logits, targets)
    d_x = tg.input_gradient(d_logits, params, config, saved)
    grads = tg.backward(d_logits, params, config, saved)
    last = config.n_layers - 1
    ff = [float(np.sqrt(sum(np.sum(grads[f"{layer}.{w}"] ** 2) for w in ("W_1", "W_2")))) for layer in (0, last)]
    return float(np.linalg.norm(d_x)), ff, gp.spread(saved["x"])


PART_WIDTHS = (8, 9, 8, 27, 8, 26, 7, 34, 8)


def parts_table(seeds, steps):
    print(
        f"{'variant':<32}{'seed':>5}{'loss':>8}{'held-out':>9}{'agrees':>8}{'|grad| first block: start':>27}"
        f"{'end':>8}{'|grad W_ff| start: first':>26}{'last':>7}{'spread of the last output: start':>34}{'end':>8}"
    )
    for name, config in VARIANTS.items():
        results = []
        for seed in range(seeds):
            train, test = tg.default_corpus(seed)
            rng = np.random.default_rng(seed)
            params = tg.init_params(config, rng)
            train_ids = tg.stream(train)
            probe = tg.random_windows(train_ids, config.context + 1, 32, np.random.default_rng(100 + seed))
            g_start, ff, s_start = first_block_gradient(params, config, probe)
            losses = tg.train_next_word(params, config, train_ids, steps=steps, rng=rng)
            g_end, _, s_end = first_block_gradient(params, config, probe)
            held = nw.held_out_loss(functools.partial(tg.forward, params, config), tg.stream(test), config.context)
            agrees = nw.sentence_report(written(params, config, seed))["agrees"]
            results.append((np.mean(losses[-100:]), held, agrees, g_start, g_end, *ff, s_start, s_end))
            print(
                f"{name:<32}{seed:>5}" + "".join(f"{v:>{w}.3f}" for v, w in zip(results[-1], PART_WIDTHS, strict=True)),
                flush=True,
            )
        means = "".join(f"{v:>{w}.3f}" for v, w in zip(np.mean(results, axis=0), PART_WIDTHS, strict=True))
        print(f"{name:<32}{'mean':>5}{means}\n", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: the notebook's)")
    parser.add_argument("--parts", action="store_true", help="the residual and pre/post-LN variants")
    parser.add_argument("--heads", action="store_true", help="where each head looks at the verb, and what it does")
    args = parser.parse_args()
    steps = args.steps or tg.DEFAULT_STEPS
    if args.parts:
        parts_table(args.seeds, steps)
    elif args.heads:
        heads_table(args.seeds, steps)
    else:
        seeds_table(args.seeds, steps)


if __name__ == "__main__":
    main()
