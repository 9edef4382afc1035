"""Published Transformers, in the terms `Architecture` uses, beside the parameter counts their authors give.

The lab counts each one (models/count.py) and the scale topic shows the count beside the published figure. The
configurations are those of the papers and released checkpoints; where a count and a figure differ by more than
2%, `differs` says why (the figure is a name, or the paper miscounted).
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.models.count import Architecture


@dataclass(frozen=True)
class Published:
    name: str
    architecture: Architecture
    params: int  # the figure the authors give
    source: str  # where the figure and the configuration are published
    tokens: int | None = None  # training tokens, where published (for 6·N·D)
    train_flops: float | None = None  # training compute, where the authors give it
    # why the count and the figure differ by more than 2%, when they do: "vocabulary" (the paper gives its vocabulary
    # only as "about 37,000"; 65M would need about 40,700 tokens), "name" (the figure is the model's rounded name)
    differs: str | None = None


PUBLISHED: tuple[Published, ...] = (
    Published(
        "Transformer base (2017)",
        Architecture(
            layers=6,
            encoder_layers=6,
            d_model=512,
            heads=8,
            d_ff=2048,
            vocab=37_000,
            context=512,
            positions="sinusoidal",
            head="tied",
            final_norm=False,
        ),
        65_000_000,
        "Vaswani et al. 2017, Attention Is All You Need, Table 3 (EN-DE, shared vocabulary of about 37,000)",
        differs="vocabulary",
    ),
    Published(
        "BERT-base",
        Architecture(
            layers=12,
            d_model=768,
            heads=12,
            vocab=30_522,
            context=512,
            head="none",
            token_types=2,
            embedding_norm=True,
            pooler=True,
            final_norm=False,
        ),
        110_000_000,
        "Devlin et al. 2019, BERT, section 3",
        tokens=128_000 * 1_000_000,
    ),  # 256 sequences × 512 tokens a batch, 1,000,000 steps (appendix A.2)
    Published(
        "GPT-2 small",
        Architecture(layers=12, d_model=768, heads=12, vocab=50_257, context=1024),
        124_000_000,
        "OpenAI's gpt-2 repository (the paper's Table 2 said 117M, a miscount the repository corrects)",
    ),
    Published(
        "GPT-2 XL",
        Architecture(layers=48, d_model=1600, heads=25, vocab=50_257, context=1024),
        1_558_000_000,
        "OpenAI's gpt-2 repository, 1558M (the paper's Table 2 said 1542M)",
    ),
    Published(
        "GPT-3 175B",
        Architecture(layers=96, d_model=12_288, heads=96, vocab=50_257, context=2048),
        175_000_000_000,
        "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1 and D.1",
        tokens=300_000_000_000,
        train_flops=3.14e23,
    ),
    Published(
        "Llama-2-7B",
        Architecture(
            layers=32,
            d_model=4096,
            heads=32,
            d_ff=11_008,
            gated=True,
            vocab=32_000,
            context=4096,
            positions="rope",
            head="separate",
            bias=False,
            norm="rmsnorm",
        ),
        7_000_000_000,
        "Touvron et al. 2023, Llama 2, Table 1; the configuration of the released checkpoint",
        tokens=2_000_000_000_000,
        differs="name",
    ),
    Published(
        "Llama-2-70B",
        Architecture(
            layers=80,
            d_model=8192,
            heads=64,
            kv_heads=8,
            d_ff=28_672,
            gated=True,
            vocab=32_000,
            context=4096,
            positions="rope",
            head="separate",
            bias=False,
            norm="rmsnorm",
        ),
        70_000_000_000,
        "Touvron et al. 2023, Llama 2, Table 1 (GQA with 8 KV heads)",
        tokens=2_000_000_000_000,
    ),
    Published(
        "Llama-3-8B",
        Architecture(
            layers=32,
            d_model=4096,
            heads=32,
            kv_heads=8,
            d_ff=14_336,
            gated=True,
            vocab=128_256,
            context=8192,
            positions="rope",
            head="separate",
            bias=False,
            norm="rmsnorm",
        ),
        8_000_000_000,
        "Meta's llama3 repository, MODEL_CARD.md (8k context, GQA, 15T+ tokens); Llama Team 2024, The Llama 3 "
        "Herd of Models, Table 3 (layers, widths, 8 KV heads)",
        tokens=15_000_000_000_000,
    ),
    Published(
        "Llama-3-70B",
        Architecture(
            layers=80,
            d_model=8192,
            heads=64,
            kv_heads=8,
            d_ff=28_672,
            gated=True,
            vocab=128_256,
            context=8192,
            positions="rope",
            head="separate",
            bias=False,
            norm="rmsnorm",
        ),
        70_000_000_000,
        "Meta's llama3 repository, MODEL_CARD.md (8k context, GQA, 15T+ tokens); Llama Team 2024, The Llama 3 "
        "Herd of Models, Table 3",
        tokens=15_000_000_000_000,
    ),
)

# Vocabulary sizes the course quotes: BERT's WordPiece, GPT-2's BPE, GPT-4's cl100k_base, Llama 3's tokenizer.
VOCABULARIES: tuple[tuple[str, int], ...] = (
    ("BERT WordPiece", 30_522),
    ("GPT-2 BPE", 50_257),
    ("cl100k_base (GPT-3.5, GPT-4)", 100_277),
    ("Llama 3", 128_256),
)


def published(name: str) -> Published:
    for model in PUBLISHED:
        if model.name == name:
            return model
    raise KeyError(f"no published model {name!r}; choose from {', '.join(m.name for m in PUBLISHED)}")
