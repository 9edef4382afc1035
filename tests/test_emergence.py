"""Emergence scored two ways (issue 24, item 2; attnlab.lessons.scale.emergence): the exact and smooth scores of a model
that has learned its poems against an untrained one (the null: nothing learned, so nothing shown), and the shape
of a score across sizes on series whose shape is known by construction."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from attnlab.lessons.scale import emergence, planning
from attnlab.models import GPT
from attnlab.text import train_tokenizer
from attnlab.train.data import TokenData
from attnlab.train.loop import Trainer

pytestmark = pytest.mark.slow  # trains models

POEMS = [  # typed here: two openings the sweep scores, and regular poems around them
    "白日依山尽，黄河入海流。\n欲穷千里目，更上一层楼。",
    "春眠不觉晓，处处闻啼鸟。\n夜来风雨声，花落知多少。",
    "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。",
    "红豆生南国，春来发几枝。\n愿君多采撷，此物最相思。",
    "千山鸟飞绝，万径人踪灭。\n孤舟蓑笠翁，独钓寒江雪。",
]


@pytest.fixture(scope="module")
def setup():
    tokenizer = train_tokenizer("char", POEMS)
    # as a poem corpus is read (load_corpus): whole poems held out, every window starting at a poem's start; the
    # first poem again at the end, so that the fourth still begins a whole window
    data = TokenData.from_split(POEMS[:4] + POEMS[:1], POEMS[4:], tokenizer, align=True, context_length=32)
    items = emergence.items_for(tokenizer, data, 32)
    cfg = dataclasses.replace(planning.model_config(2, 32, tokenizer.vocab_size), context_length=32)
    torch.manual_seed(0)
    untrained = GPT(cfg)
    torch.manual_seed(0)
    trainer = Trainer(GPT(cfg), data, planning.train_config(400, 0))
    trainer.run()
    return tokenizer, items, untrained, trainer.model


def test_the_items_are_the_training_splits_openings_and_held_out_regular_poems(setup):
    tokenizer, items, _, _ = setup
    # 床前明月光 is in OPENINGS and in the corpus, but 千山鸟飞绝's poem is held out: only what training read counts
    assert items.couplets == [
        ("白日依山尽", "黄河入海流"),
        ("春眠不觉晓", "处处闻啼鸟"),
        ("床前明月光", "疑是地上霜"),
        ("红豆生南国", "春来发几枝"),
    ]
    assert [tokenizer.decode(p) for p in items.held_out] == [POEMS[-1]]
    assert items.corpus_form_share == 1.0


def test_a_model_that_learned_its_poems_scores_on_both_and_an_untrained_one_on_neither(setup):
    tokenizer, items, untrained, trained = setup
    learned = emergence.measure(trained, tokenizer, items, seed=0)
    null = emergence.measure(untrained, tokenizer, items, seed=0)
    assert learned["exact_recall"] == 1.0 and learned["recall_prob"] > 0.9
    assert learned["form_score"] >= 0.5  # most samples are its 五绝 written back
    # the untrained model: no couplet, no poem in form; its smooth scores sit near chance, 1/V
    chance = 1 / tokenizer.vocab_size
    assert null["exact_recall"] == 0.0 and null["form_score"] == 0.0
    assert chance / 3 < null["recall_prob"] < 3 * chance
    assert null["form_prob"] < 3 * chance < learned["form_prob"]  # the held-out poem's marks: learned from the others


def test_a_corpus_without_regular_poems_has_nothing_to_score():
    texts = ["the cat sat on the mat. " * 20, "a dog ran. " * 20]
    tokenizer = train_tokenizer("char", texts)
    items = emergence.items_for(tokenizer, TokenData.from_texts(texts, tokenizer), 32)
    assert items == emergence.Items([], [], None)
    torch.manual_seed(0)
    model = GPT(planning.model_config(1, 16, tokenizer.vocab_size))
    scores = emergence.measure(model, tokenizer, items)
    assert [scores[k] for k in ("form_score", "form_prob", "exact_recall", "recall_prob")] == [None] * 4


@pytest.mark.parametrize(
    "values, expected",
    [
        ([0.0, 0.0, 0.0, 0.0, 0.0], "flat"),  # the null: nothing changes
        ([0.0, 1 / 32, 0.0, 1 / 32, 0.0], "flat"),  # one poem in 32 either way: within the sampling noise
        ([0.0, 0.0, 0.0, 0.0, 0.5], "jump"),
        ([0.1, 0.2, 0.3, 0.4, 0.5], "gradual"),
        ([0.1, 0.5], "too-few-sizes"),
    ],
)
def test_the_shape_of_a_score_across_sizes(values, expected):
    floor = emergence.noise("form_score", values, 32)
    assert emergence.shape(values, floor)["shape"] == expected


def test_the_emergence_summary_takes_each_sizes_largest_budget():
    runs = [
        dict(
            name=f"L{L}-d{d}-C{b}",
            layers=L,
            d_model=d,
            budget=b,
            n_params=L * d * d,
            tokens=100 * (b + 1),
            val_loss=5.0 - b - L,
            form_score=0.8 if L == 3 else 0.0,
            form_prob=0.2,
            exact_recall=0.0,
            recall_prob=0.01,
            samples=32,
            couplets=15,
        )
        for L, d in ((1, 16), (2, 32), (3, 48))
        for b in range(3)
        if not (L == 3 and b == 2)
    ]
    out = emergence.summarize(runs)
    assert [r["name"] for r in out["rows"]] == ["L1-d16-C2", "L2-d32-C2", "L3-d48-C1"]
    assert out["shapes"]["exact_recall"]["shape"] == "flat" and out["shapes"]["form_prob"]["shape"] == "flat"
    assert out["shapes"]["form_score"]["shape"] == "jump"  # 0, 0, 0.8: one step is the whole rise


def test_a_small_probability_that_falls_threefold_is_not_flat():
    """Measured on 全唐诗: the right verse's per-character p went 0.0039 → 0.0012 with size. As a difference that is
    under 0.003; as the factor it is, it is a fall, and the summary says so (on a log scale)."""
    runs = [
        dict(
            name=f"L1-d{d}-C0",
            layers=1,
            d_model=d,
            budget=0,
            n_params=d,
            tokens=1,
            val_loss=5.0,
            form_score=None,
            form_prob=None,
            exact_recall=0.0,
            recall_prob=p,
            samples=32,
            couplets=15,
        )
        for d, p in ((16, 0.0039), (32, 0.0029), (64, 0.0018), (128, 0.0012))
    ]
    shapes = emergence.summarize(runs)["shapes"]
    assert shapes["recall_prob"]["shape"] == "gradual" and shapes["recall_prob"]["rise"] < 0
    assert shapes["recall_prob"]["scale"] == "log"
    same = [dict(r, recall_prob=0.0039 * (1 + 0.02 * i)) for i, r in enumerate(runs)]  # within 10%: flat
    assert emergence.summarize(same)["shapes"]["recall_prob"]["shape"] == "flat"
