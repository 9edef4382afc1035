"""The `memory` topic (issue 25, part 1) and models/memory.py: the formulas against closed forms and against what torch
itself holds (the parameters, .grad, torch.optim.AdamW's state, the KV cache tensors, autograd's saved tensors), the
live-bytes tracker against allocations of known size, and every claim of the lesson failing on its null."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch
from results import result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.memory import lesson as L
from attnlab.lessons.memory.measure import (
    LiveBytes,
    kv_cache_bytes_after,
    saved_activation_bytes,
    tensor_bytes,
    train_step,
)
from attnlab.models import GPT, GPTConfig, count_params
from attnlab.models.count import Architecture
from attnlab.models.memory import (
    GB,
    adamw_state_bytes,
    korthikanti_activation_bytes,
    kv_cache_bytes,
    kv_cache_of,
    lab_activation_bytes,
    per_param_bytes,
    sequences_that_fit,
    training_state_bytes,
)
from attnlab.models.published import PUBLISHED, published

runner = CliRunner()
LLAMA_7B_KV_2048 = 2 * 32 * 32 * 128 * 2048 * 2  # layers, KV heads, head width, context, fp16 bytes


@pytest.fixture(scope="module")
def default():
    return result("memory", lang="en")


def tiny(**kw) -> GPTConfig:
    return GPTConfig(**{**dict(context_length=12, d_model=24, n_heads=4, n_layers=2, vocab_size=29, d_ff=40), **kw})


def test_the_contract_of_explain_memory_json():
    result = runner.invoke(app, ["explain", "memory", "--json", "--lang", "en"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["per_param_bytes"]["fp32"]["total"] == data["per_param_bytes"]["mixed"]["total"] == 16
    assert data["per_param_bytes"]["mixed"] == {
        "weights": 2,
        "gradients": 2,
        "master_weights": 4,
        "adam_m": 4,
        "adam_v": 4,
        "total": 16,
    }
    assert data["kv_cache_bytes"] == data["chosen"]["kv_cache_bytes"] == LLAMA_7B_KV_2048  # the default: Llama-2-7B
    assert (
        set(data["measured"])
        == set(data["formula"])
        >= {"weights", "gradients", "adamw", "activations", "kv_cache_mha", "kv_cache_gqa", "peak"}
    )
    assert [e["name"] for e in data["published"]] == [m.name for m in PUBLISHED]
    for e, m in zip(data["published"], PUBLISHED):
        assert e["params"] == count_params(m.architecture)
        assert e["kv_cache_per_sequence"] == kv_cache_of(m.architecture, min(2048, m.architecture.context), 1, "fp16")


def test_llama_2_7b_holds_the_closed_form_kv_cache_and_70b_eight_times_less_than_mha():
    llama = published("Llama-2-7B").architecture
    assert kv_cache_of(llama, 2048, 1, "fp16") == LLAMA_7B_KV_2048 == 1_073_741_824
    assert kv_cache_of(llama, 4096, 3, "fp32") == 2 * 32 * 32 * 128 * 4096 * 3 * 4
    big = published("Llama-2-70B").architecture  # 64 query heads, 8 K/V heads
    mha = dataclasses.replace(big, kv_heads=None)
    assert kv_cache_of(mha, 2048) == 8 * kv_cache_of(big, 2048) == 2 * 80 * 64 * 128 * 2048 * 2


def test_bytes_per_parameter_follow_zero_and_korthikanti_closed_forms():
    assert sum(per_param_bytes("fp32").values()) == sum(per_param_bytes("mixed").values()) == 16
    assert training_state_bytes(10, "mixed") == 160
    with pytest.raises(ValueError, match="precision"):
        per_param_bytes("fp8")
    s, b, h, a = 2048, 3, 4096, 32
    assert korthikanti_activation_bytes(5, s, b, h, a) == 5 * s * b * h * (34 + 5 * a * s // h)
    assert korthikanti_activation_bytes(5, s, b, h, a, recompute_attention=True) == 5 * 34 * s * b * h
    assert kv_cache_bytes(2, 3, 5, 7, 11, 4) == 2 * 2 * 3 * 5 * 7 * 11 * 4


def test_sequences_that_fit_a_card():
    llama = published("Llama-2-7B").architecture
    weights = 2 * count_params(llama)
    assert sequences_that_fit(80 * GB, llama, 2048) == math.floor((80 * GB - weights) / LLAMA_7B_KV_2048) == 61
    assert sequences_that_fit(24 * GB, llama, 2048) == 9
    assert sequences_that_fit(24 * GB, published("GPT-3 175B").architecture, 2048) == 0  # the weights do not fit


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(tie_weights=True, norm_first=True, activation="gelu"),
        dict(n_kv_heads=2, positions="rope"),
        dict(n_kv_heads=1, positions="sinusoidal"),
    ],
)
def test_weights_gradients_and_adamw_state_are_the_formula_to_the_byte(kw):
    config = tiny(**kw)
    step = train_step(config, batch=2)
    n = count_params(config)
    assert step.params == n and step.weights == 4 * n and step.gradients == 4 * n
    assert step.adamw == adamw_state_bytes(n, step.param_tensors) == 8 * n + 4 * step.param_tensors
    assert step.activations == lab_activation_bytes(config, 2, config.context_length)
    # the live bytes of the step, moment by moment: the saved activations (less the ids, there before the step) and the
    # 4-byte loss on top of the state after forward; the gradients alone after backward; nothing left after the step
    ids = 2 * 2 * config.context_length * 8  # the batch's int64 ids and targets
    m = step.moments
    buffers = tensor_bytes(GPT(config).buffers())  # RoPE's frequencies, the sinusoidal table: not parameters
    assert m["start"] == step.weights + step.adamw + ids + buffers
    assert m["forward"] - m["start"] == step.activations - ids + 4
    assert m["backward"] - m["start"] == step.gradients and m["step"] == m["start"]
    assert step.peak >= m["forward"] and step.peak_phase == "backward"  # the page says so


# every value of each factor, each with post-LN and pre-LN (all 54 combinations passed when this was written; these 7 run)
GRID = [
    (False, "relu", "learned", None),
    (True, "gelu_tanh", "learned", 2),
    (False, "gelu_tanh", "sinusoidal", 1),
    (True, "relu", "sinusoidal", None),
    (False, "relu", "rope", 2),
    (True, "gelu", "rope", None),
    (False, "gelu", "rope", 1),
]


@pytest.mark.parametrize("norm_first, activation, positions, kv_heads", GRID)
def test_lab_activation_bytes_equal_what_autograd_saves(norm_first, activation, positions, kv_heads):
    torch.manual_seed(len(GRID))
    config = tiny(norm_first=norm_first, activation=activation, positions=positions, n_kv_heads=kv_heads)
    model = GPT(config)
    for batch, seq in ((1, 12), (3, 5)):
        idx = torch.randint(0, config.vocab_size, (batch, seq))
        targets = idx.roll(-1, dims=1)  # a tensor of its own: the ids and the targets are two int64 buffers
        for explicit in (False, True):
            assert saved_activation_bytes(model, idx, targets, explicit=explicit) == lab_activation_bytes(
                config, batch, seq, explicit=explicit
            ), (batch, seq, explicit)


def test_lab_activation_bytes_refuses_what_it_does_not_count():
    for bad in (dict(dropout=0.1), dict(ablations=("no-residual",))):
        with pytest.raises(ValueError):
            lab_activation_bytes(tiny(**bad), 1, 4)


@pytest.mark.parametrize("kv_heads, batch, tokens", [(None, 1, 12), (2, 3, 7), (1, 2, 5)])
def test_the_kv_cache_after_decoding_is_the_formula_to_the_byte(kv_heads, batch, tokens):
    config = tiny(n_kv_heads=kv_heads)
    measured = kv_cache_bytes_after(GPT(config), batch, tokens)
    assert measured == kv_cache_of(config, tokens, batch, "fp32") == 2 * 2 * (kv_heads or 4) * 6 * tokens * batch * 4


def test_live_bytes_counts_allocations_once_and_frees_them():
    with LiveBytes() as live:
        a = torch.empty(1000)  # 4,000 bytes
        view = a[10:20]  # a view shares a's storage: not counted again
        b = torch.empty(250, dtype=torch.float64)  # 2,000 bytes
        assert live.live == 6000
        del a, view, b
        assert live.live == 0
    with LiveBytes() as live:
        c = torch.ones(3, 4) @ torch.ones(4, 5)  # the two inputs die at once, the product lives
        assert live.live == c.numel() * 4 and live.peak == (12 + 20 + 15) * 4


def test_the_default_claims_are_shown(default):
    assert [(c.id, c.status) for c in default.claims] == [
        ("state_exact", "shown"),
        ("kv_exact", "shown"),
        ("activations_exact", "shown"),
        ("peak", "shown"),
        ("gqa_smaller", "shown"),
        ("mixed_state", "shown"),
        ("llama_kv", "shown"),
    ]
    assert default.lab.gqa_kv_heads == 2 and default.measured["kv_cache_mha"] == 2 * default.measured["kv_cache_gqa"]
    assert default.difference == {part: default.measured[part] - default.formula[part] for part in default.measured}
    assert default.moments["peak"] == default.measured["peak"]
    assert train_step(GPTConfig(**L.LAB), L.LAB_BATCH).peak_phase == "backward"  # as the page's table says


def test_the_gqa_claim_is_not_shown_when_the_kv_heads_equal_the_heads():
    r = result("memory", lab_kv_heads=4, lang="en")  # 4 K/V heads for 4 query heads: multi-head attention
    claim = next(c for c in r.claims if c.id == "gqa_smaller")
    assert claim.status == "not_shown" and claim.measured == 1.0


def null_claims(default, **changed_measurements) -> dict:
    measured = {**default.measured, **changed_measurements}
    return {c.id: c for c in L.claims_for(measured, default.formula, default.lab, default.per_param_bytes, "en")}


def test_the_exact_claims_fail_on_measurements_the_formulas_do_not_describe(default):
    config = GPTConfig(**L.LAB)
    bf16 = tensor_bytes(GPT(config).to(torch.bfloat16).parameters())  # the same model in 16-bit
    assert null_claims(default, weights=bf16)["state_exact"].status == "contradicted"
    repeated = kv_cache_bytes_after(GPT(config), L.LAB_BATCH, config.context_length)  # an MHA cache where GQA's is due
    assert null_claims(default, kv_cache_gqa=repeated)["kv_exact"].status == "contradicted"
    # the written-out path's bytes (the T×T maps saved) where the fused kernel's are due
    assert (
        null_claims(default, activations=default.measured["activations_explicit"])["activations_exact"].status
        == "contradicted"
    )


def test_the_peak_claim_fails_when_the_activations_are_left_out(default):
    formula = {**default.formula, "peak": default.formula["peak"] - default.formula["activations"]}
    claims = {c.id: c for c in L.claims_for(default.measured, formula, default.lab, default.per_param_bytes, "en")}
    assert claims["peak"].status == "contradicted"


def test_the_mixed_claim_fails_for_a_recipe_without_fp32_master_weights(default):
    pure_bf16 = {
        **default.per_param_bytes,
        "mixed": {"weights": 2, "gradients": 2, "adam_m": 2, "adam_v": 2, "total": 8},
    }
    claims = {c.id: c for c in L.claims_for(default.measured, default.formula, default.lab, pure_bf16, "en")}
    assert claims["mixed_state"].status == "contradicted"


def test_the_llama_cache_is_measured_and_a_formula_that_forgets_gqa_is_contradicted(monkeypatch, default):
    (claim,) = [c for c in default.claims if c.id == "llama_kv"]
    assert claim.values["measured"] == claim.values["bytes"] == LLAMA_7B_KV_2048  # one layer measured, times 32
    assert claim.values["layer"] == LLAMA_7B_KV_2048 // 32 and "1.074 GB" in claim.text
    llama = L.MODELS["llama-2-7b"]
    gqa = dataclasses.replace(llama.architecture, kv_heads=8)  # a GQA Llama: the layer measured keeps 8 K/V heads
    monkeypatch.setitem(L.MODELS, "llama-2-7b", dataclasses.replace(llama, architecture=gqa))

    def claims() -> dict:
        out = L.claims_for(default.measured, default.formula, default.lab, default.per_param_bytes, "en")
        return {c.id: c for c in out}

    assert claims()["llama_kv"].status == "shown" and claims()["llama_kv"].values["measured"] == LLAMA_7B_KV_2048 // 4
    # a formula that counts every query head as a K/V head no longer describes the cache the layer keeps
    monkeypatch.setattr(L, "kv_cache_of", lambda a, *args: kv_cache_of(dataclasses.replace(a, kv_heads=None), *args))
    c = claims()["llama_kv"]
    assert c.status == "contradicted" and c.values["bytes"] == LLAMA_7B_KV_2048 != c.values["measured"]


def test_a_typed_configuration_is_sized_like_the_published_one():
    r = result(
        "memory",
        layers=32,
        d_model=4096,
        heads=32,
        d_ff=11008,
        vocab=32000,
        gated=True,
        context=2048,
        batch=4,
        dtype="fp16",
        lang="en",
    )
    assert r.chosen.name == "your configuration" and r.kv_cache_bytes == 4 * LLAMA_7B_KV_2048
    assert r.chosen.kv_cache_per_sequence == LLAMA_7B_KV_2048
    mqa = result("memory", layers=32, d_model=4096, heads=32, kv_heads=1, vocab=32000, context=2048, lang="en")
    assert mqa.chosen.kv_cache_per_sequence == LLAMA_7B_KV_2048 // 32
    gpt2 = result("memory", model="gpt-2-small", context=4096, lang="en")
    assert gpt2.chosen.name == "GPT-2 small" and gpt2.chosen.context == 1024  # capped at the model's own context


@pytest.mark.parametrize(
    "bad, name",
    [
        (dict(layers=2, d_model=64), "heads"),
        (dict(layers=2, d_model=64, heads=5, vocab=10), "heads"),
        (dict(layers=2, d_model=64, heads=4, kv_heads=3, vocab=10), "kv_heads"),
    ],
)
def test_an_incomplete_or_impossible_configuration_is_refused_by_name(bad, name):
    with pytest.raises(ParamError) as err:
        result("memory", lang="en", **bad)
    assert err.value.name == name


def test_every_published_model_has_a_choice_and_a_typed_one_is_an_architecture():
    assert set(L.MODELS) == {L.slug(m.name) for m in PUBLISHED}
    assert isinstance(
        L.typed({**{p.name: p.default for p in L.PARAMS}, "layers": 2, "d_model": 8, "heads": 2, "vocab": 5}),
        Architecture,
    )
