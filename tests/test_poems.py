"""Tang poems at scale (issue 13): chinese-poetry folders by script and form, the split by poem, a time
budget, the best validation weights, early stopping, and generation that stops at a form's last verse."""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path

import pytest
import torch
from shared_data import data_dir
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.models import GPT, preset
from attnlab.sampling import generate
from attnlab.text import CharTokenizer
from attnlab.text.forms import (
    FORMS,
    classify,
    complete_verses,
    copied_verses,
    longest_copied_span,
    parse_forms,
    position,
    verses,
)
from attnlab.text.poetry import read_poetry
from attnlab.train import TokenData, TrainConfig, Trainer, load_checkpoint, load_train_state, new_run
from attnlab.train.data import get_batch, split_texts

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see attnlab.io.threads


TANG = data_dir() / "chinese-poetry" / "全唐诗"
needs_data = pytest.mark.skipif(not TANG.is_dir(), reason=f"全唐诗 not found at {TANG}")

# Typed here (school readings), as poems of a tiny collection: two 五绝 and one 七绝.
JINGYESI = "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。"
CHUNXIAO = "春眠不觉晓，处处闻啼鸟。\n夜来风雨声，花落知多少。"
BAIDI = "朝辞白帝彩云间，千里江陵一日还。\n两岸猿声啼不住，轻舟已过万重山。"


def _collection(folder: Path, poems: list[str], name: str = "poet.test.0.simplified.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    items = [{"author": "?", "title": str(i), "paragraphs": p.split("\n")} for i, p in enumerate(poems)]
    (folder / name).write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return folder


# --- forms --------------------------------------------------------------------------------------------------


def test_forms_from_line_lengths_and_counts():
    assert classify(JINGYESI) == classify(CHUNXIAO) == "wujue" and classify(BAIDI) == "qijue"
    assert classify(JINGYESI.replace("\n", "")) == "wujue"  # two couplets on one line read the same
    assert classify("\n".join([JINGYESI, CHUNXIAO])) == "wulv"
    assert classify("\n".join([BAIDI, BAIDI])) == "qilv" and len("\n".join([BAIDI, BAIDI])) == 67
    assert classify(JINGYESI.replace("，疑", "。疑")) is None  # a couplet must open with "，"
    assert classify(JINGYESI.replace("光", "光光")) is None  # one verse of six
    assert classify(JINGYESI + "\n" + "欲穷千里目，") is None  # half a couplet
    assert verses(BAIDI) == ["朝辞白帝彩云间", "千里江陵一日还", "两岸猿声啼不住", "轻舟已过万重山"]
    assert parse_forms("regular") == tuple(FORMS) and parse_forms("all") is None
    assert parse_forms("qilv,wujue") == ("qilv", "wujue")
    with pytest.raises(ValueError, match="unknown form"):
        parse_forms("ci")
    assert (position("床前").verse, position("床前").char) == (1, 3)
    assert (position("床前明月光，").verse, position("床前明月光，疑").char) == (2, 2)
    assert complete_verses(JINGYESI) == 4


def test_novelty_measures():
    assert copied_verses([JINGYESI], [CHUNXIAO, "床前明月光，花落知多少。"]) == (1, 4)
    assert longest_copied_span("春眠不觉晓，夜夜", CHUNXIAO) == "春眠不觉晓，"
    assert longest_copied_span("甲乙", CHUNXIAO) == ""


# --- readers on the shared data -----------------------------------------------------------------------------


@needs_data
def test_both_scripts_read_the_same_poems_and_slice_by_form():
    pattern = str(TANG / "poet.tang.0.*json")  # one file in each script
    simp, trad = read_poetry(pattern, "simplified"), read_poetry(pattern, "traditional")
    assert [f.name for f in simp.files] == ["poet.tang.0.simplified.json"]
    assert [f.name for f in trad.files] == ["poet.tang.0.json"]
    assert simp.poems[0].startswith("秦川雄帝宅，函谷壮皇居。") and trad.poems[0].startswith("秦川雄帝宅，函谷壯皇居。")
    assert simp.read == trad.read == 1000  # 1000 poems a file; simplifying can make two of them one
    assert abs(len(simp.poems) - len(trad.poems)) <= 2
    assert {k: v for k, v in simp.counts.items() if k != "other"} == {
        k: v for k, v in trad.counts.items() if k != "other"
    }  # the same forms
    for name, (n_verses, n_chars) in FORMS.items():
        sliced = read_poetry(pattern, "traditional", (name,))
        assert sliced.counts == {name: len(sliced.poems)} and len(sliced.poems) > 0
        assert all(len(vs := verses(p)) == n_verses and {len(v) for v in vs} == {n_chars} for p in sliced.poems)
    assert sum(read_poetry(pattern, "simplified", tuple(FORMS)).counts.values()) < len(simp.poems)


@needs_data
def test_a_folder_reads_one_script_once():
    corpus = read_poetry(str(TANG), "simplified", ("wujue",))
    assert len(corpus.files) == 14 and all(f.name.endswith(".simplified.json") for f in corpus.files)
    assert len(corpus.poems) == len(set(corpus.poems)) > 1000  # 唐诗三百首 repeats some: kept once
    assert corpus.read > len(corpus.poems)
    with pytest.raises(ValueError, match="no .json files"):
        read_poetry(str(TANG / "*.txt"))


# --- the split by poem --------------------------------------------------------------------------------------


def test_split_holds_out_whole_poems():
    texts = [f"{i}首" * (i % 7 + 1) for i in range(200)]
    train, val = split_texts(texts, 0.1, seed=0)
    assert len(val) == 20 and sorted(train + val) == sorted(texts) and not set(train) & set(val)
    assert (train, val) == split_texts(texts, 0.1, seed=0)  # the same held-out poems every run
    assert val != texts[-20:]  # drawn across the collection, not its tail
    tok = CharTokenizer.train(texts)
    data = TokenData.from_split(train, val, tok)
    eot = tok.eot_id
    pieces = [tok.decode(p) for p in _split_at(data.val.tolist(), eot)]
    assert pieces == val  # the validation stream is exactly the held-out poems, each whole


def test_aligned_windows_start_at_a_poem():
    poems = [JINGYESI, CHUNXIAO, BAIDI] * 4
    tok = CharTokenizer.train(poems)
    data = TokenData.from_split(poems, poems[:2], tok, align=True, context_length=16)
    x, y = get_batch(data.train, 16, 64, torch.Generator().manual_seed(0), allowed=data.train_starts)
    assert (x[:, 0] == tok.eot_id).all() and torch.equal(x[:, 1:], y[:, :-1])
    firsts = {tok.decode(row[1:3].tolist()) for row in x}
    assert firsts == {"床前", "春眠", "朝辞"}  # every window opens a poem, and all three are drawn
    assert data.val_starts is not None and (data.val[data.val_starts] == tok.eot_id).all()


def _split_at(ids: list[int], mark: int) -> list[list[int]]:
    out, cur = [], []
    for i in ids:
        if i == mark:
            out.append(cur)
            cur = []
        else:
            cur.append(i)
    return out


def test_a_collection_run_never_trains_on_a_held_out_poem(tmp_path):
    poems = [JINGYESI, CHUNXIAO, BAIDI] + [
        f"{a}{b}山水远，{b}{a}日月长。\n风{a}云{b}起，花{b}鸟{a}忙。" for a in "甲乙丙丁戊己" for b in "子丑寅卯"
    ]
    folder = _collection(tmp_path / "c", poems)
    run = new_run(str(folder), layers=1, heads=2, d_model=16, context=24, steps=1, device="cpu")
    assert run.corpus_options == {"script": "simplified", "form": "wujue,qijue,wulv,qilv", "align": True}
    assert (run.data.train[run.data.train_starts] == run.tokenizer.eot_id).all()  # windows open poems
    assert len(run.held_out) == round(0.1 * len(poems)) and set(run.held_out) <= set(poems)
    train_text = run.tokenizer.decode(run.data.train.tolist())
    assert all(p not in train_text for p in run.held_out)
    assert run.tokenizer.decode(run.data.val.tolist()) == "".join(run.held_out)
    assert read_poetry(str(folder), "simplified", ("qijue",)).poems == [BAIDI]
    with pytest.raises(ValueError, match="none of the 1 .json file"):
        read_poetry(str(folder), "traditional")


# --- time budget, best weights, patience --------------------------------------------------------------------


def _tiny_trainer(cfg: TrainConfig, **kw) -> Trainer:
    torch.manual_seed(0)
    model = GPT(preset("poems-small", vocab_size=12, n_layers=1, n_heads=2, d_model=16, context_length=8))
    g = torch.Generator().manual_seed(0)
    data = TokenData(torch.randint(0, 12, (400,), generator=g), torch.randint(0, 12, (100,), generator=g))
    return Trainer(model, data, cfg, device="cpu", **kw)


def test_minutes_stops_on_the_clock():
    ticks = count()  # a clock that advances one second every time it is read: no real waiting
    trainer = _tiny_trainer(
        TrainConfig(steps=10_000, minutes=0.2, lr=1e-2, batch_size=2), clock=lambda: float(next(ticks))
    )
    lrs = []
    result = trainer.run(callback=lambda e: lrs.append(e["lr"]) if e["type"] == "step" else None)
    assert result.stopped and result.stop_reason == "time" and 1 < result.step < 12  # 12 "seconds" budget
    assert lrs[-1] < lrs[0] and lrs[-1] == pytest.approx(1e-3, rel=0.3)  # the cosine decay ended on time
    assert result.val_loss is not None  # the run is measured where it stopped


class _RiggedVal(Trainer):
    """Validation estimates from a list, so when the best comes and when patience runs out are fixed."""

    def __init__(self, *args, vals, **kw):
        super().__init__(*args, **kw)
        self.vals = list(vals)

    def estimate_val_loss(self):
        return self.vals.pop(0)


def test_early_stopping_when_val_stops_improving():
    cfg = TrainConfig(steps=50, eval_interval=1, patience=2, batch_size=2)
    trainer = _tiny_trainer(cfg).__class__  # noqa: F841 (the plain one is built below, rigged)
    torch.manual_seed(0)
    rigged = _RiggedVal(
        GPT(preset("poems-small", vocab_size=12, n_layers=1, n_heads=2, d_model=16, context_length=8)),
        _tiny_trainer(cfg).data,
        cfg,
        vals=[5.0, 4.0, 4.5, 4.2, 3.0, 3.5],
    )
    result = rigged.run()
    assert result.stop_reason == "patience" and result.step == 4  # two estimates in a row above 4.0
    assert (result.best_val_loss, result.best_step) == (4.0, 2) and not result.restored_best  # keep_best off


def test_best_validation_weights_are_restored_saved_and_resumed(tmp_path):
    cfg = TrainConfig(steps=4, eval_interval=1, keep_best=True, batch_size=2, lr=1e-2)
    base = _tiny_trainer(cfg)
    rigged = _RiggedVal(base.model, base.data, cfg, vals=[5.0, 3.0, 4.0, 6.0])
    seen = {}
    rigged.run(
        callback=lambda e: (
            seen.__setitem__(e["step"], {k: v.clone() for k, v in rigged.model.state_dict().items()})
            if e["type"] == "step"
            else None
        )
    )
    assert rigged.best["step"] == 2 and rigged.last_weights is not None
    for k, v in rigged.model.state_dict().items():
        assert torch.equal(v, seen[2][k])  # the model holds step 2's weights, not step 4's
    assert not torch.equal(
        seen[2]["head.weight"] if "head.weight" in seen[2] else next(iter(seen[2].values())),
        seen[4]["head.weight"] if "head.weight" in seen[4] else next(iter(seen[4].values())),
    )

    from attnlab.text import CharTokenizer as Tok
    from attnlab.train import save_checkpoint

    tok = Tok([chr(0x4E00 + i) for i in range(11)])
    out = save_checkpoint(tmp_path / "best", rigged.model, tok, {"train": cfg.to_dict()}, rigged.state())
    saved = load_checkpoint(out)
    for k, v in saved.model.state_dict().items():
        assert torch.equal(v, seen[2][k])  # the checkpoint's weights are the best estimate's
    scalars, tensors = load_train_state(out)
    assert scalars["best"]["step"] == 2
    resumed = _tiny_trainer(TrainConfig(steps=5, eval_interval=1, keep_best=True, batch_size=2, lr=1e-2))
    resumed.model.load_state_dict(saved.model.state_dict())
    resumed.load_state(scalars, tensors)
    resumed._unrestore()  # what run() does first: continue from the last step's weights
    for k, v in resumed.model.state_dict().items():
        assert torch.equal(v, seen[4][k])
    assert resumed.best["val_loss"] == 3.0 and resumed.best["weights"] is not None


# --- generation in a form -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def memorized(tmp_path_factory) -> Path:
    """A tiny model trained by the CLI on a folder of two 五绝 (it need not know them by heart)."""
    folder = _collection(tmp_path_factory.mktemp("poems"), [JINGYESI, CHUNXIAO])
    out = tmp_path_factory.mktemp("ckpt") / "poems"
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(folder),
            "--out",
            str(out),
            "--steps",
            "60",
            "--layers",
            "1",
            "--heads",
            "2",
            "--d-model",
            "32",
            "--context",
            "32",
            "--lr",
            "0.01",
            "--minutes",
            "30",
            "--lang",
            "en",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "2 poems, simplified, form wujue,qijue,wulv,qilv" in " ".join(result.output.split())
    return out


def test_generation_stops_at_the_forms_last_verse(memorized):
    ckpt = load_checkpoint(memorized)
    tok = ckpt.tokenizer
    full = generate(ckpt.model, tok, "床前", greedy=True, start_of_text=True, max_new_tokens=60, stop_at_eot=False)
    assert complete_verses(full.text) > 2  # left alone for 60 characters, it writes past the second verse
    cut = next(
        k for k in range(len(full.new_ids) + 1) if complete_verses(tok.decode(full.prompt_ids + full.new_ids[:k])) >= 2
    )
    half = generate(
        ckpt.model,
        tok,
        "床前",
        greedy=True,
        start_of_text=True,
        max_new_tokens=60,
        stop_at_eot=False,
        stop_when=lambda text: complete_verses(text) >= 2,
    )
    assert half.stop_reason == "stop_when" and half.new_ids == full.new_ids[:cut]  # the same path, cut there
    assert half.text[-1] in "，。？！" and complete_verses(half.text) == 2


def test_generate_form_shows_verse_and_character(memorized):
    result = CliRunner().invoke(
        app,
        ["generate", "-k", str(memorized), "-p", "春眠", "--greedy", "--form", "wujue", "--explain", "--lang", "en"],
    )
    assert result.exit_code == 0, result.output
    assert "verse·char" in result.output and "1·3" in result.output  # 春眠's next character: verse 1, place 3
    ckpt = load_checkpoint(memorized)
    poem = generate(
        ckpt.model,
        ckpt.tokenizer,
        "春眠",
        greedy=True,
        start_of_text=True,
        stop_when=lambda text: complete_verses(text) >= 4,
    ).text  # what the command wrote
    assert poem + "\n" in result.stdout
    assert complete_verses(poem) <= 4  # stopped at the fourth verse (or earlier, at the end-of-text mark)
    said = "✓ the result is a five-character quatrain" if classify(poem) == "wujue" else "✗ the result is not"
    assert said in result.output
    refused = CliRunner().invoke(app, ["generate", "-k", str(memorized), "-p", "春", "--form", "ci"])
    assert refused.exit_code == 2 and "--form must be one of" in refused.output
