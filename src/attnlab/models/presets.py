"""Named model sizes. Toy-scale presets use post-LN (the paper's and the course's form); presets for real
corpora use pre-LN, GELU and a final LayerNorm (GPT-2's form), which trains more stably."""

from __future__ import annotations

from attnlab.models.encoder import EncoderConfig
from attnlab.models.encoder_decoder import EncoderDecoderConfig
from attnlab.models.gpt import GPTConfig

PRESETS: dict[str, tuple[type, dict]] = {
    # 床前明月光: five characters, two layers of two heads are plenty.
    "poem-tiny": (
        GPTConfig,
        dict(context_length=8, d_model=32, n_heads=2, n_layers=2, norm_first=False, activation="relu"),
    ),
    # The whole 静夜思 (24 characters with punctuation).
    "jingyesi-tiny": (
        GPTConfig,
        dict(context_length=32, d_model=64, n_heads=4, n_layers=2, norm_first=False, activation="relu"),
    ),
    # nanoGPT's published CPU recipe for Tiny Shakespeare.
    "shakespeare-cpu": (
        GPTConfig,
        dict(context_length=64, d_model=128, n_heads=4, n_layers=4, norm_first=True, activation="gelu"),
    ),
    # 唐诗三百首 on a laptop CPU.
    "tangshi-small": (
        GPTConfig,
        dict(context_length=128, d_model=192, n_heads=6, n_layers=6, norm_first=True, activation="gelu", dropout=0.1),
    ),
    # 全唐诗's regular forms (benchmarks/bench_poems.py): the context holds a whole 七律 (67 characters).
    "poems-small": (
        GPTConfig,
        dict(context_length=72, d_model=128, n_heads=4, n_layers=4, norm_first=True, activation="gelu", dropout=0.1),
    ),
    "encoder-tiny": (EncoderConfig, dict(context_length=32, d_model=32, n_heads=2, n_layers=2, norm_first=False)),
    "seq2seq-tiny": (
        EncoderDecoderConfig,
        dict(context_length=32, d_model=32, n_heads=2, n_encoder_layers=2, n_decoder_layers=2),
    ),
}


def preset(name: str, vocab_size: int | None = None, **overrides):
    """The config of a named preset, with its vocabulary size(s) and any field overridden."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    cls, fields = PRESETS[name]
    fields = dict(fields)
    if vocab_size is not None:
        if cls is EncoderDecoderConfig:
            fields.update(src_vocab_size=vocab_size, tgt_vocab_size=vocab_size)
        else:
            fields["vocab_size"] = vocab_size
    fields.update(overrides)
    return cls(**fields)
