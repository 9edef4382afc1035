"""The training loop, runs and checkpoints: memorize the poems, determinism, resume, atomic and checked files."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlab.models import GPT
from attnlab.sampling import generate
from attnlab.text import JINGYESI, POEM, CharTokenizer
from attnlab.train import (
    CheckpointError,
    TokenData,
    TrainConfig,
    get_batch,
    lm_loss,
    load_checkpoint,
    new_run,
    pick_device,
    resume_run,
    token_stream,
)
from attnlab.train.storage import checkpoint as checkpoint_module

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads


def weights_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# --- memorizing the poems (fixed step budgets: the defaults) ---------------------------------------------


def test_poem_is_memorized_within_the_default_budget():
    run = new_run("poem", seed=0, device="cpu")
    assert run.config.steps == 60
    before = run.trainer.probe_prob()
    vocab = run.tokenizer.vocab_size
    # untrained: close to uniform over the 6 entries (5 characters + end mark)
    assert 0.5 / vocab < before < 2.0 / vocab
    result = run.trainer.run()
    assert result.p_probe > 0.95  # p(光 | 床前明月)
    assert result.history[0]["loss"] > 1.0 > 0.05 > result.history[-1]["loss"]
    gen = generate(run.model, run.tokenizer, "床前", max_new_tokens=20, greedy=True)
    assert gen.text == POEM and gen.stop_reason == "eot"


def test_jingyesi_is_recited_from_its_first_character():
    run = new_run("jingyesi", seed=0, device="cpu")
    run.trainer.run()
    gen = generate(run.model, run.tokenizer, "床", max_new_tokens=40, greedy=True)
    assert gen.text == JINGYESI and gen.stop_reason == "eot"


# --- the loop ------------------------------------------------------------------------------------------


def test_loss_is_the_mean_negative_log_probability():
    run = new_run("jingyesi", seed=0, device="cpu")
    x, y = get_batch(run.data.train, run.model.config.context_length, 4, torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours = float(lm_loss(run.model, x, y))
        logits = run.model(x).double().numpy()  # (B, T, V)
    # independent: log softmax in numpy
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    expected = -np.take_along_axis(logp, y.numpy()[..., None], -1).mean()
    assert ours == pytest.approx(expected, rel=1e-5)


def test_same_seed_same_run_other_seed_other_run():
    runs = [new_run("jingyesi", steps=15, seed=s, device="cpu") for s in (4, 4, 5)]
    results = [r.trainer.run() for r in runs]
    assert weights_equal(runs[0].model, runs[1].model)
    assert [h["loss"] for h in results[0].history] == [h["loss"] for h in results[1].history]
    assert not weights_equal(runs[0].model, runs[2].model)


def test_events_and_stopping():
    run = new_run("poem", steps=50, seed=0, device="cpu")
    events = []
    result = run.trainer.run(callback=events.append, should_stop=lambda: run.trainer.step >= 7)
    assert result.stopped and result.step == 7
    steps = [e for e in events if e["type"] == "step"]
    assert [e["step"] for e in steps] == list(range(1, 8))
    assert all(0 < e["p_probe"] < 1 and e["loss"] > 0 for e in steps)
    assert events[-1]["type"] == "done" and events[-1]["stopped"] and events[-1]["step"] == 7


def test_corpus_run_holds_out_validation(tmp_path):
    corpus = tmp_path / "poems.txt"
    corpus.write_text((JINGYESI + "\n") * 40, encoding="utf-8")
    run = new_run(str(corpus), steps=30, layers=1, heads=2, d_model=32, context=16, eval_iters=3, seed=0, device="cpu")
    n = len(token_stream([corpus.read_text(encoding="utf-8")], run.tokenizer))
    assert len(run.data.train) + len(run.data.val) == n and len(run.data.val) == int(n * 0.1)
    result = run.trainer.run()
    assert result.val_loss is not None and result.val_loss < math.log(run.tokenizer.vocab_size)
    assert run.trainer.probe.context == "床前明月" and run.trainer.probe.target == "光"


def test_bpe_run(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(JINGYESI * 30, encoding="utf-8")
    run = new_run(
        str(corpus),
        tokenizer="bpe",
        bpe_vocab_size=300,
        steps=5,
        layers=1,
        heads=2,
        d_model=32,
        context=16,
        seed=0,
        device="cpu",
    )
    assert run.tokenizer.kind == "bpe" and run.model.config.vocab_size == 300
    run.trainer.run()
    out = run.save(tmp_path / "ckpt")
    assert load_checkpoint(out).tokenizer.encode(JINGYESI) == run.tokenizer.encode(JINGYESI)


# --- data ----------------------------------------------------------------------------------------------


@given(st.integers(2, 200), st.integers(1, 16), st.integers(1, 8), st.integers(0, 99))
def test_batches_are_windows_shifted_by_one(n, context, batch, seed):
    stream = torch.arange(n) * 7 % 11
    x, y = get_batch(stream, context, batch, torch.Generator().manual_seed(seed))
    assert x.shape == y.shape and x.shape[1] == min(context, n - 1)
    assert torch.equal(x[:, 1:], y[:, :-1])
    for row_x, row_y in zip(x, y):  # each row is a contiguous slice of the stream
        start = next(i for i in range(n - x.shape[1]) if torch.equal(stream[i : i + x.shape[1]], row_x))
        assert torch.equal(stream[start + 1 : start + 1 + x.shape[1]], row_y)


def test_stream_ends_every_text_with_the_end_mark():
    tok = CharTokenizer.train(["床前", "明月"])
    assert token_stream(["床前", "明月"], tok).tolist() == [0, 1, 4, 2, 3, 4]
    data = TokenData.from_texts(["床前明月光"] * 10, CharTokenizer.train(POEM), val_fraction=0.1)
    assert len(data.val) == 6 and len(data.train) == 54


def test_learning_rate_schedule_closed_form():
    cfg = TrainConfig(steps=101, lr=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    assert cfg.lr_at(0) == pytest.approx(1e-3 / 11)
    assert cfg.lr_at(10) == pytest.approx(1e-3)  # warm-up done
    assert cfg.lr_at(55) == pytest.approx(1e-4 + 0.5 * (1 + math.cos(math.pi * 0.5)) * 9e-4)
    assert cfg.lr_at(100) == pytest.approx(1e-4)
    assert TrainConfig(schedule="constant", lr=0.01).lr_at(77) == 0.01


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(steps=0), "steps"),
        (dict(lr=0.0), "lr"),
        (dict(lr=5.0), "lr"),
        (dict(batch_size=0), "batch_size"),
        (dict(schedule="linear"), "schedule"),
        (dict(seed=-1), "seed"),
    ],
)
def test_train_config_refuses_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kwargs)


def test_device_choice():
    assert pick_device("cpu").type == "cpu"
    assert pick_device("auto").type in ("cpu", "cuda", "mps")
    with pytest.raises(ValueError, match="device must be one of"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            pick_device("cuda")


# --- checkpoints ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = new_run("jingyesi", steps=40, seed=2, device="cpu")
    run.trainer.run()
    out = run.save(tmp_path_factory.mktemp("ck") / "jingyesi")
    return run, out


def test_checkpoint_round_trip_gives_identical_logits(trained):
    run, out = trained
    assert sorted(os.listdir(out)) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "train_state.json",
        "train_state.safetensors",
    ]
    ckpt = load_checkpoint(out)
    idx = torch.tensor([run.tokenizer.encode(JINGYESI)])
    run.model.eval()
    with torch.no_grad():
        assert torch.equal(ckpt.model(idx), run.model(idx))
    assert ckpt.tokenizer.chars == run.tokenizer.chars
    assert ckpt.meta["step"] == 40 and ckpt.meta["corpus"] == "jingyesi"
    assert GPT(ckpt.model.config).config == run.model.config


def test_truncated_weights_are_refused(trained, tmp_path):
    _, out = trained
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (broken / name).write_bytes((out / name).read_bytes())
    data = (out / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="model.safetensors is corrupt or truncated"):
        load_checkpoint(broken)


def test_missing_or_wrong_checkpoints_are_named(trained, tmp_path):
    _, out = trained
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nowhere")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.json").write_bytes((out / "config.json").read_bytes())
    with pytest.raises(CheckpointError, match="missing model.safetensors, tokenizer.json"):
        load_checkpoint(partial)
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("model.safetensors", "tokenizer.json"):
        (bad / name).write_bytes((out / name).read_bytes())
    (bad / "config.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(CheckpointError, match="config.json is corrupt"):
        load_checkpoint(bad)
    meta = json.loads((out / "config.json").read_text(encoding="utf-8"))
    meta["model"]["d_model"] = 32  # weights no longer fit the config
    (bad / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(CheckpointError, match="does not match the model in config.json"):
        load_checkpoint(bad)


def test_a_crash_while_saving_leaves_the_old_checkpoint(trained, tmp_path, monkeypatch):
    run, out = trained
    target = tmp_path / "ck"
    run.save(target)
    before = {p.name: p.read_bytes() for p in target.iterdir()}

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint_module, "save_tokenizer", crash)
    with pytest.raises(OSError, match="disk full"):
        run.save(target)
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no temporary directory left behind


def test_saving_never_replaces_a_foreign_directory(trained, tmp_path):
    run, _ = trained
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(CheckpointError, match="not an attnlab checkpoint"):
        run.save(tmp_path)
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_resume_continues_from_the_saved_step_exactly(tmp_path):
    straight = new_run("jingyesi", steps=30, seed=3, device="cpu")
    straight.trainer.run()

    first = new_run("jingyesi", steps=30, seed=3, device="cpu")
    first.trainer.run(should_stop=lambda: first.trainer.step >= 12)
    first.save(tmp_path / "ck")

    resumed = resume_run(tmp_path / "ck", device="cpu")
    assert resumed.trainer.step == 12
    events = []
    resumed.trainer.run(callback=events.append)
    assert events[0]["step"] == 13 and resumed.trainer.step == 30
    assert weights_equal(resumed.model, straight.model)  # as if it had never stopped

    resumed.save(tmp_path / "ck")
    with pytest.raises(ValueError, match="already trained 30 steps"):
        resume_run(tmp_path / "ck", device="cpu")
    assert resume_run(tmp_path / "ck", steps=35, device="cpu").config.steps == 35


# --- the pipeline lesson (steps ① to ④) ----------------------------------------------------------------


def test_pipeline_lesson_numbers_match_the_model():
    from attnlab.lessons.pipeline.lesson import pipeline

    run = new_run("poem", seed=0, device="cpu")
    model, tok = run.model.eval(), run.tokenizer
    view = pipeline(model, tok)  # 床前明月光, and p(光 | 床前明月)
    assert view.tokens.ids == [0, 1, 2, 3, 4] and view.tokens.vocab == list("床前明月光") + ["<eot>"]

    e = view.embedding
    ids = torch.tensor(e.ids)
    assert torch.allclose(
        torch.tensor(e.token_rows, dtype=torch.float64), model.embed.tok.weight[ids].detach().double()
    )
    assert torch.allclose(
        torch.tensor(e.position_rows, dtype=torch.float64), model.embed.pos.weight[:5].detach().double()
    )
    x = torch.tensor(e.sums, dtype=torch.float32)  # (T, d_model): what block 1 reads

    # ③ recomputed by hand from the first block's own W_Q, W_K: softmax(Q K^T / sqrt(d_k)) under the causal mask
    attn = model.blocks[0].attn
    d_k = attn.d_k
    for m in view.attention.maps[: model.config.n_heads]:
        sl = slice(m.head * d_k, (m.head + 1) * d_k)
        q, k = attn.W_Q(x)[:, sl], attn.W_K(x)[:, sl]  # (T, d_k)
        scores = (q @ k.T / d_k**0.5).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf"))
        assert torch.allclose(torch.tensor(m.weights, dtype=torch.float32), torch.softmax(scores, -1), atol=1e-6)
    assert len(view.attention.maps) == model.config.n_layers * model.config.n_heads

    n = view.next
    with torch.no_grad():
        p = torch.softmax(model(torch.tensor([[0, 1, 2, 3]]))[0, -1].double(), -1)
    assert sum(t.prob for t in n.distribution) == pytest.approx(1.0)
    assert n.p_target == pytest.approx(float(p[4])) and n.loss == pytest.approx(-math.log(float(p[4])))
    assert n.uniform == pytest.approx(1 / 6) and n.uniform_loss == pytest.approx(math.log(6))

    run.trainer.run()
    after = pipeline(run.model, tok).next
    assert after.p_target > 0.95 and after.loss < 0.05 < n.loss
    assert after.top[0].token == "光"


def test_pipeline_lesson_refuses_and_crops():
    from attnlab.lessons.pipeline.lesson import pipeline

    run = new_run("poem", seed=0, device="cpu")
    with pytest.raises(ValueError, match="春"):
        pipeline(run.model, run.tokenizer, text="春床")
    view = pipeline(run.model, run.tokenizer, text="床前明月光床前明月光")  # 10 tokens, context 8
    assert view.cropped == 2 and view.attention.tokens == list("明月光床前明月光")
