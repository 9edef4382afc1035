"""`attnlab train` in a learner's first hour (issue 22, item 6): it speaks the lab's language (--lang, zh by
default like every other command), prints progress lines at intervals when its output is not a terminal,
shows the time left (not a meaningless step total) on a time-budgeted run, and shows ⑤'s first-update check
only where the corpus holds the text's example 床前明月光."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.commands.train_progress import Lines, View

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.slow]  # trains or starts processes

runner = CliRunner(env={"COLUMNS": "1000"})
PROGRESS = re.compile(r"^(train|训练) · ", re.M)  # a progress line, in either language


def train(tmp_path, *args: str):
    result = runner.invoke(app, ["train", "--out", str(tmp_path / "ck"), *args])
    assert result.exit_code == 0, result.output
    return result


def test_train_speaks_the_labs_language(tmp_path):
    zh = train(tmp_path, "--corpus", "poem", "--steps", "3")  # no --lang: Chinese, as toy/real/explain/generate
    assert "语料 poem：训练用" in zh.output and "按 Ctrl+C" in zh.output and "⑤ 第一次更新" in zh.output
    assert zh.stdout.startswith("已保存 ") and "第 3/3 步，损失" in zh.stdout
    assert "训练 · 第 1/3 步 · 损失" in zh.output
    assert not re.search(r"\b(saved|loss|corpus|step|elapsed)\b", zh.output)  # no English line left
    en = train(tmp_path, "--corpus", "poem", "--steps", "3", "--lang", "en")
    assert en.stdout.startswith("saved ") and "step 3/3, loss" in en.stdout and "⑤ first update" in en.output
    assert "train · step 1/3 · loss" in en.output
    bad = runner.invoke(app, ["train", "--out", str(tmp_path / "x"), "--lang", "fr"])
    assert bad.exit_code == 2 and "not a language of the lab" in bad.output


def test_progress_lines_when_the_output_is_not_a_terminal(tmp_path):
    """CliRunner's output is not a terminal: lines, not a live bar that draws only at the end."""
    every = train(tmp_path, "--corpus", "poem", "--steps", "6", "--lang", "en", "--progress-every", "0")
    lines = PROGRESS.findall(every.output)
    assert len(lines) == 6  # the poem logs every step; 0 s between lines: each logged step has one
    assert [int(n) for n in re.findall(r"^train · step (\d)/6 ·", every.output, re.M)] == [1, 2, 3, 4, 5, 6]
    rare = train(tmp_path, "--corpus", "poem", "--steps", "6", "--lang", "en", "--progress-every", "3600")
    assert len(PROGRESS.findall(rare.output)) == 1  # the first logged step, then none within the hour


def test_lines_come_at_the_interval_of_the_trainers_clock():
    view, said = View(steps=100, budget=None, probe=None, lang="en"), []
    lines = Lines(view, said.append, every=30)
    for step, seconds in enumerate([0.5, 10, 29, 30.5, 45, 61, 100], start=1):
        lines({"type": "step", "step": step, "loss": 1.0, "seconds": seconds})
    lines({"type": "done", "step": 7})
    assert [re.search(r"step (\d+)/100", s).group(1) for s in said] == ["1", "4", "6", "7"]  # 0.5, 30.5, 61, 100 s


def test_a_time_budget_shows_time_left_not_the_step_cap(tmp_path):
    view = View(steps=100_000, budget=600.0, probe=None, lang="en")
    line = view.line({"type": "step", "step": 427, "loss": 5.25, "val_loss": None, "seconds": 180.0})
    assert line == "train · step 427 · loss 5.2500 · 0:03:00 elapsed, 0:07:00 left" and "100000" not in line
    zh = View(steps=100_000, budget=600.0, probe=None, lang="zh").line({"step": 427, "loss": 5.25, "seconds": 180})
    assert zh == "训练 · 第 427 步 · 损失 5.2500 · 已用 0:03:00，还剩 0:07:00"
    timed = train(
        tmp_path, "--corpus", "poem", "--steps", "4", "--minutes", "5", "--lang", "en", "--progress-every", "0"
    )
    assert re.search(
        r"^train · step 1 · loss [\d.]+ · p\(光\|床前明月\) [\d.]+ · 0:00:\d\d elapsed, 0:0[45]:\d\d left$",
        timed.output,
        re.M,
    ), timed.output
    assert "/4" not in "".join(PROGRESS.split(timed.output)[1:2])  # no step total on the lines
    assert re.search(r"saved .* · step 4 in 0:00:\d\d \(a budget of 5 minutes\), loss", timed.stdout), timed.stdout


def test_the_first_update_check_only_where_the_corpus_holds_the_example(tmp_path):
    """全唐诗 spells 床前明月 and 光 but has no 床前明月光 (its 静夜思 reads 床前看月光): ⑤'s check, which is about
    the text's p(光 | 床前明月), would show one character's p among thousands moving by nothing."""
    corpus = tmp_path / "tang.txt"
    corpus.write_text("床前看月光，疑是地上霜。\n举头望明月，低头思故乡。\n" * 20, encoding="utf-8")
    small = ["--steps", "2", "--layers", "1", "--heads", "2", "--d-model", "16", "--context", "16"]
    result = train(tmp_path, "--corpus", str(corpus), *small, "--lang", "en")
    assert "first update" not in result.output and "−log 0.12" not in result.output
    assert "this corpus has no 床前明月光, so it is skipped" in result.output
    assert not re.search(r"p\(光\|床前明月\)[ :]", result.output)  # the probe is the corpus's own line instead
    assert "p(光|床前看月)" in result.output
    corpus.write_text("床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n" * 20, encoding="utf-8")
    shown = train(tmp_path, "--corpus", str(corpus), *small, "--lang", "en")
    assert "⑤ first update" in shown.output and "p(光|床前明月)" in shown.output
