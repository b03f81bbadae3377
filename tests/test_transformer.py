"""helpers/transformer.py and helpers/tiny_model.py: every backward part against central finite differences
in float64 (relative error < 1e-6), the forward parts against the helpers they build on, training, bad inputs."""

import subprocess
import sys

import numpy as np
import pytest

from helpers import MultiHeadAttention, grammar, pretrained
from helpers import tiny_model as tm
from helpers import transformer as tf
from helpers.gradients import gradient_check, numerical_gradient, relative_error

TOLERANCE = 1e-6  # float64 central differences of a correct gradient land near 1e-9 or below


def _check(loss, analytic, x):
    """Relative error between an analytic gradient and central differences of loss() at x."""
    error = relative_error(analytic, numerical_gradient(loss, x, eps=1e-5))
    assert error < TOLERANCE, error
    assert np.linalg.norm(analytic) > 1e-3  # a zero gradient would pass too easily
    return error


@pytest.fixture
def batch(rng):
    """Three sentences of lengths 5, 3 and 4, padded to T = 5, d_model = 6, with a random upstream gradient."""
    lengths = np.array([5, 3, 4])
    X = rng.normal(size=(3, 5, 6))
    params = {name: rng.normal(0, 0.6, (6, 6)) for name in ("W_q", "W_k", "W_v", "W_o")}
    return X, lengths, params


# --- each part's backward pass ---------------------------------------------------------------


def test_embed_backward(rng):
    E = rng.normal(size=(7, 4))
    ids = np.array([[1, 3, 3], [0, 6, 1]])  # repeated words must add up
    G = rng.normal(size=(2, 3, 4))
    _check(lambda e: np.sum(G * e[ids]), tf.embed_backward(G, ids, 7), E)


@pytest.mark.parametrize("flatten", [False, True])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 5), (2, 2, 3, 5)])
def test_linear_backward(rng, shape, flatten):
    x, W, b = rng.normal(size=shape), rng.normal(size=(5, 3)), rng.normal(size=3)
    G = rng.normal(size=shape[:-1] + (3,))
    d_x, d_W, d_b = tf.linear_backward(G, x, W, flatten=flatten)
    _check(lambda v: np.sum(G * (v @ W + b)), d_x, x)
    _check(lambda w: np.sum(G * (x @ w + b)), d_W, W)
    _check(lambda c: np.sum(G * (x @ W + c)), d_b, b)


def test_linear_backward_flattened_is_one_product_over_every_row(rng):
    # flatten=True must be the 2-D computation on the stacked rows, to the bit (11's training relies on it)
    x, W, G = rng.normal(size=(4, 6, 5)), rng.normal(size=(5, 3)), rng.normal(size=(4, 6, 3))
    flat = tf.linear_backward(G, x, W, flatten=True)
    rows = tf.linear_backward(G.reshape(24, 3), x.reshape(24, 5), W)
    np.testing.assert_array_equal(flat[0], rows[0].reshape(x.shape))
    np.testing.assert_array_equal(flat[1], x.reshape(24, 5).T @ G.reshape(24, 3))
    np.testing.assert_array_equal(flat[2], rows[2])
    per_item = tf.linear_backward(G, x, W)  # the same gradients, summed in another order
    for a, b in zip(flat, per_item, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_named_layer_norm_reads_and_writes_its_parameters_by_name(rng):
    x, G = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 3, 5))
    params = {"ln1_gamma": rng.normal(size=5), "ln1_beta": rng.normal(size=5), "ln2_gamma": np.ones(5)}
    np.testing.assert_array_equal(
        tf.named_layer_norm(params, "ln1", x), tf.layer_norm(x, params["ln1_gamma"], params["ln1_beta"], tf.LN_EPS)
    )
    grads = {"W": 0}
    d_x = tf.named_layer_norm_backward(G, params, "ln1", x, grads)
    expected = tf.layer_norm_backward(G, x, params["ln1_gamma"])
    np.testing.assert_array_equal(d_x, expected[0])
    assert sorted(grads) == ["W", "ln1_beta", "ln1_gamma"]
    np.testing.assert_array_equal(grads["ln1_gamma"], expected[1])
    np.testing.assert_array_equal(grads["ln1_beta"], expected[2])


def test_check_params_names_every_missing_or_misshapen_parameter():
    shapes = {"E": (4, 2), "W": (2, 2), "b": (2,)}
    tf.check_params({"E": np.zeros((4, 2)), "W": np.zeros((2, 2)), "b": np.zeros(2), "extra": 0}, shapes, "cfg")
    with pytest.raises(ValueError, match=r"params do not fit cfg: \{'W': \(2, 3\), 'b': 'missing'\}"):
        tf.check_params({"E": np.zeros((4, 2)), "W": np.zeros((2, 3))}, shapes, "cfg")


def test_gelu_backward(rng):
    x = np.concatenate([rng.normal(0, 2, 20), [0.0, -6.0, 6.0]])
    G = rng.normal(size=x.shape)
    _check(lambda v: np.sum(G * tf.gelu(v)), tf.gelu_backward(G, x), x)


def test_layer_norm_backward(rng):
    x, gamma, beta = rng.normal(size=(2, 3, 5)), rng.normal(size=5), rng.normal(size=5)
    G = rng.normal(size=x.shape)
    d_x, d_gamma, d_beta = tf.layer_norm_backward(G, x, gamma)
    _check(lambda v: np.sum(G * tf.layer_norm(v, gamma, beta, tf.LN_EPS)), d_x, x)
    _check(lambda g: np.sum(G * tf.layer_norm(x, g, beta, tf.LN_EPS)), d_gamma, gamma)
    _check(lambda c: np.sum(G * tf.layer_norm(x, gamma, c, tf.LN_EPS)), d_beta, beta)


@pytest.mark.parametrize("rows", [None, np.array([4, 0, 2])])
def test_self_attention_backward(rng, batch, rows):
    X, lengths, params = batch
    G = rng.normal(size=(3, 5 if rows is None else 1, 6))
    if rows is None:
        G[1, 3:] = G[2, 4:] = 0  # what padded words would ask is never used

    def loss(p=params, x=X):
        return np.sum(G * tf.self_attention(p, x, lengths, 2, rows=rows)[0])

    d_X, grads = tf.self_attention_backward(G, params, X, lengths, 2, rows=rows)
    _check(lambda x: loss(x=x), d_X, X)
    for name in params:
        _check(lambda w, name=name: loss(p={**params, name: w}), grads[name], params[name])
    assert np.all(d_X[1, 3:] == 0) and np.all(d_X[2, 4:] == 0)  # padding feeds nothing


CONFIGS = {
    "full": {},
    "layer norm": dict(layer_norm=True),
    "feed-forward": dict(feed_forward=True),
    "both": dict(layer_norm=True, feed_forward=True),
    "no attention": dict(attention=False),
    "no positions": dict(positions=False),
    "no residual": dict(residual=False),
    "no residual, with LayerNorm": dict(residual=False, layer_norm=True),
}


@pytest.mark.parametrize("variant", CONFIGS)
def test_the_whole_model_backward(variant):
    train, _ = grammar.make_corpus(4, 1, rng=0)
    ids, lengths = grammar.encode(train)
    rng = np.random.default_rng(1)
    masked = rng.integers(lengths)
    ids, targets = grammar.mask_positions(ids, masked)
    config = tm.Config(d_model=4, n_heads=2, d_ff=6, **CONFIGS[variant])
    params = tm.init_params(config, rng=2)
    for name in params:  # move the LayerNorm and bias parameters off their starting 1s and 0s
        if name.endswith(("gamma", "beta")) or name.startswith("b_"):
            params[name] = params[name] + rng.normal(0, 0.3, params[name].shape)
    _, grads = tm.loss_and_grads(params, config, ids, lengths, masked, targets)
    errors = gradient_check(
        lambda p: tm.loss_and_grads(p, config, ids, lengths, masked, targets)[0], params, grads, eps=1e-5
    )
    assert set(errors) == set(params) and max(errors.values()) < TOLERANCE, errors


# --- the forward parts against what they build on ----------------------------------------------


def test_self_attention_equals_multi_head_attention_with_a_padding_mask(batch):
    X, lengths, params = batch
    mha = MultiHeadAttention.from_weights(*(params[n] for n in ("W_q", "W_k", "W_v", "W_o")), n_heads=2)
    mask = np.broadcast_to(np.arange(5) < lengths[:, None, None], (3, 5, 5))  # (B, T_q, T_k): per sentence
    expected, expected_weights = mha(X, mask=mask)
    dE, weights = tf.self_attention(params, X, lengths, 2)
    np.testing.assert_allclose(dE, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12, atol=1e-15)
    assert np.all(weights[1, :, :, 3:] == 0)  # no weight on padding


def test_rows_give_the_same_rows_as_the_full_attention(batch):
    X, lengths, params = batch
    rows = np.array([4, 0, 2])
    full, full_weights = tf.self_attention(params, X, lengths, 2)
    one, one_weights = tf.self_attention(params, X, lengths, 2, rows=rows)
    np.testing.assert_allclose(one[:, 0], full[np.arange(3), rows], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(one_weights[:, :, 0], full_weights[np.arange(3), :, rows], rtol=1e-12, atol=1e-15)


def test_padding_changes_nothing_for_the_real_words():
    config = tm.Config()
    params = tm.init_params(config, rng=0)
    ids, lengths = grammar.encode([grammar.parse("the cat near the dogs meows")])
    masked = np.array([5])
    ids, _ = grammar.mask_positions(ids, masked)
    padded = np.concatenate([ids, np.zeros((1, 4), int)], axis=1)
    np.testing.assert_allclose(
        tm.forward(params, config, padded, lengths, masked)[0],
        tm.forward(params, config, ids, lengths, masked)[0],
        rtol=1e-12,
    )


def test_gelu_and_layer_norm_are_the_pretrained_models_own():
    assert tf.gelu is pretrained.gelu and tf.layer_norm is pretrained.layer_norm


def test_08s_model_loads_without_09s_pretrained_package():
    # the shared layers live below both (helpers.layers): 08's parts need nothing of the pretrained model
    code = "import sys, helpers.tiny_model; print(sorted(m for m in sys.modules if m.startswith('helpers.pretrained')))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "[]"


def test_no_positions_means_word_order_cannot_matter():
    config = tm.Config(positions=False)
    params = tm.init_params(config, rng=0)
    a, b = grammar.parse("the cat near the dogs meows"), grammar.parse("the dogs near the cat bark")
    ids, lengths = grammar.encode([a, b])
    ids, _ = grammar.mask_positions(ids, np.array([5, 5]))
    logits, _ = tm.forward(params, config, ids, lengths, np.array([5, 5]))
    np.testing.assert_allclose(logits[0], logits[1], rtol=1e-12)  # same words, other order: same guess


# --- training and reading the model ----------------------------------------------------------


def test_init_params_has_the_parts_the_config_asks_for():
    assert sorted(tm.init_params(tm.Config(attention=False), rng=0)) == ["E", "W_out", "b_out"]
    params = tm.init_params(tm.Config(layer_norm=True, feed_forward=True, d_ff=10), rng=0)
    assert params["W_1"].shape == (32, 10) and params["ln_2_gamma"].shape == (32,)
    assert params["E"].shape == (len(grammar.VOCAB), 32)


def test_training_lowers_the_loss_and_is_seeded():
    train, _ = grammar.make_corpus(200, 1, rng=0)
    config = tm.Config(d_model=16)
    runs = []
    for _ in range(2):
        params = tm.init_params(config, rng=0)
        seen = []
        losses = tm.train_masked_word(
            params,
            config,
            train,
            steps=30,
            batch_size=32,
            lr=0.02,
            rng=1,
            callback=lambda step, loss, seen=seen: seen.append(step),
        )
        runs.append(losses)
    assert runs[0] == runs[1] and seen == list(range(30))
    assert np.mean(runs[0][-5:]) < np.mean(runs[0][:5]) - 0.5


def test_without_the_residual_the_read_out_sees_only_the_change():
    config, bare = tm.Config(d_model=8), tm.Config(d_model=8, residual=False)
    params = tm.init_params(config, rng=0)
    ids, lengths, masked = np.array([[2, 12, 21, 0]]), np.array([3]), np.array([2])
    with_residual, cache = tm.forward(params, config, ids, lengths, masked)
    without, _ = tm.forward(params, bare, ids, lengths, masked)
    x_m = cache["X"][0, 2]  # (8,): the hidden word's own vector, which only the residual adds back
    np.testing.assert_allclose(with_residual - without, (x_m @ params["W_out"])[None], atol=1e-12)


def test_evaluate_verbs_and_subject_share():
    config = tm.Config(d_model=8)
    params = tm.init_params(config, rng=0)
    sentences = [grammar.parse("the cat meows"), grammar.parse("the big dogs near the cow bark")]
    accuracy, predictions, weights = tm.evaluate_verbs(params, config, sentences)
    assert predictions.shape == (2,) and weights.shape == (2, 2, 7) and 0 <= accuracy <= 1
    weights = np.zeros((2, 2, 7))
    weights[0, 0, 1], weights[1, 0, 2], weights[1, 1, 2] = 1.0, 0.5, 0.25  # the subjects: 1 and 2
    np.testing.assert_allclose(tm.subject_share(weights, sentences), [0.75, 0.125])


# --- bad input ---------------------------------------------------------------------------------


def _bad_calls():
    p = {name: np.eye(4) for name in ("W_q", "W_k", "W_v", "W_o")}
    X, lengths = np.zeros((2, 3, 4)), np.array([3, 2])
    return [
        (lambda: tf.embed_backward(np.ones((2, 3, 4)), np.ones((2, 2), int), 5), ValueError, "ids has shape"),
        (lambda: tf.embed_backward(np.ones((1, 4)), np.array([9]), 5), ValueError, r"\[0, 5\)"),
        (lambda: tf.embed_backward(np.ones((1, 4)), np.array([0.5]), 5), TypeError, "integer"),
        (lambda: tf.linear_backward(np.ones((3, 2)), np.ones((3, 4)), np.ones((5, 2))), ValueError, "do not fit"),
        (lambda: tf.gelu_backward(np.ones(3), np.ones(4)), ValueError, "d_out has shape"),
        (lambda: tf.layer_norm_backward(np.ones((2, 3)), np.ones((2, 3)), np.ones(4)), ValueError, "gamma"),
        (lambda: tf.self_attention(p, np.zeros((3, 4)), lengths, 2), ValueError, "X must have"),
        (lambda: tf.self_attention({**p, "W_k": np.eye(3)}, X, lengths, 2), ValueError, "W_k"),
        (lambda: tf.self_attention(p, X, lengths, 3), ValueError, "not divisible"),
        (lambda: tf.self_attention(p, X, np.array([3, 4]), 2), ValueError, "lengths"),
        (lambda: tf.self_attention(p, X, lengths, 2, rows=np.array([0, 2])), ValueError, "rows"),
        (lambda: tm.Config(d_model=10, n_heads=3), ValueError, "not divisible"),
        (lambda: tm.Config(d_ff=0), ValueError, "d_ff"),
        (lambda: tm.Config(attention=False, residual=False), ValueError, "residual=False needs attention"),
        (
            lambda: tm.forward(
                tm.init_params(tm.Config(), 0),
                tm.Config(layer_norm=True),
                np.ones((1, 3), int),
                np.array([3]),
                np.array([0]),
            ),
            ValueError,
            "ln_1_gamma",
        ),
        (
            lambda: tm.forward(
                tm.init_params(tm.Config(), 0), tm.Config(), np.array([[2, 99, 3]]), np.array([3]), np.array([0])
            ),
            ValueError,
            "ids",
        ),
        (
            lambda: tm.forward(
                tm.init_params(tm.Config(), 0), tm.Config(), np.ones((1, 3), int), np.array([3]), np.array([3])
            ),
            ValueError,
            "masked",
        ),
        (
            lambda: tm.forward(
                tm.init_params(tm.Config(), 0), tm.Config(), np.ones((1, 3), int), np.array([3]), np.array([1.0])
            ),
            TypeError,
            "masked must be integers",
        ),
        (
            lambda: tm.forward(
                tm.init_params(tm.Config(), 0),
                tm.Config(attention=False),
                np.ones((1, 3), int),
                np.array([2.5]),
                np.array([0]),
            ),
            TypeError,
            "lengths must be integers",
        ),
    ]


@pytest.mark.parametrize("call, error, message", _bad_calls())
def test_bad_input_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_forward_takes_nested_lists_like_arrays():
    config = tm.Config()
    params = tm.init_params(config, 0)
    from_lists = tm.forward(params, config, [[1, 2, 3]], [3], [0])[0]
    from_arrays = tm.forward(params, config, np.array([[1, 2, 3]]), np.array([3]), np.array([0]))[0]
    np.testing.assert_array_equal(from_lists, from_arrays)
