"""Generation speed with and without the KV cache, at 64, 256 and 1024 new tokens.

The model has the Tiny Shakespeare CPU shape (4 layers, 4 heads, d_model 128, 65 tokens) with a context
long enough for the whole generation, so the cache never has to slide. Untrained weights: speed does not
depend on what the weights say. Greedy decoding, the same step-by-step record both ways. Prints tokens/s
and the ratio; also checks the two ways produce identical tokens.

    python benchmarks/bench_generate.py [--threads N] [--device cpu]
"""

from __future__ import annotations

import argparse
import time

import torch

from attnlab.models import GPT, preset
from attnlab.sampling import generate
from attnlab.text import CharTokenizer
from attnlab.train import pick_device

LENGTHS = (64, 256, 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    tok = CharTokenizer.train("".join(chr(c) for c in range(32, 96)))  # 64 characters + <eot> = 65 tokens
    prompt = "ROMEO:"
    torch.manual_seed(0)
    model = GPT(preset("shakespeare-cpu", vocab_size=tok.vocab_size, context_length=max(LENGTHS) + 16)).to(device)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device {device}, "
        f"{sum(p.numel() for p in model.parameters()):,} parameters"
    )
    generate(model, tok, prompt, max_new_tokens=8, greedy=True, stop_at_eot=False)  # warm-up

    print(f"{'new tokens':>10} {'cache tok/s':>12} {'no cache tok/s':>15} {'speed-up':>9}  same tokens")
    for n in LENGTHS:
        rates, outputs = {}, {}
        for use_cache in (True, False):
            start = time.perf_counter()
            gen = generate(model, tok, prompt, max_new_tokens=n, greedy=True, use_cache=use_cache, stop_at_eot=False)
            rates[use_cache] = n / (time.perf_counter() - start)
            outputs[use_cache] = gen.new_ids
        print(
            f"{n:>10} {rates[True]:>12.0f} {rates[False]:>15.0f} {rates[True] / rates[False]:>8.2f}x  "
            f"{outputs[True] == outputs[False]}"
        )


if __name__ == "__main__":
    main()
