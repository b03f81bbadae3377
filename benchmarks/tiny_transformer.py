"""Notebook 08's tiny transformer and its two baselines, trained over several seeds.

    python benchmarks/tiny_transformer.py --seeds 5
    python benchmarks/tiny_transformer.py --seeds 5 --train 500        # a smaller corpus
    python benchmarks/tiny_transformer.py --seeds 5 --parts            # does LayerNorm / a feed-forward layer help?
    python benchmarks/tiny_transformer.py --seeds 5 --parts --steps 150   # the same, trained for 150 steps
    python benchmarks/tiny_transformer.py --seeds 5 --residual         # and the residual, E' = E + delta_E?

For each seed: a new corpus (training sentences and held-out ones it does not contain), the full
model (embedding + positions + attention with the residual + read-out), the model without attention
(each word alone) and the model without positions (the words as a bag), all trained the notebook's
way. Printed per seed: held-out accuracy on the masked verb (all sentences, and those with another
noun, the part that needs word order), the best head's mean attention weight on the subject and how
often it is that head's largest weight, and the seconds of training. The last lines give what each
baseline is expected to reach on average, which follows from how the grammar is built. Training
times belong here, not in the notebook: they depend on the machine and on what else runs on it.
tests/test_nb08_training_a_tiny_transformer.py reruns `measure` for the numbers the notebook quotes.
"""

import argparse
import time

import numpy as np

from helpers import grammar
from helpers import tiny_model as tm

MODELS = {"full": tm.Config(), "no attention": tm.Config(attention=False), "no positions": tm.Config(positions=False)}
PARTS = {
    "attention only": tm.Config(),
    "+ LayerNorm": tm.Config(layer_norm=True),
    "+ feed-forward": tm.Config(feed_forward=True),
    "+ both": tm.Config(layer_norm=True, feed_forward=True),
}
RESIDUAL = {"with residual": tm.Config(), "without": tm.Config(residual=False)}


def run(config, train, test, seed, steps):
    """Train one model: held-out accuracy (all, with another noun), best head's share and top rate, seconds,
    and every head's share."""
    params = tm.init_params(config, rng=seed)
    start = time.perf_counter()
    tm.train_masked_word(params, config, train, steps=steps, rng=seed)
    seconds = time.perf_counter() - start
    accuracy, predictions, weights = tm.evaluate_verbs(params, config, test)
    targets = np.array([grammar.WORD_ID[s.words[s.verb]] for s in test])
    hard = np.array([bool(s.attractors) for s in test])
    accuracy_hard = float(np.mean(predictions[hard] == targets[hard]))
    if weights is None:
        return (accuracy, accuracy_hard, np.nan, np.nan, seconds), ""
    shares = tm.subject_share(weights, test)  # (h,)
    subjects = np.array([s.subject for s in test])
    on_top = (weights.argmax(axis=-1) == subjects[:, None]).mean(axis=0)  # (h,): largest weight on the subject
    best = int(shares.argmax())
    return (accuracy, accuracy_hard, float(shares[best]), float(on_top[best]), seconds), " ".join(
        f"{v:.2f}" for v in shares
    )


def measure(models, seeds, n_train=2000, n_test=500, steps=400, report=None):
    """Train every model on every seed's corpus: ({name: [row per seed]}, [each seed's expected levels]).

    A row is (held-out accuracy, with another noun, best head's share, its top rate, seconds); the expected
    levels are a model's without word order, the mean of 1/k over the seed's held-out set (all, with another
    noun). report(seed, name, row, heads), if given, is called after each model (the table's lines).
    """
    rows, expected = {name: [] for name in models}, []
    for seed in range(seeds):
        train, test = grammar.make_corpus(n_train, n_test, rng=seed)
        expected.append(
            (grammar.order_free_ceiling(test), grammar.order_free_ceiling([s for s in test if s.attractors]))
        )
        for name, config in models.items():
            row, heads = run(config, train, test, seed, steps)
            rows[name].append(row)
            if report is not None:
                report(seed, name, row, heads)
    return rows, expected


def table(models, seeds, n_train, n_test, steps):
    """Print one line per seed and model, then the means; return the rows and each seed's expected levels."""
    print(
        f"{'seed':>4}  {'model':<15}{'held-out':>9}{'w/ other noun':>14}{'subject share':>14}"
        f"{'top is subject':>15}{'train s':>9}   each head's share"
    )

    def report(seed, name, row, heads):
        print(
            f"{seed:>4}  {name:<15}{row[0]:>9.3f}{row[1]:>14.3f}{row[2]:>14.2f}{row[3]:>15.2f}{row[4]:>9.2f}   {heads}",
            flush=True,
        )

    rows, expected = measure(models, seeds, n_train, n_test, steps, report)
    print("\nmean over seeds")
    base = np.mean([r[4] for r in next(iter(rows.values()))])
    for name, values in rows.items():
        v = np.array(values)
        print(
            f"      {name:<15}{v[:, 0].mean():>9.3f}{v[:, 1].mean():>14.3f}{v[:, 2].mean():>14.2f}"
            f"{v[:, 3].mean():>15.2f}{v[:, 4].mean():>9.2f}   accuracy min {v[:, 0].min():.3f}, "
            f"time x{v[:, 4].mean() / base:.2f}"
        )
    return rows, expected


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--train", type=int, default=2000, help="training sentences")
    parser.add_argument("--test", type=int, default=500, help="held-out sentences")
    parser.add_argument("--steps", type=int, default=400)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--parts", action="store_true", help="compare LayerNorm and feed-forward variants instead")
    which.add_argument("--residual", action="store_true", help="compare the model with and without its residual")
    args = parser.parse_args()
    print(
        f"{args.train} training and {args.test} held-out sentences, {args.steps} steps of "
        f"{tm.train_masked_word.__kwdefaults__['batch_size']} sentences\n"
    )
    models = PARTS if args.parts else RESIDUAL if args.residual else MODELS
    _, expected = table(models, args.seeds, args.train, args.test, args.steps)
    if models is MODELS:
        print(
            "\nexpected on average without word order, the mean of 1/k over each seed's held-out set (all / with "
            "another noun): " + ", ".join(f"seed {seed} {a:.3f} / {b:.3f}" for seed, (a, b) in enumerate(expected))
        )
        print(
            f"expected from the position alone: {grammar.position_only_ceiling():.3f} (1 in 8 subjects). Both are "
            "averages over draws of sentences: a model can land slightly above them on a finite held-out set"
        )


if __name__ == "__main__":
    main()
