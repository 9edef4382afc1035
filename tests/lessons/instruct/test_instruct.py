"""The instruct topic (issue 38, part 2): the chat template and its loss mask against their definition, the scoring
of a 藏头 answer against a hand check, the shuffled control's requests (the same requests, moved), LoRA training
only its own parameters, the claim at the defaults with its in-run null, and the --json contract."""

from __future__ import annotations

import json

import pytest
import torch
from results import explained, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common import poems as poems_
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS
from attnlab.lessons.instruct import runs
from attnlab.lessons.instruct.lesson import MODELS, instruct

QUICK = TOPICS["instruct"].quick


def test_the_template_and_its_loss_mask_train_the_answer_only():
    poems = poems_.builtin()
    vocab = runs.vocabulary(poems)
    p = poems[3]
    text = runs.prompt(runs.heads(p)) + p.text + runs.END
    assert runs.shown(text) == f"<|user|>藏头：{runs.heads(p)}<|assistant|>{p.text}<|end|>"
    x, y = runs.rows(vocab, [text], [len(runs.prompt(runs.heads(p)))])
    chars = list(vocab)
    assert "".join(chars[i] for i in x[0]) == text[:-1]
    trained = "".join(chars[i] for i in y[0].tolist() if i != -100)
    assert trained == p.text + runs.END  # the answer and its end, never the request
    x, y = runs.rows(vocab, [text, p.text + runs.END], [0, 0])
    assert "".join(chars[i] for i in y[0].tolist() if i != -100) == text[1:]  # prompt_loss / pretraining: all
    assert (y[1, len(p.text) :] == -100).all()  # the padding is not learnt


def test_an_answer_follows_exactly_when_four_lines_in_form_start_with_their_heads():
    good = "春眠不觉晓，夏处闻啼鸟。秋来风雨声，冬落知多少。"
    assert runs.follows(good, "春夏秋冬") == runs.Following(True, 4, True)
    assert runs.follows(good, "春夏秋雪") == runs.Following(False, 3, True)
    assert runs.follows(good[:-1], "春夏秋冬").exact is False  # the last mark missing: out of form
    assert runs.follows("春眠不觉晓，夏处闻啼鸟啊。秋来风雨，冬落知多少。", "春夏秋冬").in_form is False
    assert runs.follows("", "春夏秋冬") == runs.Following(False, 0, False)
    assert runs.follows("春春春春春，夏夏夏夏夏。", "春夏").heads_right == 2  # no head asked, none right


def test_held_out_poems_are_never_trained_on_and_the_control_keeps_the_requests():
    poems = poems_.builtin()
    train, test = poems_.split(poems)
    assert not {p.text for p in train} & {p.text for p in test} and len(test) >= 40
    vocab = runs.vocabulary(poems)
    base = runs.build(len(vocab), 0)
    seen: dict[str, list] = {"plain": [], "shuffled": []}
    from attnlab.train import small

    real = small.train_small

    def spy(model, cfg, batch, *args, **kwargs):  # record the first batch each fine-tuning reads
        x, _ = batch(torch.Generator().manual_seed(cfg.seed))
        seen["shuffled" if spy.shuffled else "plain"] = x.tolist()
        return real(model, cfg, batch, *args, **{**kwargs, "steps": 0})

    small.train_small = spy
    try:
        spy.shuffled = False
        runs.finetune(base, vocab, train, 5, 0)
        spy.shuffled = True
        runs.finetune(base, vocab, train, 5, 0, shuffled=True)
    finally:
        small.train_small = real
    chars = list(vocab)
    plain = ["".join(chars[i] for i in row) for row in seen["plain"]]
    moved = ["".join(chars[i] for i in row) for row in seen["shuffled"]]
    cut = len(runs.prompt("春夏秋冬"))
    assert [s[cut:] for s in plain] == [s[cut:] for s in moved]  # the same answers
    assert sorted(s[:cut] for s in plain) == sorted(s[:cut] for s in moved)  # the same requests
    assert [s[:cut] for s in plain] != [s[:cut] for s in moved]  # paired with other answers
    for s in plain:  # each request is its own answer's heads
        answer = s[cut : cut + runs.POEM]
        assert s[len(runs.USER + runs.ASK) : cut - 1] == "".join(
            line[0] for line in answer.replace("。", "，").split("，")[:4]
        )


def test_lora_fine_tuning_changes_only_its_own_parameters():
    poems = poems_.builtin()
    train, _ = poems_.split(poems)
    vocab = runs.vocabulary(poems)
    base = runs.pretrain(vocab, train, 3, 0)
    tuned = runs.finetune(base, vocab, train, 3, 0, lora=True)
    frozen = {n: p for n, p in tuned.named_parameters() if not p.requires_grad}
    for name, value in base.named_parameters():
        for m in runs.LORA_TARGETS:
            name = name.replace(f".{m}.", f".{m}.base.")
        torch.testing.assert_close(frozen[name], value)  # the base's weights, untouched
    assert sum(p.numel() for p in tuned.parameters() if p.requires_grad) == 2 * len(runs.LORA_TARGETS) * (
        runs.LORA_RANK * 2 * runs.D_MODEL
    )


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract_and_untrained_tuning_is_not_following():
    r = result("instruct", "en", **QUICK)
    assert r.models == list(MODELS) and set(r.following) == set(MODELS)
    assert all(0 <= v <= 1 for v in r.following.values()) and len(r.following_by_seed["lora"]) == 1
    assert r.trainable["lora"] < r.trainable["sft"] and r.memory["lora"] < r.memory["sft"]
    assert r.memory["sft"] == 16 * r.total and r.memory["lora"] == 4 * r.total + 16 * r.trainable["lora"]
    untuned = result("instruct", "en", **{**QUICK, "steps": 0})
    assert untuned.claims[0].status != SHOWN


@pytest.mark.slow  # trains
def test_at_the_defaults_sft_follows_and_its_controls_do_not():
    r = explained("instruct", "en")
    status = {c.id: c.status for c in r.claims}
    assert status["follows"] == SHOWN
    assert r.following["sft"] >= 0.5 and min(r.following_by_seed["sft"]) >= 0.5  # the bar, every seed
    for control in ("base", "shuffled"):
        assert all(s - c >= 0.3 for s, c in zip(r.following_by_seed["sft"], r.following_by_seed[control]))
    assert r.in_form["shuffled"] >= 0.9  # the control learnt the template and the form, not the request
    assert r.heads_right["shuffled"] < 3 * r.chance_head + 0.05  # its heads are near chance (1 / 40 a line)
    assert r.claims[0].null["status"] != SHOWN
    assert r.example.exact["sft"] == runs.follows(r.example.answers["sft"], r.example.request).exact


def test_a_request_or_corpus_of_ones_own_is_read_or_refused_in_one_line(tmp_path):
    for bad in ("春夏", "春夏秋冬天", "ab12", "\x01秋草后", "秋草后，"):
        with pytest.raises(ParamError) as err:
            instruct(request=bad, **QUICK)
        assert err.value.name == "request" and "\n" not in str(err.value)
    with pytest.raises(ParamError) as err:
        instruct(corpus=str(tmp_path / "none.json"), **QUICK)
    assert err.value.name == "corpus" and "\n" not in str(err.value)


@pytest.mark.slow  # trains
def test_json_carries_following_per_model():
    out = CliRunner().invoke(
        app, ["explain", "instruct", "--json", "--lang", "en", "--steps", "20", "--base-steps", "20", "--seeds", "1"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data["following"]) == set(MODELS) and data["example"]["template"].startswith("<|user|>藏头：")
