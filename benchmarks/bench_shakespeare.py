"""Tiny Shakespeare with nanoGPT's published CPU recipe, beside a baseline built from torch's own layers.

Recipe (nanoGPT README, "I only have a macbook"): 4 layers, 4 heads, d_model 128, context 64, batch 12,
2000 iterations, lr 1e-3 with 100 warm-up steps and cosine decay to 1e-4, AdamW (beta2 0.99, weight decay
0.1), gradient clipping 1.0, no dropout; characters; the first 90% of the text trains, the last 10% is
validation. nanoGPT reports val loss about 1.88; on the reference 2-core machine it runs about 47 ms per
iteration, and a GPT of the same shape made of torch's nn.TransformerEncoderLayer about 48 ms.

Both models here train with the same loop, data, seed and settings; only the model differs. Prints the val
loss (20 batches, as nanoGPT's CPU command estimates it, and 200 batches) and ms per iteration.

    python benchmarks/bench_shakespeare.py [--steps 2000] [--only attnlab|torch] [--device cpu] [--threads N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import nn

from attnlab.models import GPT, preset
from attnlab.text import read_corpus, train_tokenizer
from attnlab.train import TokenData, Trainer, TrainConfig, corpus_defaults, pick_device

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare" / "input.txt"


class TorchLayersGPT(nn.Module):
    """The baseline: the same GPT shape from torch's nn.TransformerEncoderLayer (pre-LN, GELU, causal)."""

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.tok = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = nn.Embedding(c.context_length, c.d_model)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)
        layer = nn.TransformerEncoderLayer(c.d_model, c.n_heads, dim_feedforward=c.hidden, dropout=c.dropout,
                                           activation="gelu", batch_first=True, norm_first=True, bias=c.bias)
        self.blocks = nn.TransformerEncoder(layer, c.n_layers, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(c.d_model)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))  # (B, T, d_model)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        x = self.blocks(x, mask=mask, is_causal=True)
        return self.lm_head(self.ln_f(x))  # (B, T, V)


def train_one(name: str, model: nn.Module, data: TokenData, cfg: TrainConfig, device) -> dict:
    trainer = Trainer(model, data, cfg, device=device)
    marks: dict[int, float] = {}
    trainer.run(callback=lambda e: marks.__setitem__(e["step"], e["seconds"]) if e["type"] == "step" else None)
    last = max(s for s in marks if s < cfg.steps)  # before the final validation pass; after step 1's warm-up
    val20 = trainer.estimate_val_loss()
    trainer.cfg.eval_iters = 200
    val200 = trainer.estimate_val_loss()
    result = dict(name=name, ms_per_iter=1000 * (marks[last] - marks[1]) / (last - 1), val20=val20, val200=val200,
                  seconds=marks[cfg.steps], loss=trainer.history[-1]["loss"])
    print(f"{name:8s} val loss {val20:.4f} (20 batches) {val200:.4f} (200 batches), train loss {result['loss']:.4f}, "
          f"{result['ms_per_iter']:.1f} ms/iter, {result['seconds']:.0f} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--only", choices=("attnlab", "torch"), default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not DATA.is_file():
        raise SystemExit(f"Tiny Shakespeare not found at {DATA}")
    device = pick_device(args.device)
    texts = read_corpus(str(DATA))
    tok = train_tokenizer("char", texts)
    data = TokenData.from_texts(texts, tok, val_fraction=0.1)
    preset_name, settings = corpus_defaults(str(DATA))
    settings = {**settings, "steps": args.steps, "eval_interval": 0, "log_interval": max(1, min(100, args.steps // 10)), "seed": args.seed}
    config = preset(preset_name, vocab_size=tok.vocab_size)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {device}; {len(data.train):,} train / "
          f"{len(data.val):,} val tokens, vocab {tok.vocab_size}; {config}")

    results = []
    for name, build in (("attnlab", GPT), ("torch", TorchLayersGPT)):
        if args.only and args.only != name:
            continue
        torch.manual_seed(args.seed)
        model = build(config)
        print(f"{name}: {sum(p.numel() for p in model.parameters()):,} parameters", flush=True)
        results.append(train_one(name, model, data, TrainConfig(**settings), device))
    if len(results) == 2:
        ours, base = results
        print(f"attnlab / torch layers: {ours['ms_per_iter'] / base['ms_per_iter']:.2f}x the time per iteration "
              f"(<= 1.00 means no slower); val loss {ours['val20']:.4f} vs {base['val20']:.4f} (nanoGPT: ~1.88)")


if __name__ == "__main__":
    main()
