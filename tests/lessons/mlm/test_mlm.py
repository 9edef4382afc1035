"""explain mlm: a bidirectional encoder against a causal GPT, guessing hidden characters.

Checked against things the lesson did not compute: the couplets' known answers (a 上联 character's pair is in
the 下联, on its right), the binomial chance level of a guess among 40 characters, the exact blindness of a
causal mask to the right side, counts of right guesses redone here, and a real corpus (唐诗三百首 from
../shared/data) split by whole poem."""

from __future__ import annotations

import json
import math
import os

import pytest
import torch
from fastapi.testclient import TestClient
from results import explained, result
from shared_data import data_dir
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import as_dict
from attnlab.lessons.mlm import lesson as M
from attnlab.lessons.mlm import models as MM
from attnlab.lessons.mlm import task as mlm_task
from attnlab.web.app import create_app

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads

SMALL = {"steps": 20, "d_model": 8}


TSS = data_dir() / "chinese-poetry" / "全唐诗" / "唐诗三百首.simplified.json"


# --- the built-in text --------------------------------------------------------------------------------------
def test_the_couplets_answer_each_character_with_its_pair():
    assert len(mlm_task.CHARS) == len(set(mlm_task.CHARS)) == 40
    assert all(mlm_task.PARTNER[mlm_task.PARTNER[ch]] == ch != mlm_task.PARTNER[ch] for ch in mlm_task.CHARS)
    texts = mlm_task.couplets()
    assert texts == mlm_task.couplets() and len(set(texts)) == len(texts) == mlm_task.N_COUPLETS  # fixed, distinct
    for text in texts:
        first, second = text[:5], text[6:11]
        assert text[5] == "，" and text[11] == "。" and len(text) == 12
        assert [mlm_task.PARTNER[a] for a in first] == list(second)
    line, at = M.parse_blank(mlm_task.EXAMPLE)  # the default blank is a couplet whose hidden 山 only 水 tells
    assert at == 1 and mlm_task.answer(line[:1] + "山" + line[1:4]) == line[5:10]


def test_held_out_texts_are_whole_and_never_in_a_training_window():
    texts = mlm_task.couplets()
    train, test = M.split(texts)
    assert len(train) + len(test) == len(texts) and len(test) == len(texts) // 5
    assert not set(train) & set(test)
    assert test == texts[M.HOLD_EVERY - 1 :: M.HOLD_EVERY]


def test_verse_parity_counts_the_first_and_second_verse_of_each_couplet():
    assert M.verse_parity("床前明月光，疑是地上霜。\n举头望明月，低头思故乡。") == [0] * 5 + [1] * 5 + [0] * 5 + [1] * 5
    assert M.verse_parity("天山红日高，地水绿月低。") == [0] * 5 + [1] * 5
    assert M.verse_parity("一二三") == [0, 0, 0]


def test_a_blank_is_marked_once():
    assert M.parse_blank("床前?月光") == ("床前月光", 2)
    assert M.parse_blank("床前［？］月光") == ("床前月光", 2)
    assert M.parse_blank("?前明月光") == ("前明月光", 0)
    for bad in ("床前明月光", "床?明?光"):
        with pytest.raises(ParamError) as err:
            M.mlm(text=bad, **SMALL)
        assert err.value.name == "text"
    with pytest.raises(ParamError) as err:  # the couplets never had 床: a clear error, not a silent guess
        M.mlm(text="床前?月光", **SMALL)
    assert err.value.name == "text" and "床" in str(err.value)


# --- the models -----------------------------------------------------------------------------------------------
def test_the_causal_model_cannot_see_the_right_side():
    torch.manual_seed(0)
    gpt, enc = MM.build("causal", 20, 16, 16, 3), MM.build("bidirectional", 20, 16, 16, 3)
    x = torch.randint(19, (1, 12))
    y = x.clone()
    i = 5
    y[0, i + 1 :] = (x[0, i + 1 :] + 1) % 19
    with torch.no_grad():
        assert torch.equal(gpt(x)[0, : i + 1], gpt(y)[0, : i + 1])  # bitwise: the mask, not a small number
        assert not torch.allclose(enc.token_logits(x)[0, : i + 1], enc.token_logits(y)[0, : i + 1])
    r = result("mlm", **SMALL)
    blind = next(c for c in r.claims if c.id == "causal_blind")
    assert r.causal_right_change == 0.0 and r.encoder_right_change > 0.0 and blind.holds


def test_every_character_of_a_window_is_hidden_in_exactly_one_copy():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(30, (5, 12))  # (B, T)
    inp, hidden, targets = MM.mask_groups(x, 31, g)
    K = MM.MASK_GROUPS
    assert inp.shape == hidden.shape == targets.shape == (K * 5, 12)
    assert torch.equal(targets, x.repeat(K, 1))
    assert torch.equal(hidden.view(K, 5, 12).sum(0), torch.ones(5, 12, dtype=torch.long))  # once, in one copy
    assert torch.equal(inp == 31, hidden) and torch.equal(inp[~hidden], targets[~hidden])


def test_both_models_have_the_same_shape_and_the_encoder_normalizes_its_embeddings():
    gpt, enc = MM.build("causal", 40, 16, 16, 0), MM.build("bidirectional", 40, 16, 16, 0)
    for key in ("n_layers", "d_model", "n_heads", "context_length", "positions", "d_ff", "norm_first"):
        assert getattr(gpt.config, key) == getattr(enc.config, key), key
    assert enc.config.embed_norm  # BERT's embedding LayerNorm: see MM.build
    x = torch.randint(39, (2, 10))
    with torch.no_grad():
        normed = enc.embed(x)  # (2, 10, 16): what the first attention layer reads, unit scale, not ~0.02
    assert float(enc.embed.tok(x).detach().std()) < 0.1  # the table's own scale (std 0.02)
    assert bool((normed.std(-1, unbiased=False) > 0.9).all())  # ~1 (LayerNorm; its eps takes a little off)


# --- what it measures -----------------------------------------------------------------------------------------
def test_accuracies_are_the_counts_of_right_guesses():
    r = result("mlm", **SMALL)
    _, test = M.split(mlm_task.couplets())
    assert r.n_masked == sum(M.maskable(ch) for p in test for ch in p) == 10 * len(test)
    assert r.n_by_verse == {"first": 5 * len(test), "second": 5 * len(test)}
    for k in (*M.MODELS, "baseline"):
        assert r.accuracy[k] == r.correct[k] / r.n_masked
        by = r.by_verse[k]
        assert round(by["first"] * r.n_by_verse["first"] + by["second"] * r.n_by_verse["second"]) == r.correct[k]
    assert [e.poem for e in r.examples] == test[: len(r.examples)]
    for e in r.examples:
        assert [g.char for g in e.guesses] == [ch for ch in e.poem if M.maskable(ch)]
        assert all(M.maskable(getattr(g, k)) for g in e.guesses for k in M.MODELS)
    for k in M.MODELS:
        right = sum(getattr(g, k) == g.char for e in r.examples for g in e.guesses)
        assert right <= r.correct[k] and r.correct[k] - right <= r.n_masked - sum(len(e.guesses) for e in r.examples)
    for kind in M.MODELS:  # the learner's blank: top guesses, most probable first, among characters
        ps = [c.p for c in getattr(r.fill, kind)]
        assert len(ps) == M.TOP and ps == sorted(ps, reverse=True) and 0 < sum(ps) <= 1 + 1e-6
        assert all(c.char in mlm_task.CHARS for c in getattr(r.fill, kind))
    assert r.fill.text == "天[?]红日高，地水绿月低。" and r.fill.position == 1


@pytest.mark.parametrize("seed", range(5))
def test_at_the_defaults_both_sides_win_exactly_where_the_answer_is_on_the_right(seed):
    """The lesson's point, over seeds 0-4 at the page's defaults: the encoder gets (nearly) every character;
    the GPT gets the 下联 (its pair is on the left) and is at chance on the 上联 (its pair is on the right)."""
    r = result("mlm", "en", seed=seed)  # seed 0 is the defaults every other test reads: computed once
    status = {c.id: c.status for c in r.claims}
    assert list(status) == ["accuracy", "causal_blind", "direction", "shortcut", "first_verse_chance"]
    assert all(v == "shown" for k, v in status.items() if k != "shortcut"), status
    # the two left-only GPTs tie within noise on most seeds, and at seed 0 the shortcut's lead sits at its margin
    # (shown on one CPU, not on another): never contradicted is what holds on any machine
    assert status["shortcut"] != "contradicted"
    assert r.by_verse["bidirectional"]["first"] >= 0.9 and r.by_verse["bidirectional"]["second"] >= 0.9
    assert r.by_verse["causal"]["second"] >= 0.9
    n, p = r.n_by_verse["first"], 1 / 40
    for left_only in ("causal", "causal_fill"):
        assert r.by_verse[left_only]["first"] <= p + 4 * (p * (1 - p) / n) ** 0.5  # binomial: chance, not learning
    assert r.held_out_loss["bidirectional"] < r.held_out_loss["causal_fill"]  # the direction alone, on the same task
    assert r.accuracy["bidirectional"] > r.accuracy["causal"] and "ahead" in r.claims[0].text
    assert r.fill.bidirectional[0].char == "山"  # 天?…，地水…: only the 水 on the right says 山


def test_reproducible_with_a_seed_and_cached():
    a = as_dict(M.mlm(**SMALL, seed=3))
    M.trained.cache_clear()
    b = as_dict(M.mlm(**SMALL, seed=3))
    assert a == b
    c = as_dict(M.mlm(**SMALL, seed=4))
    assert c["encoder_right_change"] != a["encoder_right_change"]


def test_api_cli_and_python_give_the_same_numbers():
    py = as_dict(explained("mlm", lang="en", **SMALL))  # as every view shows it: the claims carry their nulls
    with TestClient(create_app()) as client:
        api = client.get("/api/explain/mlm", params={**SMALL, "lang": "en"}).json()
        bad = client.get("/api/explain/mlm", params={**SMALL, "text": "床前明月光"})
        corpus = client.get("/api/explain/mlm", params={**SMALL, "corpus": "/etc"})
    assert bad.status_code == 422 and corpus.status_code == 422  # no blank; the web never reads a path
    out = CliRunner().invoke(app, ["explain", "mlm", "--steps", "20", "--d-model", "8", "--json", "--lang", "en"])
    assert out.exit_code == 0, out.output
    cli = json.loads(out.stdout)
    for key in (
        "accuracy",
        "correct",
        "n_masked",
        "by_verse",
        "held_out_loss",
        "final_loss",
        "causal_right_change",
        "encoder_right_change",
        "fill",
        "claims",
    ):
        assert py[key] == api[key] == cli[key], key


def test_a_txt_corpus_is_split_by_poem(tmp_path):
    lines = [
        "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
        "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
        "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。",
        "千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。",
        "红豆生南国，春来发几枝。愿君多采撷，此物最相思。",
        "空山不见人，但闻人语响。返景入深林，复照青苔上。",
        "锄禾日当午，汗滴禾下土。谁知盘中餐，粒粒皆辛苦。",
        "鹅鹅鹅，曲项向天歌。白毛浮绿水，红掌拨清波。",
        "众鸟高飞尽，孤云独去闲。相看两不厌，只有敬亭山。",
        "松下问童子，言师采药去。只在此山中，云深不知处。",
    ]
    txt = tmp_path / "poems.txt"
    txt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = M.mlm(corpus=str(txt), **SMALL)
    assert (r.n_poems, r.n_train_poems, r.n_test_poems, r.corpus) == (10, 8, 2, "poems.txt")
    assert r.chance is None and [c.id for c in r.claims] == ["accuracy", "causal_blind", "direction", "shortcut"]
    assert r.fill.text == "床前[?]月光，疑是地上霜。"  # a poem corpus's own example blank
    few = tmp_path / "few.txt"
    few.write_text("\n".join(lines[:3] * 2), encoding="utf-8")  # 3 poems, each twice: kept once
    for bad in (few, tmp_path / "missing.json"):
        with pytest.raises(ParamError) as err:
            M.mlm(corpus=str(bad), **SMALL)
        assert err.value.name == "corpus"


@pytest.mark.skipif(not TSS.is_file() and os.environ.get("CI") != "true", reason=f"唐诗三百首 not found at {TSS}")
def test_real_poems_from_the_shared_data():
    """唐诗三百首 (simplified): held out whole, every 5th poem; its hidden characters, verses and claims."""
    r = M.mlm(corpus=str(TSS), steps=30, d_model=16, lang="en")
    raw = json.loads(TSS.read_text(encoding="utf-8"))
    poems, _ = M.read_poems(str(TSS))
    train, test = M.split(poems)
    assert not set(train) & set(test) and r.n_poems == len(poems) == len(set(poems)) > 300 and len(raw) >= len(poems)
    assert r.n_test_poems == r.n_poems // 5 and r.context == 32
    assert (
        r.n_by_verse["first"] + r.n_by_verse["second"]
        == r.n_masked
        == sum(M.maskable(c) for p in test for c in p)
        > 1000
    )
    status = {c.id: c.status for c in r.claims}
    # 30 steps: the encoder leads on -ln p but trails on accuracy, so no comparison is a verdict; the mask is exact
    assert status["causal_blind"] == "shown" and status["accuracy"] == "not_shown"
    assert "contradicted" not in status.values(), status
    assert r.fill.text == "床前[?]月光，疑是地上霜。" and len(r.fill.causal) == M.TOP


def test_the_held_out_loss_is_the_cross_entropy_of_each_guess():
    """The GPT's mean -ln p over the held-out characters, redone one character at a time with F.cross_entropy."""
    import torch.nn.functional as F

    r = M.mlm(**SMALL)
    poems = tuple(mlm_task.couplets())
    tr = M.trained(poems, SMALL["steps"], SMALL["d_model"], r.context, 0)
    _, test = M.split(list(poems))
    ids = [tr.tokenizer.eot_id]
    for poem in test:
        ids += tr.tokenizer.encode(poem) + [tr.tokenizer.eot_id]
    stream = torch.tensor(ids)
    off = torch.where(tr.allowed, 0.0, float("-inf"))
    losses = []
    with torch.no_grad():
        for j in MM.targets(test):
            logits = tr.models["causal"](stream[max(0, j - r.context) : j][None])[0, -1]  # (V,)
            losses.append(float(F.cross_entropy((logits + off)[None], stream[j][None])))
    assert len(losses) == r.n_masked
    assert r.held_out_loss["causal"] == pytest.approx(sum(losses) / len(losses), rel=1e-5)


def test_the_result_shows_in_a_notebook():
    r = M.mlm(**SMALL, lang="en")
    html = r._repr_html_()
    assert "<script" not in html.lower() and "http" not in html.lower()
    assert all(c.text.split()[0] in html for c in r.claims) and r.fill.text in html


# ------------------------------------------------------------------------------- the shortcut, counted over seeds
def test_the_shortcut_at_other_seeds_is_the_same_pair_trained_there():
    """seeds = 3: seeds 1 and 2 of the left-only pair are trained as trained() trains them at those seeds, so their
    paired leads equal the full lesson's at seed 1 and 2 (to the last digit)."""
    r = M.mlm(lang="en", seeds=3, **SMALL)
    assert [s["seed"] for s in r.shortcut_seeds] == [0, 1, 2]
    for s in r.shortcut_seeds[1:]:
        alone = M.mlm(lang="en", seed=s["seed"], **SMALL).paired["causal-causal_fill"]
        assert (s["z_accuracy"], s["z_loss"]) == (alone["z_accuracy"], alone["z_loss"])
    shortcut = next(c for c in r.claims if c.id == "shortcut")
    assert shortcut.values["seeds"] == [0, 1, 2] and len(shortcut.values["leads"]) == 3


@pytest.mark.parametrize(
    ("leads", "status"),
    [
        ([9.0] * 5, "shown"),  # 5 of 5 decisive seeds ahead: a coin does that with probability 1/32 < 5%
        ([9.0] * 4 + [0.5], "not_shown"),  # 4 of 4: 1/16 > 5%, however far each seed leads
        ([9.0], "not_shown"),  # one seed: no count can beat a coin (the page's default)
        ([0.5, -1.0, 1.9, 0.0, -0.3], "not_shown"),  # every seed level: nothing decided, never contradicted
        ([-9.0] * 5, "contradicted"),  # behind at every decisive seed: the opposite, measured
    ],
)
def test_the_shortcut_counts_decisive_seeds_against_a_coin(leads, status):
    from dataclasses import replace

    from attnlab.lessons.mlm.claims import claims_of

    r = result("mlm", "en", **SMALL)
    seeds = [{"seed": k, "z_accuracy": z, "z_loss": z} for k, z in enumerate(leads)]
    claim = next(c for c in claims_of(replace(r, shortcut_seeds=seeds), "en") if c.id == "shortcut")
    assert claim.status == status
    decisive = sum(abs(z) >= 2 for z in leads)
    assert claim.values["n"] == decisive and claim.values["chance"] == 0.5
    if decisive:  # what a coin reaches with probability at most 5%, summed here from the binomial itself
        tail = lambda k: sum(math.comb(decisive, i) for i in range(k, decisive + 1)) / 2**decisive  # noqa: E731
        assert claim.values["needed"] == next((k for k in range(decisive + 1) if tail(k) <= 0.05), decisive + 1)
