"""SmolLM2-135M-Instruct in numpy: loading, decoding with and without the KV cache, memory, and the reference.

    python benchmarks/smollm2_speed.py              # everything (a few minutes on a quiet 2-core machine)
    python benchmarks/smollm2_speed.py --repeats 1  # one run of each timing instead of the best of 3
    python benchmarks/smollm2_speed.py --browser    # also in Pyodide under node (needs node and make lite-mirror)

Prints, with the machine's load average (timings taken under load are slower and noisier; ratios hold better):
- loading, file to ready model, and where the time goes (end to end in a fresh Python, then step by step);
- decoding: ms per token at several context lengths with the cache (one new token against T cached ones) and
  without it (the whole sequence rerun for the last token's logits), and their ratio; a 100-token greedy run;
- peak memory (maximum resident set) of a fresh Python that loads the model and writes 200 tokens;
- the KV cache's bytes per token with grouped-query attention (3 key/value heads) against full multi-head (9);
- a rough guess at the browser (numpy without BLAS): the per-token products done by np.einsum instead of BLAS;
  with --browser, the model itself in Pyodide 0.27.7 (the JupyterLite site's) run by node: loading, the prompt,
  ms per decoded token (node's WebAssembly engine is V8, as in Chromium; no browser around it);
- the distance to transformers (tests/data/smollm2_reference.npz): max |logit difference|, tokens equal.
The model holds BLAS to one thread itself (helpers.pretrained.smollm2_model).
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from helpers.pretrained import gguf
from helpers.pretrained.smollm2 import Tokenizer, build_layers, load_smollm2, read_config, smollm2_path
from helpers.threads import blas_single_thread

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "The attention mechanism lets a language model"
LENGTHS = (25, 50, 100, 200, 400)
NODE_RUNNER = """
const { loadPyodide } = require(process.argv[2] + "/pyodide.js");
(async () => {
  const py = await loadPyodide({ indexURL: process.argv[2] + "/" });
  await py.loadPackage(process.argv[3]);
  for (const [folder, where] of [[process.argv[4], "/repo"], [process.argv[5], "/weights"]]) {
    py.FS.mkdir(where);
    py.FS.mount(py.FS.filesystems.NODEFS, { root: folder }, where);
  }
  await py.runPythonAsync(process.argv[6]);
})();
"""
IN_PYODIDE = """
import sys, time
sys.path.insert(0, "/repo")
import numpy as np
from helpers.pretrained.smollm2 import load_smollm2_from
start = time.perf_counter()
model = load_smollm2_from("/weights/SmolLM2-135M-Instruct.Q4_1.gguf")
seconds, backend = time.perf_counter() - start, type(model.tokenizer._backend).__name__
print(f"Pyodide under node (numpy {np.__version__}, tokenizer {backend}): loading {seconds:.1f} s")
ids, kv_caches = model.tokenizer.encode("The attention mechanism lets a language model"), model.new_cache()
start = time.perf_counter()
ids.append(int(np.argmax(model.next_logits(ids, kv_caches))))
print(f"the {len(ids) - 1}-token prompt: {time.perf_counter() - start:.2f} s")
times = []
for _ in range(10):
    start = time.perf_counter()
    ids.append(int(np.argmax(model.next_logits(ids, kv_caches))))
    times.append(time.perf_counter() - start)
best, median = 1000 * min(times), 1000 * sorted(times)[5]
print(f"decoding with the cache: {best:.0f} ms per token (best of 10), median {median:.0f}")
print(repr(model.tokenizer.decode(ids)))
"""
PEAK = """
import resource, time
from helpers.pretrained import load_smollm2
start = time.perf_counter()
model = load_smollm2()
loaded = time.perf_counter() - start
model.generate("The attention mechanism lets a language model", 200)
print(loaded, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def best_of(repeats, work):
    """The shortest of `repeats` runs of work(), in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def load_steps():
    """Seconds of each step of loading, done one after another as load_smollm2 does them."""
    steps, start = {}, time.perf_counter()

    def step(name):
        nonlocal start
        steps[name] = time.perf_counter() - start
        start = time.perf_counter()

    data = smollm2_path().read_bytes()
    step("read the file (98 MB)")
    hashlib.sha256(data).hexdigest()
    step("sha256 of the file")
    metadata, tensors = gguf.read_gguf(data)
    step("parse the GGUF (metadata, 98k strings)")
    config = read_config(metadata)
    tokens, kinds = metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.token_type"]
    Tokenizer(tokens, metadata["tokenizer.ggml.merges"], [t for t, k in zip(tokens, kinds, strict=True) if k == 3])
    step("build the tokenizer")
    gguf.dequantize(tensors["token_embd.weight"])
    step("dequantise the embedding (Q8_0, 28M)")
    build_layers(tensors, config)
    step("dequantise 30 layers (Q4_1, 106M)")
    return steps


def fresh_python(code):
    """What a fresh Python prints after running code (from the repository's root)."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout


def loading_table():
    loaded, peak_mib = map(float, fresh_python(PEAK).split())
    print(f"\nLoading, file to ready model, in a fresh Python: {loaded:.2f} s (budget 10 s)")
    print(
        "Peak memory (max RSS) of a fresh Python that loads it and writes 200 tokens: "
        f"{peak_mib:,.0f} MiB (budget 1 GiB)"
    )
    steps = load_steps()
    print(f"{'step':<42}{'s':>7}{'share':>8}")
    for name, seconds in steps.items():
        print(f"{name:<42}{seconds:>7.2f}{seconds / sum(steps.values()):>8.0%}")
    print(f"{'total of the steps':<42}{sum(steps.values()):>7.2f}")


def per_token(model, ids, cache, repeats):
    """Seconds to get the logits of the token after ids: one step against a filled cache, or the whole rerun."""
    if not cache:
        return best_of(repeats, lambda: model.next_logits(ids))
    times = []
    for _ in range(repeats):
        kv_caches = model.new_cache()
        model.next_logits(ids[:-1], kv_caches)  # the cache holds every token but the last
        start = time.perf_counter()
        model.next_logits(ids, kv_caches)
        times.append(time.perf_counter() - start)
    return min(times)


def decoding_table(model, repeats):
    ids = np.array(model.generate_ids(model.tokenizer.encode(PROMPT), max(LENGTHS)))  # a real text to read
    print(f"\nDecoding, ms per token (one BLAS thread; best of {repeats})")
    print(f"{'context T':>10}{'with cache':>12}{'rerun':>10}{'rerun / cache':>15}")
    for T in LENGTHS:
        cached, rerun = per_token(model, ids[:T], True, repeats), per_token(model, ids[:T], False, repeats)
        print(f"{T:>10}{1000 * cached:>12.1f}{1000 * rerun:>10.1f}{rerun / cached:>15.1f}")
    prompt = model.tokenizer.encode(PROMPT)
    for cache in (True, False):
        n = 100 if cache else 20
        seconds = best_of(1, lambda c=cache, n=n: model.generate_ids(prompt, n, cache=c))
        label = "with the cache" if cache else "without the cache"
        print(
            f"greedy, {len(prompt)}-token prompt + {n} tokens {label}: "
            f"{1000 * seconds / n:.1f} ms per token (prompt included)"
        )


def cache_bytes(model):
    c = model.config
    gqa = c.n_layers * 2 * c.n_kv_heads * c.d_head * 4  # keys and values, every layer, float32
    full = c.n_layers * 2 * c.n_heads * c.d_head * 4
    kv_caches = model.new_cache()
    model.next_logits(model.tokenizer.encode(PROMPT), kv_caches)
    stored = sum(cache.nbytes for cache in kv_caches) / len(kv_caches[0])
    print(
        f"\nKV cache per token: {gqa:,} bytes with {c.n_kv_heads} key/value heads (measured: {stored:,.0f}), "
        f"{full:,} with {c.n_heads} (full multi-head): {full / gqa:.0f}x less"
    )
    print(
        f"at the full context of {c.context:,} tokens: {gqa * c.context / 2**20:,.0f} MiB "
        f"against {full * c.context / 2**20:,.0f} MiB"
    )


def browser_guess(model, repeats):
    """The products of one decoding step (30 layers' 7 matrices and the output layer) with einsum, no BLAS."""
    x = np.ones(576, dtype=np.float32)
    matrices = [
        w for layer in model.layers for w in (layer.W_q, layer.W_k, layer.W_v, layer.W_o, layer.W_gate, layer.W_up)
    ]
    downs = [layer.W_down for layer in model.layers]
    h = np.ones(1536, dtype=np.float32)

    def products(use_blas):
        if use_blas:
            for w in matrices:
                _ = x @ w
            for w in downs:
                _ = h @ w
            _ = model.embedding @ x
        else:
            for w in matrices:
                np.einsum("i,ij->j", x, w)
            for w in downs:
                np.einsum("i,ij->j", h, w)
            np.einsum("vi,i->v", model.embedding, x)

    with blas_single_thread():
        blas, einsum = best_of(repeats, lambda: products(True)), best_of(repeats, lambda: products(False))
    print(
        f"\nOne decoding step's matrix products: {1000 * blas:.1f} ms with BLAS (one thread), "
        f"{1000 * einsum:.1f} ms with np.einsum (no BLAS): {einsum / blas:.1f}x"
    )
    print(
        "A rough guess for the browser, not a measurement: numpy there has no BLAS (its own loops, maybe slower "
        "than einsum's), and WebAssembly runs slower than native code."
    )


def pyodide_table():
    """The model in Pyodide under node, from the JupyterLite mirror's files (make lite-mirror)."""
    mirror = ROOT / "build" / "lite-mirror"
    wheels = sorted(mirror.glob("numpy-*.whl"))
    if shutil.which("node") is None or not (mirror / "pyodide.js").is_file() or not wheels:
        print("\n--browser: needs node on PATH and build/lite-mirror (make lite-mirror); skipped")
        return
    weights = smollm2_path().parent
    with tempfile.NamedTemporaryFile("w", suffix=".js", delete=False) as runner:
        runner.write(NODE_RUNNER)
    command = ["node", runner.name, str(mirror), str(wheels[0]), str(ROOT), str(weights), IN_PYODIDE]
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    os.unlink(runner.name)
    print("\n" + "\n".join(line for line in (out.stdout + out.stderr).splitlines() if not line.startswith("Load")))


def reference_table(model):
    reference = np.load(ROOT / "tests" / "data" / "smollm2_reference.npz")
    print("\nAgainst transformers (same GGUF file, float32), at the stored columns of every position:")
    for name in ("plain", "chat"):
        ids, n = reference[f"{name}_ids"], int(reference[f"{name}_n_prompt"])
        logits = model.logits(ids)[:, reference[f"{name}_columns"]]
        written = model.generate_ids(ids[:n], len(ids) - n)
        print(
            f"{name:>6}: max |logit difference| {np.abs(logits - reference[f'{name}_logits']).max():.1e} "
            "(budget 1e-3); "
            f"{len(ids) - n} greedy tokens equal: {written == ids.tolist()}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--browser", action="store_true", help="also run the model in Pyodide under node")
    args = parser.parse_args(argv)
    print(
        "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()),
        f"on {os.cpu_count()} cores; numpy {np.__version__}",
    )
    loading_table()
    model = load_smollm2()
    decoding_table(model, args.repeats)
    cache_bytes(model)
    browser_guess(model, args.repeats)
    reference_table(model)
    if args.browser:
        pyodide_table()
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
