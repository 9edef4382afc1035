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

from attnlab.models import GPT
from attnlab.models import preset as model_preset
from attnlab.text import BUILTIN_TEXTS, read_corpus, train_tokenizer
from attnlab.text.forms import parse_forms
from attnlab.text.poetry import is_poetry_collection, read_poetry
from attnlab.train.data import TokenData, check_corpus, corpus_memory, read_corpus_file, split_texts
from attnlab.train.device import pick_device
from attnlab.train.loop import Probe, TrainConfig, Trainer
from attnlab.train.size import MAX_LAYERS, MAX_TRAIN_BYTES, SizeEstimate, check_size, estimate_size  # noqa: F401
from attnlab.train.storage.checkpoint import CheckpointError, load_checkpoint, load_train_state, save_checkpoint
from attnlab.train.storage.integrity import sha256_file

# Per corpus: (model preset, training settings). Chosen so both poems are recited exactly after training,
# for every seed we tried, in well under a few seconds on a 2-core CPU.
DEFAULTS: dict[str, tuple[str, dict]] = {
    "poem": ("poem-tiny", dict(steps=60, lr=1e-2, schedule="cosine", weight_decay=0.0)),
    "jingyesi": ("jingyesi-tiny", dict(steps=150, lr=1e-2, schedule="cosine", weight_decay=0.0)),
}
# The most optimizer steps a run on a built-in text takes, from the CLI as from the web lab's form and API (a web
# run holds a slot meanwhile): both poems are recited after 60 / 150, so more only repeats what is learnt.
MAX_STEPS = 5000
# Any corpus file: nanoGPT's Tiny Shakespeare CPU recipe.
# Progress every 10 steps: reading the loss waits for the device, and a probe is one more forward pass.
FILE_DEFAULTS = (
    "shakespeare-cpu",
    dict(steps=2000, lr=1e-3, batch_size=12, warmup_steps=100, eval_interval=250, log_interval=10),
)
# A folder or glob of chinese-poetry JSON (全唐诗): a model that holds a whole 七律 (67 characters) in its
# context, trained for a time budget with the best validation weights kept; measured in
# benchmarks/bench_poems.py (README: "Tang poems").
POETRY_DEFAULTS = (
    "poems-small",
    dict(
        steps=100_000,
        minutes=10.0,
        lr=2e-3,
        batch_size=16,
        warmup_steps=100,
        eval_interval=100,
        eval_iters=10,
        patience=5,
        keep_best=True,
    ),
)
POETRY_FORMS = "regular"  # a collection's default slice: the four regular forms (attnlab.text.forms)
POETRY_ALIGN = True  # a collection's windows start at a poem's beginning (TokenData.from_split, align)

PROBE_CONTEXT, PROBE_TARGET = "床前明月", "光"  # the course's example: p(光 | 床前明月)


def check_steps(corpus: str, steps: int) -> None:
    """ValueError when a run on a built-in text asks for more than MAX_STEPS (a file or a folder may train longer)."""
    if corpus in BUILTIN_TEXTS and steps > MAX_STEPS:
        raise ValueError(
            f"--steps must be a whole number from 1 to {MAX_STEPS} for the built-in text {corpus!r}, got {steps} "
            f"(its default, {corpus_defaults(corpus)[1]['steps']}, is enough to recite it; a corpus file or folder "
            "may train for longer)"
        )


def corpus_defaults(corpus: str) -> tuple[str, dict]:
    if corpus not in DEFAULTS and is_poetry_collection(corpus):
        return POETRY_DEFAULTS
    return DEFAULTS.get(corpus, FILE_DEFAULTS)


@dataclass
class Corpus:
    """The texts of a corpus and how they split: a collection holds out whole poems, others the stream's tail."""

    name: str  # as saved: a built-in name, or an absolute path (pattern)
    texts: list[str]
    sha256: str | None
    options: dict | None = None  # a collection's {"script", "form"}
    by_text: bool = False  # split by poem (split_texts), not by position in the token stream

    def token_data(self, tokenizer, context_length: int = 0) -> TokenData:
        if self.name in BUILTIN_TEXTS:
            return TokenData.from_texts(self.texts, tokenizer, val_fraction=0.0)
        if self.by_text:
            align = bool((self.options or {}).get("align", False))
            return TokenData.from_split(*self.split(), tokenizer, align=align, context_length=context_length)
        return TokenData.from_texts(self.texts, tokenizer, val_fraction=0.1, cache=True)

    def split(self, seed: int = 0) -> tuple[list[str], list[str]]:
        return split_texts(self.texts, 0.1, seed)


def load_corpus(
    corpus: str,
    script: str | None = None,
    form: str | None = None,
    align: bool | None = None,
    max_corpus_mb: float | None = None,
) -> Corpus:
    """A built-in name, a .txt/.json file, or a folder/glob of chinese-poetry JSON (one script, some forms),
    of at most max_corpus_mb (default attnlab.train.data.MAX_CORPUS_MB) in all."""
    check_corpus(corpus, max_corpus_mb, script)  # before anything is opened: no FIFO, device or huge file is read
    if corpus not in BUILTIN_TEXTS and is_poetry_collection(corpus):
        script = script or "simplified"
        forms = parse_forms(POETRY_FORMS if form is None else form)
        pc = read_poetry(corpus, script, forms)
        name = corpus if any(ch in corpus for ch in "*?[") else str(Path(corpus).expanduser())
        name = str(Path(name).expanduser().absolute())
        options = {
            "script": script,
            "form": ",".join(forms) if forms else "all",
            "align": POETRY_ALIGN if align is None else bool(align),
        }
        return Corpus(name, pc.poems, pc.sha256(), options, by_text=True)
    if script is not None or form is not None:
        raise ValueError(f"--script and --form slice a folder or glob of chinese-poetry JSON files, not {corpus!r}")
    if corpus in BUILTIN_TEXTS:
        return Corpus(corpus, read_corpus(corpus), None)
    texts, checksum = read_corpus_file(corpus, max_corpus_mb)
    kinds = set("".join(texts).strip())  # a trailing newline is no second character
    if len(kinds) < 2:  # every next character is that one: nothing to learn, and no loss that says anything
        raise ValueError(
            f"corpus {corpus} holds {len(kinds)} kind of character ({''.join(sorted(kinds))!r}); "
            "a model needs a text of at least two different characters to learn what comes next"
        )
    return Corpus(str(Path(corpus).resolve()), texts, checksum)  # absolute: --resume finds it from anywhere


def make_probe(tokenizer, data: TokenData, texts: list[str] | None = None) -> Probe:
    """p(光 | 床前明月) when the corpus holds the text's example (all of `texts` is searched; None: only the
    tokenizer's spelling is asked) and the tokenizer spells both as characters; else the corpus's own 5th token
    (after the opening end-of-text mark of a stream whose windows start at a poem), a line the run does train
    on: 全唐诗 spells 床前明月 and 光 but has no 床前明月光, so p(光) there would say nothing."""
    ctx, target = PROBE_CONTEXT, PROBE_TARGET
    if not tokenizer.unknown(ctx + target) and (texts is None or any(ctx + target in text for text in texts)):
        ctx_ids, target_ids = tokenizer.encode(ctx), tokenizer.encode(target)
        if len(target_ids) == 1:
            return Probe(ctx_ids, target_ids[0], ctx, target)
    n = 6 if len(data.train) > 5 and int(data.train[0]) == tokenizer.eot_id else 5
    ids = data.train[:n].tolist()
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
    corpus_options: dict | None = None  # a poetry collection's script and form
    held_out: list[str] = field(default_factory=list)  # the validation poems, when split by poem

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
            **({"corpus_options": self.corpus_options} if self.corpus_options else {}),
            **(
                {
                    "best": {
                        "val_loss": t.best["val_loss"],
                        "step": t.best["step"],
                        "weights": "best" if t.last_weights is not None or t.best["step"] == t.step else "last",
                    }
                }
                if t.best is not None and self.config.keep_best
                else {}
            ),
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
    script: str | None = None,
    form: str | None = None,
    align: bool | None = None,
    clock=None,
    max_corpus_mb: float | None = None,
    **train_settings,
) -> Run:
    """A fresh, seeded run on `corpus` (a built-in name, a file path, or a folder/glob of poetry JSON)."""
    preset_name, defaults = corpus_defaults(corpus)
    cfg = TrainConfig(**{**defaults, **{k: v for k, v in train_settings.items() if v is not None}})
    check_steps(corpus, cfg.steps)
    with corpus_memory(corpus, max_corpus_mb):
        source = load_corpus(corpus, script, form, align, max_corpus_mb)
        texts = source.texts
        tok = train_tokenizer(tokenizer, texts, vocab_size=bpe_vocab_size)
    overrides = {
        k: v
        for k, v in dict(
            n_layers=layers, n_heads=heads, d_model=d_model, context_length=context, dropout=dropout
        ).items()
        if v is not None
    }
    if ablations:
        overrides["ablations"] = tuple(ablations)  # parts switched off (attnlab.nn.ablations), kept in config.json
    model_cfg = model_preset(preset or preset_name, vocab_size=tok.vocab_size, **overrides)
    check_size(model_cfg, cfg.batch_size)  # before anything big is allocated
    dev = pick_device(device)
    with corpus_memory(corpus, max_corpus_mb):
        data = source.token_data(tok, model_cfg.context_length)
    torch.manual_seed(cfg.seed)  # the model's initial weights come from the seed
    model = GPT(model_cfg)
    trainer = Trainer(
        model, data, cfg, device=dev, probe=make_probe(tok, data, texts), **({"clock": clock} if clock else {})
    )
    return Run(
        source.name,
        texts,
        tok,
        model,
        data,
        trainer,
        source.sha256,
        corpus_options=source.options,
        held_out=source.split()[1] if source.by_text else [],
    )


def _resume_corpus(checkpoint, meta: dict, max_corpus_mb: float | None = None) -> str:
    """The corpus a checkpoint names, if it is still the one trained on: a name a checkpoint merely claims is
    never read (an edited config.json could name any file), only one whose recorded sha256 matches."""
    recorded = meta.get("corpus")
    if not recorded:
        raise CheckpointError(f"{checkpoint}/config.json does not say which corpus it was trained on; pass --corpus")
    if recorded in BUILTIN_TEXTS:
        return recorded
    expected = meta.get("corpus_sha256")
    if meta.get("corpus_options") is not None:  # a poetry folder or glob: its checksum covers every file
        opts = meta["corpus_options"] if isinstance(meta["corpus_options"], dict) else {}
        try:
            now = load_corpus(recorded, opts.get("script"), opts.get("form"), max_corpus_mb=max_corpus_mb).sha256
        except ValueError as e:
            raise CheckpointError(
                f"the corpus {checkpoint} was trained on, {recorded!r}, cannot be read any more "
                f"({e}); pass --corpus to say what to resume on"
            ) from None
        if expected is None or now != expected:
            raise CheckpointError(
                f"the poems in {recorded!r} are not the ones {checkpoint} was trained on (their "
                f"sha256 differs from the one in config.json); pass --corpus to resume on them"
            )
        return recorded
    if expected is None:
        raise CheckpointError(
            f"{checkpoint}/config.json names the corpus file {recorded!r} without its sha256 "
            f"(an older attnlab, or an edited checkpoint), so it is not read unasked; "
            f"pass --corpus FILE to say what to resume on"
        )
    path = Path(recorded)
    if not path.is_file():
        raise CheckpointError(
            f"the corpus {checkpoint} was trained on, {recorded!r}, is not a file any more; "
            f"pass --corpus FILE to say what to resume on"
        )
    try:
        check_corpus(recorded, max_corpus_mb)  # a path an edited config.json names could be a FIFO or /proc/kmsg
    except ValueError as e:
        raise CheckpointError(
            f"the corpus {checkpoint} was trained on cannot be read: {e}; pass --corpus FILE to say what to resume on"
        ) from None
    if sha256_file(path) != expected:
        raise CheckpointError(
            f"the corpus {recorded!r} is not the one {checkpoint} was trained on (its sha256 "
            f"differs from the one in config.json); pass --corpus {recorded} to resume on it as it "
            f"is now"
        )
    return recorded


def resume_run(
    checkpoint: str | Path,
    *,
    corpus: str | None = None,
    device: str = "auto",
    max_corpus_mb: float | None = None,
    **train_settings,
) -> Run:
    """Continue a saved run: same model, tokenizer, optimizer and random state; settings passed override."""
    ckpt = load_checkpoint(checkpoint)
    scalars, tensors = load_train_state(checkpoint)
    meta = ckpt.meta
    corpus = corpus or _resume_corpus(checkpoint, meta, max_corpus_mb)  # the one the user names, or the one trained on
    stored = dict(meta.get("train") or {})
    try:
        cfg = TrainConfig.from_dict({**stored, **{k: v for k, v in train_settings.items() if v is not None}})
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"cannot resume {checkpoint}: its training settings are invalid: {e}") from None
    step = scalars["step"]
    check_steps(corpus, cfg.steps)
    if cfg.steps <= step:
        raise ValueError(f"{checkpoint} has already trained {step} steps; to resume, ask for more (--steps > {step})")
    opts = meta.get("corpus_options") if isinstance(meta.get("corpus_options"), dict) else {}
    with corpus_memory(corpus, max_corpus_mb):
        source = (
            load_corpus(corpus, opts.get("script"), opts.get("form"), bool(opts.get("align", False)), max_corpus_mb)
            if opts
            else load_corpus(corpus, max_corpus_mb=max_corpus_mb)
        )
        texts = source.texts
        data = source.token_data(ckpt.tokenizer, ckpt.model.config.context_length)
    dev = pick_device(device)
    ckpt.model.train()
    trainer = Trainer(ckpt.model, data, cfg, device=dev, probe=make_probe(ckpt.tokenizer, data, texts))
    try:
        trainer.load_state(scalars, tensors)
    except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise CheckpointError(f"the training state in {checkpoint} does not fit its model: {first}") from None
    return Run(
        source.name,
        texts,
        ckpt.tokenizer,
        ckpt.model,
        data,
        trainer,
        source.sha256,
        ckpt.warnings,
        corpus_options=source.options,
        held_out=source.split()[1] if source.by_text else [],
    )
