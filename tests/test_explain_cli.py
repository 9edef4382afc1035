"""`attnlab explain`: the topic list, every topic as --json and as a figure, and clear errors."""

from __future__ import annotations

import json
import re

import pytest
from results import by_topic, quick_flags
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.explain import TOPICS

SMALL = {name: quick_flags(name) for name in TOPICS}  # each lesson's QUICK, as options


runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["explain", *args])


def test_explain_alone_lists_every_topic():
    result = run()
    assert result.exit_code == 0
    for name in TOPICS:
        assert name in result.output


@pytest.mark.parametrize(
    "topic, options",
    [
        ("position-wise", ["--bug"]),  # a bool as a flag
        ("permutation", ["--sentence", "明月光", "--shuffle", "reverse"]),  # a text and a choice
        ("rnn-gradients", ["--lam", "1.1"]),  # a float
        ("glossary", ["--quiz", "5", "--answer", "2"]),
        ("context-vectors", ["--sentence-a", "苹果发布会", "--sentence-b", "苹果真甜"]),
        ("norms", ["--seed", "2"]),
    ],
)
def test_every_kind_of_option_reaches_the_lesson(topic, options):
    result = run(topic, *SMALL[topic], *options, "--json")
    assert result.exit_code == 0, result.output
    params = json.loads(result.stdout)["params"]
    i = 0
    while i < len(options):
        name = options[i][2:].replace("-", "_")
        if i + 1 < len(options) and not options[i + 1].startswith("--"):
            assert str(params[name]) == options[i + 1]
            i += 2
        else:
            assert params[name] is True
            i += 1


@pytest.mark.parametrize("topic", by_topic())
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


@pytest.mark.parametrize("topic", by_topic())
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


@pytest.mark.parametrize(
    "args, message",
    [
        (["sqrt-dk", "--d-k", "0"], "d_k must be an integer from 1 to 1024, got '0'"),
        (["complexity", "--n", "-3"], "n must be an integer from 1 to 1048576, got '-3'"),
        (["serial-vs-parallel", "--n-max", "2048", "--n-heads", "16", "--d-model", "64"], "n_max can be at most 1672"),
        (["serial-vs-parallel", "--n-max", "4096"], "n_max must be an integer from 16 to 2048, got '4096'"),
        (["complexity", "--time-n-max", "4096"], "time_n_max must be an integer from 64 to 2048, got '4096'"),
        (["sqrt-dk", "--plot", "fig.pdf"], ".png or .svg"),
        (["nope"], "no topic 'nope'"),
        (["permutation", "--shuffle", "sideways"], "shuffle must be one of random, reverse, rotate"),
    ],
)
def test_bad_parameters_exit_2_with_a_message_and_no_traceback(args, message):
    result = run(*args, "--lang", "en")
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "name, raw",
    [("sqrt-dk", {"d_k": "0"}), ("complexity", {"n": "-3"}), ("permutation", {"shuffle": "sideways"})],
)
def test_a_refusal_speaks_the_language_asked_for(name, raw):
    """The default language is Chinese: a refused value is the catalog's sentence, as the page says it."""
    from attnlab.lessons.common.params import ParamError

    with pytest.raises(ParamError) as refused:
        TOPICS[name].parse(**raw)
    flags = [x for k, v in raw.items() for x in ("--" + k.replace("_", "-"), v)]
    zh = run(name, *flags)
    assert zh.exit_code == 2 and "Traceback" not in zh.output
    assert zh.stderr.strip() == f"attnlab explain {name}: {refused.value.localized('zh')}"
    assert re.search(r"[\u4e00-\u9fff]", zh.stderr) and str(refused.value) not in zh.stderr


def test_a_wrong_quiz_answer_prints_only_the_error():
    result = run("glossary", "--quiz", "5", "--answer", "x", "--lang", "en")
    assert result.exit_code == 2
    assert result.stdout == ""  # no page after the error
    assert result.stderr.strip().splitlines() == [
        "attnlab explain glossary: quiz 5 takes one of its choices (1, 2 or the choice's text), got 'x'"
    ]


BOX = re.compile(r"[\s│┃┆┊║─━┄┈═╭╮╰╯┌┐└┘├┤┬┴┼╇╈╉╊╋┏┓┗┛┡┩]")
CUT = re.compile(r"\d…(?!\d)")  # a number cut short by the terminal ("0.12…"); "0…999", a range, goes on


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("topic", by_topic())
def test_at_80_columns_nothing_is_cut_and_every_claim_is_whole(topic, lang):
    """A terminal of 80 columns folds what does not fit onto the next line: no number is cut to "0.12…", and
    every claim's sentence, its comparison and its null are all there, word for word, once the lines are joined."""
    from results import explained

    out = runner.invoke(app, ["explain", topic, *SMALL[topic], "--lang", lang], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert not CUT.search(out.output), CUT.findall(out.output)
    assert max(len(line) for line in out.output.splitlines()) <= 80
    flat = BOX.sub("", out.output)
    for c in explained(topic, lang, **TOPICS[topic].quick).claims:
        for part in (c.text, c.versus, c.null and c.null["line"]):
            assert not part or BOX.sub("", part) in flat, (c.id, part)
