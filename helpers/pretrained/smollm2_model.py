"""The SmolLM2 model object: the decoder run over token ids, its next-token logits, and writing text.

Its KV cache is one helpers.kv_cache.KVCache (notebook 10's) per layer, holding the rotated keys and the values
of the 3 key/value heads. Sampling is notebook 11's (helpers.next_word: temperature, top-k, one uniform number
per token). The forward pass holds BLAS to one thread (helpers.threads): its products are small, and BLAS's own
threads, fighting over a laptop's cores with everything else, made it many times slower where we measured.
Use helpers.pretrained.load_smollm2() to get one.

Taught in 12_a_real_language_model.
"""

import numpy as np

from helpers._validate import as_rng
from helpers.kv_cache import KVCache
from helpers.next_word import check_sampling, next_word_distribution, sample
from helpers.pretrained.llama import decoder_layer, rms_norm
from helpers.threads import blas_single_thread

__all__ = ["MAX_PROMPT_TOKENS", "SYSTEM_PROMPT", "SmolLM2"]

MAX_PROMPT_TOKENS = 1024  # a longer prompt would take many seconds to read on a laptop
# the system message the model's chat template writes when the conversation has none
SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


class SmolLM2:
    """SmolLM2-135M-Instruct: 30 decoder layers (llama.py), the embedding table tied to the output layer.

    Shapes: logits(ids (T,)) -> (T, V) float32; attentions(ids (T,)) -> (n_layers, n_heads, T, T).
    """

    def __init__(self, config, tokenizer, embedding, layers, final_norm, metadata):
        self.config, self.tokenizer, self.metadata = config, tokenizer, metadata
        self.embedding = embedding  # (V, d_model) float32: row i is token i's vector, and its output weights
        self.layers, self.final_norm = layers, final_norm

    def __repr__(self):
        c = self.config
        return (
            f"SmolLM2(layers={c.n_layers}, d_model={c.d_model}, heads={c.n_heads}, kv_heads={c.n_kv_heads}, "
            f"d_ff={c.d_ff}, vocab={c.vocab_size})"
        )

    def n_parameters(self):
        """Every weight the model holds (the tied embedding counted once)."""
        return self.embedding.size + self.final_norm.size + sum(w.size for layer in self.layers for w in layer)

    def check_ids(self, ids, name="ids"):
        """ids as a 1-D int64 array of token ids, or a TypeError/ValueError naming what is wrong."""
        array = np.asarray(ids)
        if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
            raise TypeError(f"{name} must be a 1-D array of token ids (ints), got {array.dtype} {array.shape}")
        if array.size == 0:
            raise ValueError(f"{name} must hold at least one token id, got none")
        if array.min() < 0 or array.max() >= self.config.vocab_size:
            raise ValueError(
                f"{name} must be token ids in [0, {self.config.vocab_size}), got {array.min()}..{array.max()}"
            )
        if array.size > self.config.context:
            raise ValueError(f"{name} has {array.size} tokens; the model reads at most {self.config.context}")
        return array.astype(np.int64)

    def new_cache(self):
        """An empty KV cache: one helpers.kv_cache.KVCache per layer."""
        return [KVCache() for _ in self.layers]

    def hidden(self, ids, start=0, kv_caches=None, keep_weights=False):
        """The last layer's output (before the final norm) for token ids at positions start, start + 1, ...

        kv_caches: the model's cache (new_cache()) holding the tokens before `start`, extended here; None: ids is
        the whole sequence. keep_weights: also return each layer's attention weights.
        Shapes: ids (T,) -> (T, d_model), and a list of n_layers arrays (n_heads, T, T_k) (empty unless kept).
        """
        x = self.embedding[ids]  # (T, d_model): one row per token
        kept = []
        with blas_single_thread():
            for i, layer in enumerate(self.layers):
                x, weights = decoder_layer(x, layer, self.config, start, None if kv_caches is None else kv_caches[i])
                if keep_weights:
                    kept.append(weights)
        return x, kept

    def output(self, x):
        """The final RMSNorm, then the tied output layer: a score per vocabulary token.

        Shapes: x (T, d_model) -> (T, V).
        """
        with blas_single_thread():
            return rms_norm(x, self.final_norm, self.config.eps) @ self.embedding.T  # (T, 576) @ (576, V) -> (T, V)

    def logits(self, ids):
        """Every position's scores for the next token (causal: position t sees ids[: t + 1] only).

        Shapes: ids (T,) ints -> (T, V) float32.
        """
        return self.output(self.hidden(self.check_ids(ids))[0])

    def attentions(self, ids):
        """Every layer's and head's attention weights [layer, head, query, key]; rows sum to 1.

        Shapes: ids (T,) -> (n_layers, n_heads, T, T).
        """
        return np.stack(self.hidden(self.check_ids(ids), keep_weights=True)[1])

    def next_logits(self, ids, kv_caches=None):
        """The scores for the token after ids. With kv_caches, only the ids the cache has not seen are run.

        Shapes: ids (T,) -> (V,).
        """
        return self.read_next(ids, kv_caches)[0]

    def read_next(self, ids, kv_caches=None, keep_weights=False):
        """next_logits, and with keep_weights every layer's attention weights of the ids that ran.

        Shapes: ids (T,) -> (V,), and n_layers arrays (n_heads, T - cached, T) or None.
        """
        ids = self.check_ids(ids)
        start = 0 if kv_caches is None else len(kv_caches[0])
        if start >= len(ids):
            raise ValueError(f"the cache already holds {start} tokens; ids has {len(ids)}, so no token is new")
        x, weights = self.hidden(ids[start:], start, kv_caches, keep_weights=keep_weights)  # (T - start, d_model)
        return self.output(x[-1:])[0], weights  # only the last position's scores are needed: (1, V) -> (V,)

    def check_prompt(self, prompt, n_new):
        """The prompt's token ids, or a TypeError/ValueError for an empty or too long prompt or a bad n_new."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
        if isinstance(n_new, bool) or not isinstance(n_new, (int, np.integer)):
            raise TypeError(f"n_new must be an int >= 1 (the tokens to write), got {n_new!r}")
        if n_new < 1:
            raise ValueError(f"n_new must be an int >= 1 (the tokens to write), got {n_new}")
        ids = self.tokenizer.encode(prompt)
        if not ids:
            raise ValueError("prompt is empty: give the model some text to continue")
        if len(ids) > MAX_PROMPT_TOKENS:
            raise ValueError(f"prompt has {len(ids)} tokens; at most {MAX_PROMPT_TOKENS} are allowed here")
        if len(ids) + n_new > self.config.context:
            raise ValueError(
                f"prompt ({len(ids)} tokens) plus n_new ({n_new}) exceeds the model's context of "
                f"{self.config.context} tokens"
            )
        return ids

    def stop_ids(self, stop):
        """The token ids writing stops at: stop is None, or a token's text (e.g. "<|im_end|>") or a list of them."""
        texts = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
        ids = [self.tokenizer.encode(text) if isinstance(text, str) else None for text in texts]
        bad = [text for text, found in zip(texts, ids, strict=True) if found is None or len(found) != 1]
        if bad:
            raise ValueError(f"stop must be None or one token's text, or a list of them; {bad!r} is not one token")
        return {found[0] for found in ids}

    def generate_ids(self, ids, n_new, *, temperature=0.0, top_k=None, rng=None, cache=True, stop=None):
        """The token ids, then n_new more, each chosen from the model's next-token distribution.

        temperature=0 takes the most likely token (greedy); top_k keeps the k most likely; rng (a seed or a
        Generator; None: seed 0) gives one uniform number per token, so cache=True and False choose the same.
        stop: a token's text (or a list): writing ends after it, before n_new (None: always n_new tokens).
        Shapes: ids (T,) -> a list of T + n_new ints (fewer after a stop token).
        """
        ids = self.check_ids(ids).tolist()
        check_sampling(temperature, top_k, self.config.vocab_size)
        rng, stop_ids = as_rng(rng), self.stop_ids(stop)
        kv_caches = self.new_cache() if cache else None
        for _ in range(n_new):
            probs = next_word_distribution(self.next_logits(ids, kv_caches), temperature, top_k)  # (V,)
            ids.append(int(np.argmax(probs)) if temperature == 0 else sample(probs, rng))
            if ids[-1] in stop_ids:
                break
        return ids

    def generate(self, prompt, n_new, *, temperature=0.0, top_k=None, rng=None, cache=True, kv_cache=None, stop=None):
        """The prompt's text followed by n_new tokens the model writes, one at a time (see generate_ids).

        kv_cache is another name for cache. stop="<|im_end|>" ends a chat answer where the model ends it.
        Shapes: a string -> a string that starts with the prompt.
        """
        cache = cache if kv_cache is None else kv_cache
        ids = self.check_prompt(prompt, n_new)
        check_sampling(temperature, top_k, self.config.vocab_size)
        new = self.generate_ids(ids, n_new, temperature=temperature, top_k=top_k, rng=rng, cache=cache, stop=stop)
        return self.tokenizer.decode(new)

    @staticmethod
    def chat_prompt(message, system=SYSTEM_PROMPT):
        """A user's message in the chat format the model was tuned on (ChatML), ready for the assistant's answer."""
        if not isinstance(message, str) or not isinstance(system, str):
            raise TypeError("message and system must be strings")
        return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n"
