"""`attnlab scale` and attnlab.lessons.scale.sweep (its plan: .planning; issue 24, item 1): a tiny sweep end to end,
resumed after a kill, and refusing a folder that holds another sweep. The plan is made from given step times, so it
does not depend on how loaded the machine is; the runs are real (tiny GPTs on a synthetic corpus with structure to
learn)."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.scale import planning, sweep
from attnlab.text import train_tokenizer
from attnlab.train.run import load_corpus

pytestmark = pytest.mark.slow  # trains models

LADDER = ((1, 16), (1, 32), (2, 32), (2, 48))
TIMES = {size: 0.002 * size[0] * size[1] / 16 for size in LADDER}  # seconds a step, as if measured
MINUTES = 0.05  # with TIMES: about eight short runs


@pytest.fixture(autouse=True)
def small_steps(monkeypatch):
    """Shorter windows, smaller batches and a shorter final estimate than a real sweep's: seconds, not minutes."""
    monkeypatch.setattr(planning, "CONTEXT", 32)
    monkeypatch.setattr(planning, "BATCH", 8)
    monkeypatch.setattr(planning, "EVAL_ITERS", 5)
    monkeypatch.setattr(planning, "MIN_STEPS", 20)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """150,000 characters of a seeded order-2 Markov source over 24 symbols: a bigger model can learn more of it."""
    rng, symbols = random.Random(0), "abcdefghijklmnopqrstuvwx"
    table = {(a, b): rng.sample(symbols, 3) for a in symbols for b in symbols}
    text = ["a", "b"]
    for _ in range(150_000):
        text.append(rng.choice(table[(text[-2], text[-1])]))
    path = tmp_path_factory.mktemp("corpus") / "markov.txt"
    path.write_text("".join(text), encoding="utf-8")
    return path


def corpus_data(path):
    source = load_corpus(str(path))
    tokenizer = train_tokenizer("char", source.texts)
    return source.name, source.sha256, tokenizer, source.token_data(tokenizer, planning.CONTEXT)


def test_a_tiny_sweep_writes_the_contract_and_resumes_run_by_run(corpus, tmp_path, monkeypatch):
    out, data = tmp_path / "sweep", corpus_data(corpus)
    events = []
    result = sweep.run_sweep(
        data, out, minutes=MINUTES, ladder=LADDER, seconds_per_step=TIMES, bootstrap=40, progress=events.append
    )
    runs = result["runs"]
    assert len({(r["layers"], r["d_model"]) for r in runs}) >= 3
    assert len({r["budget"] for r in runs}) == planning.N_BUDGETS
    for r in runs:
        assert {"n_params", "tokens", "flops", "val_loss", "form_score", "exact_recall"} <= set(r)
        assert 0 < r["val_loss"] < result["uniform_loss"]  # every run learned something
        assert r["steps"] >= planning.MIN_STEPS
    # within a budget every run spent about the same compute; budgets are BUDGET_RATIO apart
    for b in range(planning.N_BUDGETS):
        flops = [r["flops"] for r in runs if r["budget"] == b]
        assert max(flops) <= min(flops) * 1.2
    assert result["budgets"][1] == pytest.approx(planning.BUDGET_RATIO * result["budgets"][0])
    assert {"alpha", "beta", "alpha_interval", "beta_interval", "shown", "reason"} <= set(result["fit"])
    assert all("tokens_per_param" in (row.get("fitted") or row["measured"]) for row in result["optimum"])
    for row in (r for r in result["optimum"] if "fitted" in r):  # an optimum outside the sizes run is flagged
        n_lo, n_hi = result["fit"]["n_range"]
        assert row["fitted"]["in_range"] == (n_lo <= row["fitted"]["n_params"] <= n_hi)
    assert result["mlp_baseline"] and all(m["val_loss"] > 0 for m in result["mlp_baseline"])
    assert json.loads((out / "scale.json").read_text(encoding="utf-8"))["runs"] == runs
    assert [e["phase"] for e in events][:2] == ["plan", "run"] and events[-1]["phase"] == "fit"

    # killed after all but one run: the next call trains only that one, and gives the same numbers
    (out / "scale.json").unlink()
    last = runs[-1]["name"]
    (out / "runs" / f"{last}.json").unlink()
    trained = []
    real = sweep.train_point
    monkeypatch.setattr(sweep, "train_point", lambda spec, *a, **kw: trained.append(spec.name) or real(spec, *a, **kw))
    again = sweep.run_sweep(data, out, minutes=MINUTES * 5, ladder=LADDER, seconds_per_step=None, bootstrap=40)
    assert trained == [last]  # the kept plan, not a new one (no new measurement, other minutes ignored)
    assert [r["val_loss"] for r in again["runs"]] == [r["val_loss"] for r in runs]


def test_on_text_with_nothing_to_learn_no_law_is_shown(tmp_path):
    """The null, by construction: independent uniform characters. Every size reaches about log V, so the
    sweep's verdict must not be "shown"."""
    rng = random.Random(7)
    noise = tmp_path / "noise.txt"
    noise.write_text("".join(rng.choice("abcdefghijklmnop") for _ in range(150_000)), encoding="utf-8")
    result = sweep.run_sweep(
        corpus_data(noise), tmp_path / "out", minutes=MINUTES, ladder=LADDER, seconds_per_step=TIMES, bootstrap=40
    )
    assert all(abs(r["val_loss"] - result["uniform_loss"]) < 0.1 for r in result["runs"])
    assert result["fit"]["shown"] is False and result["fit"]["reason"] != "shown"


def made_up_runs(monkeypatch) -> None:
    """Each run's record made up from its plan (the real runs are the first test's)."""
    monkeypatch.setattr(
        sweep,
        "train_point",
        lambda spec, *a, **kw: {
            "name": spec.name,
            "layers": spec.layers,
            "d_model": spec.d_model,
            "budget": spec.budget,
            "n_params": spec.d_model**2 * spec.layers,
            "tokens": spec.tokens,
            "flops": spec.flops,
            "val_loss": 1.5 + 40 / spec.d_model + 3e3 / spec.tokens**0.5,
            "form_score": None,
            "exact_recall": None,
        },
    )
    monkeypatch.setattr(sweep, "train_mlp", lambda *a, **kw: None)


def test_a_folder_of_another_sweep_or_other_files_is_refused(corpus, tmp_path, monkeypatch):
    data = corpus_data(corpus)
    out = tmp_path / "sweep"
    made_up_runs(monkeypatch)  # no training needed to check the folder
    sweep.run_sweep(data, out, minutes=MINUTES, ladder=LADDER[:2], seconds_per_step=TIMES, bootstrap=40)
    with pytest.raises(ValueError, match="holds another sweep"):
        sweep.run_sweep(data, out, minutes=MINUTES, ladder=LADDER[:2], seconds_per_step=TIMES, seed=1, bootstrap=40)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError, match="not empty"):
        sweep.run_sweep(data, other, minutes=MINUTES, ladder=LADDER[:2], seconds_per_step=TIMES)
    with pytest.raises(ValueError, match="no sweep fits"):
        sweep.run_sweep(data, tmp_path / "none", minutes=0.0001, ladder=LADDER[:2], seconds_per_step=TIMES)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_command_prints_the_plan_progress_and_law(corpus, tmp_path, monkeypatch, lang):
    monkeypatch.setattr(planning, "LADDER", LADDER[:3])
    monkeypatch.setattr(planning, "step_seconds", lambda *a, **kw: {k: TIMES[k] for k in LADDER[:3]})
    monkeypatch.setattr(sweep, "fit_law", lambda *a, bootstrap=200, **kw: real_fit(*a, bootstrap=40, **kw))
    made_up_runs(monkeypatch)
    result = CliRunner().invoke(
        app, ["scale", "--corpus", str(corpus), "--out", str(tmp_path / "s"), "--minutes", "0.05", "--lang", lang]
    )
    assert result.exit_code == 0, result.output
    words = {"zh": ("计划", "验证损失", "已写入"), "en": ("plan:", "held-out loss", "wrote")}[lang]
    assert all(w in result.output for w in words)
    assert (tmp_path / "s" / "scale.json").exists()
    bad = CliRunner().invoke(app, ["scale", "--corpus", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "t")])
    assert bad.exit_code == 2 and "attnlab scale:" in bad.output


def test_ctrl_c_keeps_the_finished_runs_and_the_same_command_continues(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(planning, "LADDER", LADDER[:3])
    monkeypatch.setattr(planning, "step_seconds", lambda *a, **kw: {k: TIMES[k] for k in LADDER[:3]})
    made_up_runs(monkeypatch)
    made_up, calls = sweep.train_point, []

    def interrupted_at_the_third(spec, *a, **kw):
        calls.append(spec.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return made_up(spec, *a, **kw)

    monkeypatch.setattr(sweep, "train_point", interrupted_at_the_third)
    command = ["scale", "--corpus", str(corpus), "--out", str(tmp_path / "s"), "--minutes", "0.05", "--lang", "en"]
    stopped = CliRunner().invoke(app, command)
    assert stopped.exit_code == 130 and "2 finished runs are kept" in stopped.output
    assert len(list((tmp_path / "s" / "runs").glob("*.json"))) == 2 and not (tmp_path / "s" / "scale.json").exists()
    monkeypatch.setattr(sweep, "train_point", lambda spec, *a, **kw: calls.append(spec.name) or made_up(spec, *a, **kw))
    resumed = CliRunner().invoke(app, command)
    assert resumed.exit_code == 0, resumed.output
    assert len(calls) == len(set(calls)) + 1  # only the interrupted run is trained twice; the two kept ones are not
    assert (tmp_path / "s" / "scale.json").exists()


real_fit = sweep.fit_law
