"""GQA and MQA against multi-head attention: the KV cache's bytes, decoding speed, and held-out loss.

(a) Cache and speed. One model shape (4 layers, d_model 128, 8 query heads, untrained weights: speed does not
depend on what they say), with n_kv_heads = 8 (MHA), 2 (GQA) and 1 (MQA). Each decodes 1024 new tokens greedily
with the KV cache after an 8-token prompt (bench_generate.py's setting, written as a bare loop so that the model's
own cost is timed, not generate()'s bookkeeping). The cache's bytes are read from its tensors and printed beside
the formula 2 · layers · kv_heads · d_k · T · batch · bytes. Speed is timed round-robin (MHA, GQA, MQA, again ...)
so a change in the machine's load hits all three alike; the median is kept, and every ratio is against MHA
measured in the same run. Then one layer's attention step at that length, alone: the model's way (repeat each K/V
head for its group, then torch's SDPA) against torch's SDPA with enable_gqa=True (no copy), and the cache append.

(b) Quality. 唐诗三百首 (/work/shared/data, the last 10% of poems held out), character tokens, a small model
(2 layers, d_model 64, 4 query heads, context 64, no dropout) trained the same number of steps with the same
seeds and batches for n_kv_heads = 4, 2, 1; the held-out loss at the end (20 fixed held-out batches), per seed
and its mean, beside the unigram control (character frequencies of the training poems, add-one smoothed). The
claim is the difference to MHA against the spread between seeds.

On a shared, loaded machine --threads 1 gives steadier timings. About 4 minutes on one CPU thread.

    python benchmarks/bench_gqa.py [--threads N] [--steps 300] [--seeds 2] [--new-tokens 1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.benchmark import Timer

from attnlab.lessons.common.claims import lead
from attnlab.models import GPT, GPTConfig
from attnlab.train import TrainConfig, Trainer, new_run

CORPUS = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "chinese-poetry"
    / "蒙学"
    / "tangshisanbaishou.simplified.json"
)
PROMPT = 8


def cache_bytes(cache) -> int:
    """Bytes held by the cache's tensors, read from the tensors themselves."""
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.k, layer.v))


@torch.inference_mode()
def decode(model: GPT, new_tokens: int, batch: int) -> tuple[float, object]:
    """Greedy decoding with the KV cache: seconds for `new_tokens` steps after the prompt, and the cache."""
    idx = torch.zeros(batch, PROMPT, dtype=torch.long)
    cache = model.new_kv_cache()
    start = time.perf_counter()
    logits = model(idx, kv_cache=cache)  # the prompt, at once
    for _ in range(new_tokens):
        nxt = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        logits = model(nxt, kv_cache=cache)  # one token: the cache gives the past keys and values
    return time.perf_counter() - start, cache


def cache_and_speed(new_tokens: int, batch: int, repeats: int) -> None:
    heads, variants = 8, {"MHA": None, "GQA": 2, "MQA": 1}
    base = GPTConfig(
        vocab_size=65,
        context_length=PROMPT + new_tokens + 8,
        d_model=128,
        n_heads=heads,
        n_layers=4,
        norm_first=True,
        activation="gelu",
    )
    models = {}
    for name, kv in variants.items():
        torch.manual_seed(0)
        models[name] = GPT(dataclasses.replace(base, n_kv_heads=kv)).eval()
        decode(models[name], 8, batch)  # warm-up
    times = {name: [] for name in variants}
    caches = {}
    for _ in range(repeats):
        for name, model in models.items():
            seconds, caches[name] = decode(model, new_tokens, batch)
            times[name].append(seconds)
    T, d_k, layers = PROMPT + new_tokens, base.d_model // heads, base.n_layers
    print(
        f"(a) {layers} layers, d_model {base.d_model}, {heads} query heads (d_k {d_k}), batch {batch}, "
        f"{new_tokens} new tokens after a {PROMPT}-token prompt (T = {T}), float32, median of {repeats}"
    )
    print(
        f"{'':4} {'kv heads':>8} {'params':>9} {'cache bytes':>12} {'formula':>12} {'vs MHA':>7} "
        f"{'tok/s':>7} {'speed vs MHA':>12}"
    )
    rate = {name: new_tokens / statistics.median(ts) for name, ts in times.items()}
    for name, model in models.items():
        kv = variants[name] or heads
        measured = cache_bytes(caches[name])
        formula = 2 * layers * kv * d_k * T * batch * 4  # 2 (K, V) · layers · kv_heads · d_k · T · batch · bytes
        assert caches[name].layers[0].k.shape == (batch, kv, T, d_k)
        print(
            f"{name:4} {kv:>8} {sum(p.numel() for p in model.parameters()):>9,} {measured:>12,} {formula:>12,} "
            f"{measured / cache_bytes(caches['MHA']):>6.3f}x {rate[name]:>7.0f} {rate[name] / rate['MHA']:>11.2f}x"
        )
    spread = {name: (min(ts), max(ts)) for name, ts in times.items()}
    print("    seconds per run (min-max): " + ", ".join(f"{n} {a:.2f}-{b:.2f}" for n, (a, b) in spread.items()))
    attention_step(heads, T, d_k, batch)


def attention_step(heads: int, T: int, d_k: int, batch: int) -> None:
    """One decoding step of one layer's attention, timed alone (microseconds, torch.utils.benchmark)."""
    print(f"    one layer's attention for one new token over T = {T} keys, microseconds:")
    print(f"    {'':4} {'repeat + SDPA (ours)':>21} {'SDPA enable_gqa':>16} {'cache append':>13}")
    for name, kv in (("MHA", heads), ("GQA", 2), ("MQA", 1)):
        q = torch.randn(batch, heads, 1, d_k)  # (B, H, 1, d_k)
        k, v = torch.randn(batch, kv, T, d_k), torch.randn(batch, kv, T, d_k)  # (B, H_kv, T, d_k)
        mask = torch.ones(1, T, dtype=torch.bool)  # the causal mask of the last position: every key
        g = heads // kv
        env = dict(
            F=F,
            torch=torch,
            q=q,
            k=k,
            v=v,
            mask=mask,
            rep=(lambda x: x) if g == 1 else (lambda x: x.repeat_interleave(g, dim=1)),
        )  # as repeat_kv
        stmts = (
            "F.scaled_dot_product_attention(q, rep(k), rep(v), attn_mask=mask)",
            "F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)",  # no copy
            "torch.cat((k, k[:, :, :1]), dim=-2), torch.cat((v, v[:, :, :1]), dim=-2)",
        )
        us = [Timer(stmt, globals=env).blocked_autorange(min_run_time=0.3).median * 1e6 for stmt in stmts]
        print(f"    {name:4} {us[0]:>21.0f} {us[1]:>16.0f} {us[2]:>13.0f}")


def quality(steps: int, seeds: int) -> None:
    if not CORPUS.is_file():
        raise SystemExit(f"corpus not found at {CORPUS}")
    variants = {"MHA": None, "GQA": 2, "MQA": 1}
    losses = {name: [] for name in variants}
    shape = dict(layers=2, heads=4, d_model=64, context=64, dropout=0.0)
    settings = dict(steps=steps, batch_size=16, lr=2e-3, eval_iters=20, log_interval=steps)
    start = time.perf_counter()
    for seed in range(seeds):
        run = new_run(str(CORPUS), device="cpu", seed=seed, **shape, **settings)  # the corpus, split and tokenizer
        for name, kv in variants.items():
            torch.manual_seed(seed)  # the same initial-weight stream for each variant
            model = GPT(dataclasses.replace(run.model.config, n_kv_heads=kv))
            trainer = Trainer(model, run.data, TrainConfig(seed=seed, **settings))  # the same batches for each
            losses[name].append(trainer.run().val_loss)
    cfg = run.model.config
    counts = torch.bincount(run.data.train, minlength=cfg.vocab_size).double() + 1  # add-one smoothed frequencies
    unigram = float(-(counts / counts.sum()).log()[run.data.val].mean())  # a model that ignores the context
    print(
        f"\n(b) 唐诗三百首: {len(run.data.train):,} train / {len(run.data.val):,} held-out tokens (the last 10% of "
        f"poems), vocab {cfg.vocab_size}; {cfg.n_layers} layers, d_model {cfg.d_model}, "
        f"{cfg.n_heads} query heads, "
        f"context {cfg.context_length}; {steps} steps, batch {settings['batch_size']}, lr {settings['lr']}, "
        f"seeds 0..{seeds - 1}; {time.perf_counter() - start:.0f} s"
    )
    print(f"{'':4} {'kv heads':>8} {'params':>8}  held-out loss per seed{'':8} {'mean':>7} {'vs MHA':>8}")
    mean = {name: statistics.mean(v) for name, v in losses.items()}
    print(f"{'':4} controls: unigram frequencies {unigram:.4f}, uniform ln V {math.log(cfg.vocab_size):.4f}")
    for name, kv in variants.items():
        n = sum(p.numel() for p in GPT(dataclasses.replace(cfg, n_kv_heads=kv)).parameters())
        print(
            f"{name:4} {kv or cfg.n_heads:>8} {n:>8,}  {'  '.join(f'{x:.4f}' for x in losses[name]):<30} "
            f"{mean[name]:>7.4f} {mean[name] - mean['MHA']:>+8.4f}"
        )
    # margin: the largest spread between seeds of any variant (a difference smaller than that is a tie)
    margin = max(max(v) - min(v) for v in losses.values()) if seeds > 1 else 0.02
    for name in ("GQA", "MQA"):
        c = lead(
            f"gqa.{name.lower()}",
            f"{name} loses held-out loss against MHA",
            "en",
            measured=mean[name],
            baseline=mean["MHA"],
            margin=max(margin, 1e-3),
            control="MHA, same steps, seeds and batches",
        )
        print(
            f"claim: {name}'s mean loss above MHA's by at least the seed spread {max(margin, 1e-3):.4f}: "
            f"{c.status} ({c.versus})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--new-tokens", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), cpu")
    cache_and_speed(args.new_tokens, args.batch, args.repeats)
    if not args.skip_quality:
        quality(args.steps, args.seeds)


if __name__ == "__main__":
    main()
