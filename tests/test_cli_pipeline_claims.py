"""The CLI shows the pipeline's checked steps with the lessons' numbers: `attnlab train` prints ⑤'s first
update (the text's plain step beside the real first AdamW step) and `attnlab generate --explain` ③'s 月."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.display.fmt import prob
from attnlab.lessons.common.claims import MARKS
from attnlab.lessons.pipeline.first_step import first_step
from attnlab.lessons.pipeline.focus import focus
from attnlab.train import load_checkpoint, new_run

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.slow]  # trains or starts processes

runner = CliRunner(env={"COLUMNS": "1000"})  # rich wraps at the terminal's width: one claim per line here


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_train_prints_the_first_update_then_generate_explains_where_yue_looks(tmp_path):
    out = tmp_path / "poem"
    result = runner.invoke(
        app, ["train", "--corpus", "poem", "--steps", "30", "--seed", "1", "--out", str(out), "--lang", "en"]
    )
    assert result.exit_code == 0, result.output
    printed = flat(result.output)
    want = first_step(new_run("poem", steps=30, seed=1, device="cpu"), seeds=0, lang="en")
    assert want.plain.p_after > want.plain.p_before
    for c in want.claims:  # each with its mark: ✓ shown, ○ not shown at these settings, ✗ contradicted
        assert MARKS[c.status] + " " + flat(c.text) in printed and flat(c.versus) in printed
    assert f"−log {prob(want.arithmetic.p)} = {want.arithmetic.neg_log:.4f}" in printed  # 3 significant digits
    assert "the text's −log 0.12 = 2.1203" in printed

    explained = runner.invoke(
        app,
        [
            "generate",
            "--checkpoint",
            str(out),
            "--prompt",
            "床前明月",
            "--greedy",
            "--explain",
            "--lang",
            "en",
            "--max-new-tokens",
            "2",
        ],
    )
    assert explained.exit_code == 0, explained.output
    ckpt = load_checkpoint(out)
    f = focus(ckpt.model, ckpt.tokenizer, "床前明月", lang="en")
    text = flat(explained.stdout)
    assert "Where does 月 look?" in text
    for c in f.claims:
        assert MARKS[c.status] + " " + flat(c.text) in text


def test_resumed_training_prints_no_first_update(tmp_path):
    out = tmp_path / "poem"
    assert runner.invoke(app, ["train", "--corpus", "poem", "--steps", "3", "--out", str(out)]).exit_code == 0
    again = runner.invoke(app, ["train", "--out", str(out), "--steps", "5", "--resume", "--lang", "en"])
    assert again.exit_code == 0, again.output
    assert "first update" not in again.output
