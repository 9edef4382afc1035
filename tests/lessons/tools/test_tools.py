"""The tools topic (issue 39, part 2): the calculator against Python's own arithmetic on exact fractions, its refusals
of hostile calls, the training data against its definition (held-out pairs never trained on), greedy decoding
against a one-question loop over the model's own logits, the claims at the defaults and on their null (trained on
shuffled characters), and the --json contract."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from results import explained, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common import calc
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS
from attnlab.lessons.tools import runs
from attnlab.lessons.tools.lesson import CONDITIONS, tools, trained

QUICK = TOPICS["tools"].quick


def expressions(depth: int = 3):
    number = st.integers(0, 999).map(str)
    if depth == 0:
        return number
    inner = expressions(depth - 1)
    return st.one_of(
        number,
        st.tuples(inner, st.sampled_from("+-*/"), inner).map(lambda t: "".join(t)),
        inner.map(lambda e: f"({e})"),
    )


def python_value(expr: str):
    """Python's own parser and precedence on exact fractions; None where a division is by zero or not whole."""
    import re

    exact = re.sub(r"\d+", lambda m: f"Fraction({m.group()})", expr)
    whole = re.sub(r"\d+", lambda m: f"W({m.group()})", expr)

    class W(int):  # every intermediate value stays whole: a division must be exact, as the calculator's
        def _w(self, v):
            return W(v)

        def __add__(self, o):
            return W(int(self) + int(o))

        def __sub__(self, o):
            return W(int(self) - int(o))

        def __mul__(self, o):
            return W(int(self) * int(o))

        def __truediv__(self, o):
            if int(o) == 0 or int(self) % int(o):
                raise ZeroDivisionError
            return W(int(self) // int(o))

    try:
        value = eval(whole, {"W": W})  # noqa: S307 - the test's own generated arithmetic, the reference
    except ZeroDivisionError:
        return None
    assert eval(exact, {"Fraction": Fraction}) == value  # noqa: S307 - and it is the exact rational value
    return int(value)


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_the_calculator_agrees_with_python_on_exact_arithmetic(expr):
    if len(expr) > calc.MAX_CHARS or expr.count("(") > calc.MAX_DEPTH:
        return
    want = python_value(expr)
    try:
        got = calc.evaluate(expr)
    except calc.CalcError as err:
        assert want is None or "too large" in str(err), (expr, want, err)
        return
    assert got == want, expr


@pytest.mark.parametrize(
    "call,why",
    [
        ("(" * 10_000 + "1" + ")" * 10_000, "longer than"),
        ("(" * 9 + "1" + ")" * 9, "nested deeper"),
        ("1" * 10**6, "longer than"),
        ("1234567*2", "digits"),
        ("1/0", "division by zero"),
        ("7/2", "not a whole number"),
        ("", "empty"),
        ("2**3", "where a number should be"),
        ("__import__('os')", "unexpected character"),
        ("1)+(2", "without its ("),
    ],
)
def test_a_hostile_or_malformed_call_gets_one_line(call, why):
    with pytest.raises(calc.CalcError) as err:
        calc.evaluate(call)
    assert why in str(err.value) and "\n" not in str(err.value)
    assert runs.tool_result(call) == "!"  # what the model sees


def test_training_never_sees_a_question_it_is_asked():
    g = torch.Generator().manual_seed(0)
    trained_pairs = runs.training_pairs(g, 5000)
    assert not any(runs.held_out(a, b) for a, b in trained_pairs)
    assert {len(str(a)) for a, _ in trained_pairs} == {1, 2, 3}  # every trained length
    for d in runs.LENGTHS:
        asked = runs.asked(0, d)
        assert len(asked) == runs.N_ASKED and all(max(len(str(a)), len(str(b))) == d for a, b in asked)
        assert all(runs.held_out(a, b) for a, b in asked) == (d <= runs.DIGITS)
        assert asked == runs.asked(0, d) and asked != runs.asked(1, d)  # the same for every model, per seed


def test_examples_are_written_as_documented_and_shuffling_keeps_every_character():
    assert runs.text(37, 48, True) == "037*048=[037*048]>1776."
    assert runs.text(37, 48, False) == "037*048=1776."
    assert runs.question(1234, 5) == "1234*005="
    texts = [runs.text(a, b, True) for a, b in [(1, 2), (999, 999), (40, 7)]]
    x = runs.rows(texts)
    assert x.shape == (3, max(map(len, texts)))
    shuffled = runs.rows(texts, torch.Generator().manual_seed(1))
    for row, other, s in zip(x, shuffled, texts):
        assert "".join(runs.CHARS[i] for i in row[: len(s)]) == s
        assert sorted(row.tolist()) == sorted(other.tolist()) and row.tolist() != other.tolist()


@pytest.mark.slow  # trains
def test_batched_decoding_is_the_one_question_greedy_loop_and_the_tool_writes_the_calculators_answer():
    tool, _ = trained(60, 3, False)
    questions = [runs.question(a, b) for a, b in runs.asked(3, 3)[:12]] + ["1234*5678="]
    batch = runs.decode(tool, questions, True)
    for q, said in zip(questions, batch):
        ids = [runs.ID[c] for c in q]
        text = ""
        with torch.no_grad():
            while len(ids) < runs.CONTEXT:
                nxt = int(tool(torch.tensor([ids]))[0, -1].argmax())
                ids.append(nxt)
                text += runs.CHARS[nxt]
                if runs.CHARS[nxt] == "]":
                    body = text.split("[")[-1][:-1] if "[" in text else ""
                    reply = ">" + runs.tool_result(body) + "."
                    ids += [runs.ID[c] for c in reply]
                    text += reply
                if text.endswith("."):
                    break
        assert said.text == text, q
        for start, end in said.inserted:  # what the calculator wrote is its answer to the call before it
            call = said.text[:start].split("[")[-1][:-1] if "[" in said.text[:start] else ""
            assert said.text[start:end] == ">" + runs.tool_result(call) + "."


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract_and_untrained_models_are_not_helped():
    r = result("tools", "en", **QUICK)
    assert r.lengths == list(runs.LENGTHS) and set(r.accuracy) == set(CONDITIONS)
    assert all(len(v) == len(r.lengths) and all(0 <= a <= 1 for a in v) for v in r.accuracy.values())
    assert all(0 <= w <= 1 for w in r.well_formed) and all(c <= w for c, w in zip(r.copied, r.well_formed))
    untrained = result("tools", "en", steps=0)
    assert {c.id: c.status for c in untrained.claims}["tool_helps"] != SHOWN


@pytest.mark.slow  # trains
def test_at_the_defaults_the_tool_makes_it_right_and_its_null_does_not():
    r = explained("tools", "en")
    status = {c.id: c.status for c in r.claims}
    assert status["tool_helps"] == status["lab_computes"] == SHOWN
    i = r.lengths.index(r.trained_digits)
    acc = r.accuracy
    assert acc["tool"][i] >= 0.9 and acc["control"][i] <= 0.2 and acc["no_exec"][i] <= 0.2  # the bars
    assert r.copied[i] >= 0.9 and r.well_formed[i] >= r.copied[i]
    # longer than any trained: the calls no longer copy the question, and the tool cannot help
    j = r.lengths.index(r.trained_digits + 1)
    assert r.copied[j] <= 0.2 and status["longer"] != SHOWN
    for c in r.claims:  # each claim's null (trained on shuffled characters) does not show it
        assert c.null["status"] != SHOWN, (c.id, c.null)
    x = r.trace
    a, b = (int(n) for n in x.question[:-1].split("*"))
    assert x.right == str(a * b) and x.answers["tool"] == runs.tool_result(x.tool[1 : x.tool.index("]")])


def test_a_problem_of_ones_own_is_read_or_refused_in_one_line():
    from attnlab.lessons.tools.lesson import parse_problem

    assert parse_problem(" 12 × 345 ") == (12, 345) and parse_problem("") is None
    for bad in ("12*x", "12345*2", "1+2", "(1*2)"):
        with pytest.raises(ParamError) as err:
            tools(problem=bad)
        assert err.value.name == "problem" and "\n" not in str(err.value)
    with pytest.raises(ParamError) as err:
        tools(problem="1" * 10**6)
    assert err.value.name == "problem" and "\n" not in str(err.value)


@pytest.mark.slow  # trains
def test_json_carries_accuracy_per_condition_and_length_and_the_trace():
    out = CliRunner().invoke(app, ["explain", "tools", "--json", "--lang", "en", "--steps", "20", "--problem", "7*8"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["lengths"] == [2, 3, 4] and set(data["accuracy"]) == set(CONDITIONS)
    assert data["trace"]["question"] == "007*008=" and data["trace"]["right"] == "56"
