"""`attnlab explain`: the topic list, every topic as --json and as a figure, and clear errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.explain import TOPICS

# Small sizes so the whole set runs in seconds.
SMALL = {
    "sqrt-dk": ["--d-k", "8", "--n-samples", "500", "--n-keys", "8"],
    "positional": ["--n-positions", "16", "--d-model", "16", "--delta", "3", "--n-check", "50"],
    "permutation": ["--sentence", "明月光", "--d-model", "8", "--shuffle", "reverse"],
    "multihead": ["--d-model", "32", "--n-heads", "4", "--n", "8", "--train-steps", "0"],
    "position-wise": ["--n", "3", "--d-model", "4", "--bug"],
    "rnn-gradients": ["--steps", "10", "--hidden", "8", "--lam", "1.1"],
    "serial-vs-parallel": ["--n-max", "32", "--d-model", "8", "--n-heads", "2", "--repeats", "1"],
    "complexity": ["--n", "64", "--d-model", "32", "--n-heads", "4", "--time-n-max", "64", "--time-d-model", "16", "--repeats", "1"],
    "forms": ["--n-tgt", "3", "--n-src", "2"],
    "glossary": ["--quiz", "5", "--answer", "2"],
    "norms": ["--batch", "4", "--d-model", "6", "--seed", "2"],
    "context-vectors": ["--sentence-a", "苹果发布会", "--sentence-b", "苹果真甜", "--d-model", "16", "--n-layers", "2"],
    "one-hot": ["--chars", "月光", "--d-model", "8", "--train-steps", "20", "--top-k", "3"],
    "seq2seq": ["--train-steps", "100", "--n-test", "5", "--n-seeds", "1", "--text", "2026"],
    "mlm": ["--steps", "20", "--d-model", "8"],
    "break": ["--ablate", "ffn-only", "--train-steps", "40", "--seeds", "3"],
    "scale": ["--layers", "2", "--d-model", "64", "--heads", "4", "--vocab", "100", "--context", "32"],
    "flash": ["--n", "6", "--tile", "4", "--n-max", "512", "--block", "64", "--window", "32"],
    "moe": ["--n-experts", "2", "--train-steps", "10", "--seed", "1"],
    "memory": ["--layers", "2", "--d-model", "64", "--heads", "4", "--kv-heads", "2", "--vocab", "100", "--context", "32"],
    "data-parallel": ["--b", "2", "--train-steps", "2", "--ranks", "8"],
    "word2vec": ["--train-steps", "300", "--gpt-steps", "20", "--top-k", "3"],
    "logit-lens": ["--n-layers", "2", "--train-steps", "20", "--seed", "1"],
    "ffn-memory": ["--layers", "1", "--d-model", "16", "--train-steps", "20", "--top", "5", "--shown", "3"],
    "patching": ["--n-layers", "1", "--n-heads", "2", "--train-steps", "20", "--seed", "1"],
    "induction": ["--steps", "20", "--n", "6", "--vocab", "8", "--d-model", "16", "--seed", "1"],
}


runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["explain", *args])


def test_explain_alone_lists_every_topic():
    result = run()
    assert result.exit_code == 0
    for name in TOPICS:
        assert name in result.output


def test_small_sizes_cover_every_topic():
    assert set(SMALL) == set(TOPICS)


@pytest.mark.parametrize("topic", list(TOPICS))
def test_json_parses_and_carries_the_chosen_parameters(topic):
    result = run(topic, *SMALL[topic], "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["topic"] == topic
    options = SMALL[topic]
    for flag, value in zip(options[::2], options[1::2]):
        if not value.startswith("--"):
            assert str(data["params"][flag[2:].replace("-", "_")]) == value
    assert data["claims"] and all(isinstance(c["holds"], bool) for c in data["claims"])


@pytest.mark.parametrize("topic", list(TOPICS))
def test_plot_writes_a_non_empty_png(topic, tmp_path):
    out = tmp_path / f"{topic}.png"
    result = run(topic, *SMALL[topic], "--plot", str(out), "--lang", "en")
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_plot_writes_svg_and_the_terminal_view_shows_the_claims(tmp_path):
    out = tmp_path / "rot.svg"
    result = run("positional", *SMALL["positional"], "--plot", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg"))
    assert "✓" in result.output and "R(Δ)" in result.output


@pytest.mark.parametrize("args, message", [
    (["sqrt-dk", "--d-k", "0"], "d_k must be an integer from 1 to 1024, got '0'"),
    (["complexity", "--n", "-3"], "n must be an integer from 1 to 1048576, got '-3'"),
    (["serial-vs-parallel", "--n-max", "2048", "--n-heads", "16", "--d-model", "64"], "n_max can be at most 1672"),
    (["serial-vs-parallel", "--n-max", "4096"], "n_max must be an integer from 16 to 2048, got '4096'"),
    (["complexity", "--time-n-max", "4096"], "time_n_max must be an integer from 64 to 2048, got '4096'"),
    (["sqrt-dk", "--plot", "fig.pdf"], ".png or .svg"),
    (["nope"], "no topic 'nope'"),
    (["permutation", "--shuffle", "sideways"], "shuffle must be one of random, reverse, rotate"),
])
def test_bad_parameters_exit_2_with_a_message_and_no_traceback(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_wrong_quiz_answer_prints_only_the_error():
    result = run("glossary", "--quiz", "5", "--answer", "x")
    assert result.exit_code == 2
    assert result.stdout == ""  # no page after the error
    assert result.stderr.strip().splitlines() == [
        "attnlab explain glossary: quiz 5 takes one of its choices (1, 2 or the choice's text), got 'x'"]
