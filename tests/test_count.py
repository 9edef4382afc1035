"""models/count.py and models/published.py (issue 24, item 4): parameter and FLOP counts from a model's shape.

Checked against what we did not write: `sum(p.numel())` of the lab's own models over their options, torch's
FlopCounterMode on their forward and backward passes, Hugging Face's GPT-2, BERT and Llama implementations and
torch's nn.Transformer (built on the meta device, no memory), and the figures the papers publish.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from attnlab.models import (
    GPT,
    Encoder,
    EncoderConfig,
    EncoderDecoder,
    EncoderDecoderConfig,
    GPTConfig,
    count_flops,
    count_params,
)
from attnlab.models.count import Architecture, forward_flops, non_embedding_params, param_parts
from attnlab.models.published import PUBLISHED, VOCABULARIES, published


def numel(model) -> int:
    return sum(p.numel() for p in model.parameters())


def record(name, tensor):  # recording forces attention's explicit matmuls, which FlopCounterMode counts
    pass


@pytest.mark.parametrize(
    "positions,tie,pre_ln,bias,ablations",
    [
        (pos, tie, pre, bias, abl)
        for pos, tie, pre, bias in itertools.product(
            ("learned", "sinusoidal", "rope"), (False, True), (False, True), (False, True)
        )
        for abl in ((), ("no-positions",), ("no-layernorm",), ("attention-only",), ("ffn-only",))
    ],
)
def test_the_count_is_every_parameter_of_the_lab_gpt(positions, tie, pre_ln, bias, ablations):
    cfg = GPTConfig(
        vocab_size=13,
        context_length=9,
        d_model=16,
        n_heads=4,
        n_layers=3,
        d_ff=24,
        positions=positions,
        tie_weights=tie,
        norm_first=pre_ln,
        bias=bias,
        ablations=ablations,
    )
    assert count_params(cfg) == numel(GPT(cfg))


@pytest.mark.parametrize(
    "positions,pre_ln,bias,types,norm,heads",
    list(itertools.product(("learned", "rope"), (False, True), (False, True), (0, 2), (False, True), (False, True))),
)
def test_the_count_is_every_parameter_of_the_lab_encoder(positions, pre_ln, bias, types, norm, heads):
    cfg = EncoderConfig(
        vocab_size=13,
        context_length=9,
        d_model=16,
        n_heads=4,
        n_layers=2,
        positions=positions,
        norm_first=pre_ln,
        bias=bias,
        type_vocab_size=types,
        embed_norm=norm,
        task_heads=heads,
        n_classes=3,
    )
    assert count_params(cfg) == numel(Encoder(cfg))


@pytest.mark.parametrize(
    "positions,pre_ln,bias", list(itertools.product(("learned", "sinusoidal"), (False, True), (False, True)))
)
def test_the_count_is_every_parameter_of_the_lab_encoder_decoder(positions, pre_ln, bias):
    cfg = EncoderDecoderConfig(
        src_vocab_size=11,
        tgt_vocab_size=13,
        context_length=9,
        d_model=16,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=3,
        positions=positions,
        norm_first=pre_ln,
        bias=bias,
    )
    assert count_params(cfg) == numel(EncoderDecoder(cfg))
    assert sum(param_parts(cfg).values()) == count_params(cfg)


@pytest.mark.parametrize(
    "cfg",
    [
        GPTConfig(vocab_size=13, context_length=9, d_model=16, n_heads=4, n_layers=3, d_ff=24),
        GPTConfig(
            vocab_size=50, context_length=32, d_model=32, n_heads=2, n_layers=2, positions="rope", tie_weights=True
        ),
        GPTConfig(vocab_size=50, context_length=12, d_model=32, n_heads=2, n_layers=2, ablations=("ffn-only",)),
    ],
    ids=["post-ln", "rope-tied", "ffn-only"],
)
def test_flops_are_torchs_count_of_the_forward_and_the_training_step(cfg):
    model, t = GPT(cfg), cfg.context_length
    x = torch.randint(0, cfg.vocab_size, (2, t))
    with FlopCounterMode(display=False) as forward:
        model(x, record=record)
    with FlopCounterMode(display=False) as training:
        model(x, record=record).sum().backward()
    assert forward.get_total_flops() == 2 * forward_flops(cfg, t) == count_flops(cfg, 2 * t, training=False)
    assert training.get_total_flops() == count_flops(cfg, 2 * t)  # backward = 2 × forward: 6·N·D + attention
    shorter = t // 3  # sequences shorter than the context: the attention term shrinks with T
    with FlopCounterMode(display=False) as short:
        model(x[:, :shorter], record=record)
    assert short.get_total_flops() == 2 * forward_flops(cfg, shorter)


def test_flops_of_the_encoder_and_the_encoder_decoder_are_torchs_count():
    enc = EncoderConfig(vocab_size=13, context_length=9, d_model=16, n_heads=4, n_layers=2)
    with FlopCounterMode(display=False) as counted:
        Encoder(enc).token_logits(torch.randint(0, 13, (1, 9)), record=record)
    assert counted.get_total_flops() == forward_flops(enc, 9)
    ed = EncoderDecoderConfig(
        src_vocab_size=11,
        tgt_vocab_size=13,
        context_length=9,
        d_model=16,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=3,
    )
    with FlopCounterMode(display=False) as counted:
        EncoderDecoder(ed)(torch.randint(0, 11, (1, 9)), torch.randint(0, 13, (1, 9)), record=record)
    assert counted.get_total_flops() == forward_flops(ed, 9)


def test_six_n_d_is_the_rule_when_attention_is_small():
    """Training FLOPs = 6 · (weights in products) · tokens + attention; the attention share is 4·L·T·d per token
    of 2·N forward, a few per cent for GPT-3."""
    gpt3 = published("GPT-3 175B").architecture
    n = non_embedding_params(gpt3) + gpt3.vocab * gpt3.d_model  # the LM head multiplies too (tied to the table)
    per_token = count_flops(gpt3, 1)
    attention = 3 * 4 * gpt3.layers * gpt3.context * gpt3.d_model
    assert per_token == pytest.approx(6 * n + attention, rel=1e-4)  # biases and norms count in N but multiply nothing
    assert per_token != pytest.approx(6 * n, rel=1e-2)  # the attention term is not negligible at 2,048 tokens
    assert 0.01 < attention / per_token < 0.05


# ---- the published models, against Hugging Face's implementations and torch's own Transformer -----------------


def hf_count(make, layers_field: str, config) -> int:
    """Parameters of a Hugging Face model of `config`, from its 1- and 2-layer versions on the meta device."""
    counts = []
    for layers in (1, 2):
        small = copy.deepcopy(config)
        setattr(small, layers_field, layers)
        with torch.device("meta"):
            counts.append(numel(make(small)))
    return counts[0] + (getattr(config, layers_field) - 1) * (counts[1] - counts[0])


def test_gpt2_gpt3_bert_and_llama_counts_equal_hugging_faces():
    transformers = pytest.importorskip("transformers")
    gpt2 = lambda a: transformers.GPT2Config(  # noqa: E731
        vocab_size=a.vocab,
        n_positions=a.context,
        n_embd=a.d_model,
        n_layer=a.layers,
        n_head=a.heads,
    )
    for name in ("GPT-2 small", "GPT-2 XL", "GPT-3 175B"):
        a = published(name).architecture
        assert count_params(a) == hf_count(transformers.GPT2LMHeadModel, "n_layer", gpt2(a)), name
    bert = published("BERT-base").architecture
    config = transformers.BertConfig(
        vocab_size=bert.vocab,
        hidden_size=bert.d_model,
        num_hidden_layers=bert.layers,
        num_attention_heads=bert.heads,
        intermediate_size=bert.hidden,
        max_position_embeddings=bert.context,
        type_vocab_size=bert.token_types,
    )
    assert count_params(bert) == hf_count(transformers.BertModel, "num_hidden_layers", config) == 109_482_240
    for name in ("Llama-2-7B", "Llama-2-70B"):
        a = published(name).architecture
        config = transformers.LlamaConfig(
            vocab_size=a.vocab,
            hidden_size=a.d_model,
            intermediate_size=a.hidden,
            num_hidden_layers=a.layers,
            num_attention_heads=a.heads,
            num_key_value_heads=a.kv_heads or a.heads,
            max_position_embeddings=a.context,
        )
        assert count_params(a) == hf_count(transformers.LlamaForCausalLM, "num_hidden_layers", config), name
    assert count_params(published("Llama-2-7B").architecture) == 6_738_415_616
    assert count_params(published("Llama-2-70B").architecture) == 68_976_648_192


def test_the_2017_transformer_is_torchs_transformer_plus_one_shared_table():
    base = published("Transformer base (2017)").architecture
    with torch.device("meta"):
        torch_model = torch.nn.Transformer(
            d_model=base.d_model,
            nhead=base.heads,
            num_encoder_layers=base.encoder_layers,
            num_decoder_layers=base.layers,
            dim_feedforward=base.hidden,
            batch_first=True,
        )
    # torch's nn.Transformer always ends each stack with a LayerNorm; the paper's post-LN stacks have none
    with_final_norms = dataclasses.replace(base, final_norm=True)
    assert count_params(with_final_norms) == numel(torch_model) + base.vocab * base.d_model
    assert count_params(base) == count_params(with_final_norms) - 2 * 2 * base.d_model


def test_each_count_is_within_2_percent_of_its_figure_or_says_why_not():
    for model in PUBLISHED:
        gap = abs(count_params(model.architecture) / model.params - 1)
        assert (gap <= 0.02) == (model.differs is None), (model.name, gap)
    assert count_params(published("Transformer base (2017)").architecture) == 63_082_496  # 65M would need ~40.7k tokens
    gpt3 = published("GPT-3 175B")
    assert count_flops(gpt3.architecture, gpt3.tokens) == pytest.approx(
        gpt3.train_flops, rel=0.03
    )  # 3.14e23, Table D.1


def test_kv_heads_shrink_only_k_and_v():
    mha = Architecture(layers=4, d_model=64, heads=8, vocab=100, context=32)
    for kv in (8, 4, 2, 1):
        gqa = dataclasses.replace(mha, kv_heads=kv)
        d_kv = kv * 8
        assert count_params(mha) - count_params(gqa) == 4 * 2 * (64 * 64 - 64 * d_kv + 64 - d_kv)
    with pytest.raises(ValueError, match="kv_heads must divide heads"):
        dataclasses.replace(mha, kv_heads=3)


def test_vocabularies_and_bad_shapes():
    assert [v for _, v in VOCABULARIES] == [30_522, 50_257, 100_277, 128_256]
    with pytest.raises(ValueError, match="d_model must be divisible by heads"):
        Architecture(layers=1, d_model=10, heads=3, vocab=5, context=4)
    with pytest.raises(ValueError, match="layers must be a positive integer"):
        Architecture(layers=0, d_model=8, heads=2, vocab=5, context=4)
    with pytest.raises(TypeError, match="cannot count"):
        count_params(object())
    with pytest.raises(KeyError, match="choose from"):
        published("GPT-5")


def test_non_embedding_parameters_leave_out_every_vocabulary_and_position_matrix():
    assert non_embedding_params(published("GPT-2 small").architecture) == 85_056_000  # 12 blocks and ln_f
    cfg = GPTConfig(vocab_size=50, context_length=12, d_model=16, n_heads=2, n_layers=2)  # untied head
    model = GPT(cfg)
    vocabulary = model.embed.tok.weight.numel() + model.embed.pos.weight.numel() + model.lm_head.weight.numel()
    assert non_embedding_params(cfg) == numel(model) - vocabulary
