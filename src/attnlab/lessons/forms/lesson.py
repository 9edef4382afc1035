"""Three forms from the same bricks: encoder-only, decoder-only, encoder-decoder.

Each form is built small from attnlab.models and run once; the masks shown are read off the attention
weights it actually computed (a cell is 1 where the weight is > 0) and compared with the mask the form
should have: bidirectional for the encoder, causal for the decoder, every target position over every
source position for cross-attention. The blocks' contents are read off the modules themselves: a
decoder-only (GPT) block holds one attention module and no cross-attention; the encoder-decoder's decoder
block holds two.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, within
from attnlab.lessons.common.params import Param, check, lesson, seeded
from attnlab.lessons.common.result import Shown

PARAMS = (
    Param("n_tgt", "int", 6, 2, 24, step=1, help="length of the sequence a decoder reads (and the encoder-only input)"),
    Param("n_src", "int", 5, 2, 24, step=1, help="length of the source sentence of the encoder-decoder"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="seed of the untrained weights and the token ids"),
)
QUICK = {"n_tgt": 3, "n_src": 2}
COURSE = ("lecture06", 90)  # the course map's section (web/course_map.py) and place in it

FORMS = ("encoder-only", "decoder-only", "encoder-decoder")


@dataclass
class BlockInfo:
    where: str  # e.g. "decoder-only: blocks[0]"
    module: str  # class name
    children: list[str]  # named submodules, in order
    attention_modules: list[str]  # the children that are MultiHeadAttention
    has_cross_attention: bool


@dataclass
class MaskInfo:
    name: str  # "bidirectional" | "causal" | "cross"
    label: str  # the name in the requested language
    observed: list[list[int]]  # 1 where the computed weight > 0
    expected: list[list[int]]
    matches: bool


@dataclass
class Form:
    name: str
    examples: str  # models of this form
    good_for: str
    attention: str  # which way attention looks
    blocks: list[BlockInfo]
    masks: list[MaskInfo]
    parameters: int


@dataclass
class FormsResult(Shown):
    topic: str
    params: dict
    forms: list[Form]
    claims: list[Claim]


def block_info(where: str, block: torch.nn.Module) -> BlockInfo:
    from attnlab.nn import MultiHeadAttention

    children = [name for name, _ in block.named_children()]
    attn = [name for name, m in block.named_children() if isinstance(m, MultiHeadAttention)]
    return BlockInfo(where, type(block).__name__, children, attn, len(attn) > 1 or any("cross" in a for a in attn))


def mask_info(name: str, weights: torch.Tensor, expected: torch.Tensor, lang: str) -> MaskInfo:
    observed = (weights[0] > 0).all(0)  # (T_q, T_k): > 0 in every head
    return MaskInfo(
        name,
        t(f"explain.plot.forms.mask.{name}", lang),
        observed.int().tolist(),
        expected.int().tolist(),
        bool(torch.equal(observed, expected)),
    )


@lesson
def forms(n_tgt: int = 6, n_src: int = 5, seed: int = 0, *, lang: str = "zh") -> FormsResult:
    """Build each form, run it once, and read its masks and its blocks."""
    p = check(PARAMS, dict(n_tgt=n_tgt, n_src=n_src, seed=seed))
    n, m = p["n_tgt"], p["n_src"]
    from attnlab.models import GPT, Encoder, EncoderConfig, EncoderDecoder, EncoderDecoderConfig, GPTConfig
    from attnlab.nn import causal_mask
    from attnlab.trace import trace

    small = dict(context_length=32, d_model=16, n_heads=2)
    with seeded(p["seed"]):
        encoder = Encoder(EncoderConfig(vocab_size=16, n_layers=1, **small)).eval()
        gpt = GPT(GPTConfig(vocab_size=16, n_layers=1, **small)).eval()
        seq2seq = EncoderDecoder(
            EncoderDecoderConfig(src_vocab_size=16, tgt_vocab_size=16, n_encoder_layers=1, n_decoder_layers=1, **small)
        ).eval()
        tgt = torch.randint(0, 16, (1, n))
        src = torch.randint(0, 16, (1, m))
    enc_tr, gpt_tr, s2s_tr = trace(encoder, tgt), trace(gpt, tgt), trace(seq2seq, src, tgt)
    full, causal = torch.ones(n, n, dtype=torch.bool), causal_mask(n)

    def count(model) -> int:
        return sum(q.numel() for q in model.parameters())

    built = [
        Form(
            "encoder-only",
            t("explain.forms.encoder.examples", lang),
            t("explain.forms.encoder.good_for", lang),
            t("explain.forms.encoder.attention", lang),
            [block_info("Encoder.blocks[0]", encoder.blocks[0])],
            [mask_info("bidirectional", enc_tr["layers.0.attn.weights"], full, lang)],
            count(encoder),
        ),
        Form(
            "decoder-only",
            t("explain.forms.decoder.examples", lang),
            t("explain.forms.decoder.good_for", lang),
            t("explain.forms.decoder.attention", lang),
            [block_info("GPT.blocks[0]", gpt.blocks[0])],
            [mask_info("causal", gpt_tr["layers.0.attn.weights"], causal, lang)],
            count(gpt),
        ),
        Form(
            "encoder-decoder",
            t("explain.forms.seq2seq.examples", lang),
            t("explain.forms.seq2seq.good_for", lang),
            t("explain.forms.seq2seq.attention", lang),
            [
                block_info("EncoderDecoder.encoder[0]", seq2seq.encoder[0]),
                block_info("EncoderDecoder.decoder[0]", seq2seq.decoder[0]),
            ],
            [
                mask_info("bidirectional", s2s_tr["encoder.0.attn.weights"], torch.ones(m, m, dtype=torch.bool), lang),
                mask_info("causal", s2s_tr["decoder.0.self_attn.weights"], causal, lang),
                mask_info("cross", s2s_tr["decoder.0.cross_attn.weights"], torch.ones(n, m, dtype=torch.bool), lang),
            ],
            count(seq2seq),
        ),
    ]
    gpt_block, dec_block = built[1].blocks[0], built[2].blocks[1]
    wrong_cells = sum(
        int((torch.tensor(mask.observed) != torch.tensor(mask.expected)).sum()) for form in built for mask in form.masks
    )
    cells = sum(len(mask.expected) * len(mask.expected[0]) for form in built for mask in form.masks)
    claims = [
        within(
            "decoder_only_no_cross",
            t(
                "explain.forms.claim.gpt",
                lang,
                children=", ".join(gpt_block.children),
                k=len(gpt_block.attention_modules),
            ),
            lang,
            measured=len(gpt_block.attention_modules),
            expected=1,
            tol=0,
            control=t("explain.forms.control.gpt", lang),
            values={"attention_modules": len(gpt_block.attention_modules), "cross": int(gpt_block.has_cross_attention)},
        ),
        within(
            "seq2seq_has_cross",
            t("explain.forms.claim.seq2seq", lang, attn=", ".join(dec_block.attention_modules)),
            lang,
            measured=len(dec_block.attention_modules),
            expected=2,
            tol=0,
            control=t("explain.forms.control.seq2seq", lang),
            values={"attention_modules": len(dec_block.attention_modules), "cross": int(dec_block.has_cross_attention)},
        ),
        within(
            "masks",
            t("explain.forms.claim.masks", lang, wrong=wrong_cells, cells=cells),
            lang,
            measured=wrong_cells,
            expected=0,
            tol=0,
            control=t("explain.forms.control.masks", lang),
            values={"wrong_cells": wrong_cells, "cells": cells},
        ),
    ]
    return FormsResult("forms", p, built, claims)
