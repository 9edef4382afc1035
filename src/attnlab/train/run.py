"""A training run from a corpus name to a checkpoint: what `attnlab train` and the web lab's train button do.

corpus -> texts -> tokenizer -> GPT (seeded) -> Trainer -> checkpoint directory. Sizes and training
settings default by corpus (a tiny model for the built-in poems, nanoGPT's CPU recipe for files); anything
passed explicitly overrides them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attnlab.models import GPT, preset as model_preset
from attnlab.text import BUILTIN_TEXTS, read_corpus, train_tokenizer
from attnlab.train.checkpoint import CheckpointError, load_checkpoint, load_train_state, save_checkpoint
from attnlab.train.data import TokenData
from attnlab.train.device import pick_device
from attnlab.train.integrity import sha256_file
from attnlab.train.loop import Probe, Trainer, TrainConfig
from attnlab.train.size import MAX_LAYERS, MAX_TRAIN_BYTES, SizeEstimate, check_size, estimate_size  # noqa: F401

# Per corpus: (model preset, training settings). Chosen so both poems are recited exactly after training,
# for every seed we tried, in well under a few seconds on a 2-core CPU.
DEFAULTS: dict[str, tuple[str, dict]] = {
    "poem": ("poem-tiny", dict(steps=60, lr=1e-2, schedule="cosine", weight_decay=0.0)),
    "jingyesi": ("jingyesi-tiny", dict(steps=150, lr=1e-2, schedule="cosine", weight_decay=0.0)),
}
# Any corpus file: nanoGPT's Tiny Shakespeare CPU recipe.
# Progress every 10 steps: reading the loss waits for the device, and a probe is one more forward pass.
FILE_DEFAULTS = ("shakespeare-cpu", dict(steps=2000, lr=1e-3, batch_size=12, warmup_steps=100, eval_interval=250,
                                         log_interval=10))

PROBE_CONTEXT, PROBE_TARGET = "床前明月", "光"  # the course's example: p(光 | 床前明月)


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
    corpus_sha256: str | None = None  # of a corpus file, so --resume reads it only as it was
    warnings: list[str] = field(default_factory=list)  # about the checkpoint it resumed, said once

    @property
    def config(self) -> TrainConfig:
        return self.trainer.cfg

    def meta(self) -> dict:
        t = self.trainer
        last = t.history[-1] if t.history else {}
        return {
            "corpus": self.corpus,
            "corpus_sha256": self.corpus_sha256,
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
    ablations: tuple[str, ...] = (),
    **train_settings,
) -> Run:
    """A fresh, seeded run on `corpus` (a built-in name or a file path)."""
    preset_name, defaults = corpus_defaults(corpus)
    cfg = TrainConfig(**{**defaults, **{k: v for k, v in train_settings.items() if v is not None}})
    texts = read_corpus(corpus)
    tok = train_tokenizer(tokenizer, texts, vocab_size=bpe_vocab_size)
    overrides = {k: v for k, v in dict(n_layers=layers, n_heads=heads, d_model=d_model, context_length=context,
                                       dropout=dropout).items() if v is not None}
    if ablations:
        overrides["ablations"] = tuple(ablations)  # parts switched off (attnlab.nn.ablations), kept in config.json
    model_cfg = model_preset(preset or preset_name, vocab_size=tok.vocab_size, **overrides)
    check_size(model_cfg, cfg.batch_size)  # before anything big is allocated
    dev = pick_device(device)
    data = TokenData.from_texts(texts, tok, val_fraction=0.0 if corpus in BUILTIN_TEXTS else 0.1,
                                cache=corpus not in BUILTIN_TEXTS)
    torch.manual_seed(cfg.seed)  # the model's initial weights come from the seed
    model = GPT(model_cfg)
    trainer = Trainer(model, data, cfg, device=dev, probe=make_probe(tok, data))
    corpus, checksum = _corpus_file(corpus)
    return Run(corpus, texts, tok, model, data, trainer, checksum)


def _corpus_file(corpus: str) -> tuple[str, str | None]:
    """(name as saved, sha256): a file's absolute path, so --resume finds it from any directory, and hash."""
    if corpus in BUILTIN_TEXTS:
        return corpus, None
    path = Path(corpus).resolve()
    return str(path), sha256_file(path)


def _resume_corpus(checkpoint, meta: dict) -> str:
    """The corpus a checkpoint names, if it is still the one trained on: a name a checkpoint merely claims is
    never read (an edited config.json could name any file), only one whose recorded sha256 matches."""
    recorded = meta.get("corpus")
    if not recorded:
        raise CheckpointError(f"{checkpoint}/config.json does not say which corpus it was trained on; pass --corpus")
    if recorded in BUILTIN_TEXTS:
        return recorded
    expected = meta.get("corpus_sha256")
    if expected is None:
        raise CheckpointError(f"{checkpoint}/config.json names the corpus file {recorded!r} without its sha256 "
                              f"(an older attnlab, or an edited checkpoint), so it is not read unasked; "
                              f"pass --corpus FILE to say what to resume on")
    path = Path(recorded)
    if not path.is_file():
        raise CheckpointError(f"the corpus {checkpoint} was trained on, {recorded!r}, is not a file any more; "
                              f"pass --corpus FILE to say what to resume on")
    if sha256_file(path) != expected:
        raise CheckpointError(f"the corpus {recorded!r} is not the one {checkpoint} was trained on (its sha256 "
                              f"differs from the one in config.json); pass --corpus {recorded} to resume on it as it "
                              f"is now")
    return recorded


def resume_run(checkpoint: str | Path, *, corpus: str | None = None, device: str = "auto", **train_settings) -> Run:
    """Continue a saved run: same model, tokenizer, optimizer and random state; settings passed override."""
    ckpt = load_checkpoint(checkpoint)
    scalars, tensors = load_train_state(checkpoint)
    meta = ckpt.meta
    corpus = corpus or _resume_corpus(checkpoint, meta)  # the one the user names, or the one trained on
    stored = dict(meta.get("train") or {})
    try:
        cfg = TrainConfig.from_dict({**stored, **{k: v for k, v in train_settings.items() if v is not None}})
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"cannot resume {checkpoint}: its training settings are invalid: {e}") from None
    step = scalars["step"]
    if cfg.steps <= step:
        raise ValueError(f"{checkpoint} has already trained {step} steps; to resume, ask for more (--steps > {step})")
    texts = read_corpus(corpus)
    data = TokenData.from_texts(texts, ckpt.tokenizer, val_fraction=0.0 if corpus in BUILTIN_TEXTS else 0.1,
                                cache=corpus not in BUILTIN_TEXTS)
    dev = pick_device(device)
    ckpt.model.train()
    trainer = Trainer(ckpt.model, data, cfg, device=dev, probe=make_probe(ckpt.tokenizer, data))
    try:
        trainer.load_state(scalars, tensors)
    except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise CheckpointError(f"the training state in {checkpoint} does not fit its model: {first}") from None
    corpus, checksum = _corpus_file(corpus)
    return Run(corpus, texts, ckpt.tokenizer, ckpt.model, data, trainer, checksum, ckpt.warnings)
