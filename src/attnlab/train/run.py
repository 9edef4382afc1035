"""A training run from a corpus name to a checkpoint: what `attnlab train` and the web lab's train button do.

corpus -> texts -> tokenizer -> GPT (seeded) -> Trainer -> checkpoint directory. Sizes and training
settings default by corpus (a tiny model for the built-in poems, nanoGPT's CPU recipe for files); anything
passed explicitly overrides them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from attnlab.models import GPT, preset as model_preset
from attnlab.text import BUILTIN_TEXTS, read_corpus, train_tokenizer
from attnlab.train.checkpoint import CheckpointError, load_checkpoint, load_train_state, save_checkpoint
from attnlab.train.data import TokenData
from attnlab.train.device import pick_device
from attnlab.train.loop import Probe, Trainer, TrainConfig

# Per corpus: (model preset, training settings). Chosen so both poems are recited exactly after training,
# for every seed we tried, in well under a few seconds on a 2-core CPU.
DEFAULTS: dict[str, tuple[str, dict]] = {
    "poem": ("poem-tiny", dict(steps=60, lr=1e-2, schedule="cosine", weight_decay=0.0)),
    "jingyesi": ("jingyesi-tiny", dict(steps=150, lr=1e-2, schedule="cosine", weight_decay=0.0)),
}
# Any corpus file: nanoGPT's Tiny Shakespeare CPU recipe.
FILE_DEFAULTS = ("shakespeare-cpu", dict(steps=2000, lr=1e-3, batch_size=12, warmup_steps=100, eval_interval=250))

PROBE_CONTEXT, PROBE_TARGET = "床前明月", "光"  # the course's example: p(光 | 床前明月)

# The largest run `new_run` builds: refused before any memory is taken, with what it would have needed.
MAX_LAYERS = 256
MAX_TRAIN_BYTES = 8 * 2**30


@dataclass
class SizeEstimate:
    parameters: int
    buffers: int  # non-learned tensors (positions, masks), in elements
    train_bytes: int  # float32 weights + gradients + AdamW's two moments + activations of one step, roughly


def estimate_size(model_cfg, batch_size: int = 12) -> SizeEstimate:
    """What a GPT of this config holds, counted on the meta device (nothing is allocated).

    Every block is the same size, so one- and two-block models give the per-block count in closed form
    and no model with thousands of blocks has to be built just to count it.
    """
    with torch.device("meta"):
        one = GPT(dataclasses.replace(model_cfg, n_layers=1))
        two = GPT(dataclasses.replace(model_cfg, n_layers=2))

    def count(m):
        return (sum(p.numel() for p in m.parameters()), sum(b.numel() for b in m.buffers()))

    (p1, b1), (p2, b2) = count(one), count(two)
    layers = model_cfg.n_layers
    params, buffers = p1 + (layers - 1) * (p2 - p1), b1 + (layers - 1) * (b2 - b1)
    c = model_cfg
    t, d, d_ff = c.context_length, c.d_model, c.d_ff or 4 * c.d_model
    # per block and window: q, k, v, attention scores and weights (H·T²), FFN hidden, residual and norms
    activations = batch_size * layers * (2 * c.n_heads * t * t + t * (8 * d + 2 * d_ff)) + batch_size * t * 2 * c.vocab_size
    return SizeEstimate(params, buffers, 4 * (4 * params + buffers + activations))


def check_size(model_cfg, batch_size: int = 12) -> SizeEstimate:
    """ValueError saying what the model would need and the limit, when it is too big to train here."""
    if model_cfg.n_layers > MAX_LAYERS:
        raise ValueError(f"--layers {model_cfg.n_layers} is too many: the limit is {MAX_LAYERS}")
    size = estimate_size(model_cfg, batch_size)
    if size.train_bytes > MAX_TRAIN_BYTES:
        raise ValueError(
            f"this model is too big to train here: {model_cfg.n_layers} layers, d_model {model_cfg.d_model}, "
            f"context {model_cfg.context_length}, vocabulary {model_cfg.vocab_size} make {size.parameters:,} "
            f"parameters and need about {_gib(size.train_bytes)} to train (batch {batch_size}); "
            f"the limit is {_gib(MAX_TRAIN_BYTES)}. Use smaller --layers/--d-model/--context/--batch-size")
    return size


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def corpus_defaults(corpus: str) -> tuple[str, dict]:
    return DEFAULTS.get(corpus, FILE_DEFAULTS)


def make_probe(tokenizer, data: TokenData) -> Probe:
    """p(光 | 床前明月) when the tokenizer spells both as characters, else the corpus's own 5th token."""
    ctx, target = PROBE_CONTEXT, PROBE_TARGET
    if not tokenizer.unknown(ctx + target):
        ctx_ids, target_ids = tokenizer.encode(ctx), tokenizer.encode(target)
        if len(target_ids) == 1:
            return Probe(ctx_ids, target_ids[0], ctx, target)
    ids = data.train[:5].tolist()
    return Probe(ids[:-1], ids[-1], tokenizer.decode(ids[:-1]), tokenizer.token(ids[-1]))


@dataclass
class Run:
    """Everything one training run holds; `trainer.run()` trains it, `save(out)` writes the checkpoint."""

    corpus: str
    texts: list[str]
    tokenizer: object
    model: GPT
    data: TokenData
    trainer: Trainer

    @property
    def config(self) -> TrainConfig:
        return self.trainer.cfg

    def meta(self) -> dict:
        t = self.trainer
        last = t.history[-1] if t.history else {}
        return {
            "corpus": self.corpus,
            "tokenizer": self.tokenizer.kind,
            "train": self.config.to_dict(),
            "step": t.step,
            "loss": last.get("loss"),
            "val_loss": next((h["val_loss"] for h in reversed(t.history) if h.get("val_loss") is not None), None),
            "probe": dataclasses.asdict(t.probe) if t.probe else None,
        }

    def save(self, out: str | Path) -> Path:
        return save_checkpoint(out, self.model, self.tokenizer, self.meta(), self.trainer.state())


def new_run(
    corpus: str = "poem",
    *,
    tokenizer: str = "char",
    bpe_vocab_size: int = 512,
    preset: str | None = None,
    layers: int | None = None,
    heads: int | None = None,
    d_model: int | None = None,
    context: int | None = None,
    dropout: float | None = None,
    device: str = "auto",
    **train_settings,
) -> Run:
    """A fresh, seeded run on `corpus` (a built-in name or a file path)."""
    preset_name, defaults = corpus_defaults(corpus)
    cfg = TrainConfig(**{**defaults, **{k: v for k, v in train_settings.items() if v is not None}})
    texts = read_corpus(corpus)
    tok = train_tokenizer(tokenizer, texts, vocab_size=bpe_vocab_size)
    overrides = {k: v for k, v in dict(n_layers=layers, n_heads=heads, d_model=d_model, context_length=context,
                                       dropout=dropout).items() if v is not None}
    model_cfg = model_preset(preset or preset_name, vocab_size=tok.vocab_size, **overrides)
    check_size(model_cfg, cfg.batch_size)  # before anything big is allocated
    dev = pick_device(device)
    data = TokenData.from_texts(texts, tok, val_fraction=0.0 if corpus in BUILTIN_TEXTS else 0.1)
    torch.manual_seed(cfg.seed)  # the model's initial weights come from the seed
    model = GPT(model_cfg)
    trainer = Trainer(model, data, cfg, device=dev, probe=make_probe(tok, data))
    if corpus not in BUILTIN_TEXTS:
        corpus = str(Path(corpus).resolve())  # so --resume finds it from any directory
    return Run(corpus, texts, tok, model, data, trainer)


def resume_run(checkpoint: str | Path, *, corpus: str | None = None, device: str = "auto", **train_settings) -> Run:
    """Continue a saved run: same model, tokenizer, optimizer and random state; settings passed override."""
    ckpt = load_checkpoint(checkpoint)
    scalars, tensors = load_train_state(checkpoint)
    meta = ckpt.meta
    corpus = corpus or meta.get("corpus")
    if not corpus:
        raise CheckpointError(f"{checkpoint}/config.json does not say which corpus it was trained on; pass --corpus")
    stored = dict(meta.get("train") or {})
    cfg = TrainConfig.from_dict({**stored, **{k: v for k, v in train_settings.items() if v is not None}})
    step = int(scalars.get("step", 0))
    if cfg.steps <= step:
        raise ValueError(f"{checkpoint} has already trained {step} steps; to resume, ask for more (--steps > {step})")
    texts = read_corpus(corpus)
    data = TokenData.from_texts(texts, ckpt.tokenizer, val_fraction=0.0 if corpus in BUILTIN_TEXTS else 0.1)
    dev = pick_device(device)
    ckpt.model.train()
    trainer = Trainer(ckpt.model, data, cfg, device=dev, probe=make_probe(ckpt.tokenizer, data))
    trainer.load_state(scalars, tensors)
    return Run(corpus, texts, ckpt.tokenizer, ckpt.model, data, trainer)
