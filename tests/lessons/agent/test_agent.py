"""The agent topic (issue 39, part 3): its tasks against Python's own arithmetic, the poem search against an exact
scan of the poems, the training rows and their loss mask against their definition, the lockstep loop against a
one-task loop over the model's own logits, the step limit and a refused call, the claims at the defaults and on
their null (trained on shuffled characters), and the --json contract."""

from __future__ import annotations

import json
import re

import pytest
import torch
from results import explained, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.agent import runs, tasks
from attnlab.lessons.agent.lesson import CONDITIONS, agent, asked, parse_task, right_answer, toolbox, trace, trained
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS

QUICK = TOPICS["agent"].quick


def python_value(question: str, poems) -> int:
    """The task by Python's own parser: each 《line》 replaced by the index of the poem whose lines hold it."""
    expr = re.sub(r"《(.*?)》", lambda m: str(next(i for i, p in enumerate(poems) if m.group(1) in p.lines)), question)
    assert re.fullmatch(r"[0-9+\-*()]+=", expr), expr
    return eval(expr[:-1])  # noqa: S307 - digits, + - * and parentheses only, checked above: the reference


def test_tasks_are_chains_whose_answer_is_pythons_and_each_call_needs_the_step_before():
    tools = toolbox()
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        kind = tasks.KINDS[int(torch.randint(2, (1,), generator=g))]
        k = int(torch.randint(1, 5, (1,), generator=g))
        task = tasks.make(g, kind, k, tools.poems)
        assert task.steps == k and task.question.endswith("=")
        assert task.answer == python_value(task.question, tools.poems) == int(right_answer(task.question, tools))
        for n, (call, result_) in enumerate(zip(task.calls, task.results)):
            assert tools(call) == str(result_)  # each call, run by its tool, gives the next step's input
            if n:
                assert call.startswith(str(task.results[n - 1]))
        assert (task.kind == "search") == task.question.lstrip("(").startswith("《")
        assert task.worked() == "".join(f"[{c}]>{r};" for c, r in zip(task.calls, task.results)) + f"{task.answer}."
    worked = tasks.Task("(37+4)*7=", ("37+4", "41*7"), (41, 287), "calc")
    assert worked.question + worked.worked() == "(37+4)*7=[37+4]>41;[41*7]>287;287."


def test_the_search_finds_the_poem_of_every_line_and_the_calculator_does_one_operation():
    tools = toolbox()
    for i, p in enumerate(tools.poems):  # BM25 over FTS5 trigrams, against an exact scan
        for line in p.lines:
            owners = [j for j, q in enumerate(tools.poems) if line in q.lines]
            assert tools(line) == str(i) or (len(owners) > 1 and int(tools(line)) in owners), line
    assert tools("12*3") == "36" and tools("12*3+1") == tasks.FAILED and tools("(1+2)") == tasks.FAILED
    assert tools("") == tasks.FAILED and tools("7-") == tasks.FAILED and tools("9/3") == "3"
    assert tools.which("多多低草明") == "search" and tools.which("1+2") == "calc"


def test_training_never_sees_a_task_it_is_asked_and_the_loss_is_on_what_the_model_writes():
    tools = toolbox()
    for k in tasks.ASKED_STEPS:
        mine = asked(0, k, tools.poems)
        assert [t.steps for t in mine] == [k] * len(mine)
        assert all(t.held_out for t in mine) == (k in tasks.TRAINED_STEPS)
        assert mine == asked(0, k, tools.poems) and mine != asked(1, k, tools.poems)
    vocab = runs.vocabulary(tools.lines)
    task = asked(0, 2, tools.poems)[1]
    ids, writes = runs.encode(vocab, [task], True, None)
    text = task.question + task.worked()
    chars = list(vocab)
    assert "".join(chars[i] for i in ids[0]) == text
    written = "".join(c for c, w in zip(text, writes[0].tolist()) if w)
    assert written == re.sub(r">[^;]*;", "", task.worked())  # the calls and the answer, never a tool's reply
    ids, writes = runs.encode(vocab, [task], False, None)
    assert "".join(c for c, w in zip(task.question + f"{task.answer}.", writes[0].tolist()) if w) == f"{task.answer}."
    shuffled, _ = runs.encode(vocab, [task], True, torch.Generator().manual_seed(1))
    original, _ = runs.encode(vocab, [task], True, None)
    assert sorted(shuffled[0].tolist()) == sorted(original[0].tolist()) and shuffled.tolist() != original.tolist()


def one_task(model, vocab, question: str, tools) -> str:
    """The loop for one task, one full forward pass a character, no cache: the reference for runs.run."""
    chars = list(vocab)
    ids, text, calls = [vocab[c] for c in question], "", 0
    with torch.no_grad():
        while len(ids) < runs.CONTEXT:
            nxt = int(model(torch.tensor([ids]))[0, -1].argmax())
            ids.append(nxt)
            text += chars[nxt]
            if tools is not None and chars[nxt] == "]":
                if calls == runs.MAX_CALLS:
                    break
                calls += 1
                reply = f">{tools(text[text.rfind('[') + 1 : -1] if '[' in text else '')};"
                ids += [vocab[c] for c in reply]
                text += reply
            if chars[nxt] == ".":
                break
    return text


@pytest.mark.slow  # trains
def test_the_lockstep_loop_is_the_one_task_loop_and_the_tools_write_their_replies():
    tools = toolbox()
    vocab = runs.vocabulary(tools.lines)
    model, _ = trained(120, 3, False)
    questions = [t.question for k in (1, 2, 3) for t in asked(3, k, tools.poems)[:6]] + ["(《多多低草明》*7)+2="]
    for use in (tools, None):
        for q, r in zip(questions, runs.run(model, vocab, questions, use)):
            want = one_task(model, vocab, q, use)
            n = min(len(want), len(r.text))  # a reply may run past the context in the reference
            assert r.text[:n] == want[:n] and (r.stopped != "answer" or r.text == want), q
            for s in r.steps:
                assert f"[{s.call}]>{s.reply};" in r.text and s.reply == tools(s.call)


class Stubborn(torch.nn.Module):
    """A model that always writes the same character: ] (a call every step) or [."""

    def __init__(self, vocab, char: str):
        super().__init__()
        self.size, self.id = len(vocab), vocab[char]

    def new_kv_cache(self):
        return None

    def forward(self, x, kv_cache=None):
        logits = torch.zeros(x.shape[0], x.shape[1], self.size)  # (B, T, V)
        logits[..., self.id] = 1.0
        return logits


def test_the_loop_stops_at_its_limit_and_a_refused_call_is_answered_not_raised():
    tools = toolbox()
    vocab = runs.vocabulary(tools.lines)
    r = runs.run(Stubborn(vocab, "]"), vocab, ["12+3="], tools)[0]
    assert r.stopped == "limit" and len(r.steps) == runs.MAX_CALLS and r.answer == ""
    assert all(s.call == "" and s.reply == tasks.FAILED for s in r.steps)  # an empty call, refused, seen
    assert r.text.startswith("]>!;]>!;")
    assert r.replies == [(1 + 4 * n, 4 + 4 * n) for n in range(runs.MAX_CALLS)]  # each >!; right after its ]
    x = trace(Stubborn(vocab, "]"), Stubborn(vocab, "."), tools, "12+3=", "en")  # a call with no [ is traced
    assert [s["call"] for s in x.steps] == [""] * runs.MAX_CALLS and x.why_stopped and x.answers["single_shot"] == ""
    r = runs.run(Stubborn(vocab, "["), vocab, ["12+3="], tools)[0]
    assert r.stopped == "context" and r.steps == [] and r.answer == ""


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract_and_untrained_models_are_not_helped():
    r = result("agent", "en", **QUICK)
    assert r.steps_needed == list(tasks.ASKED_STEPS) and set(r.success) == set(CONDITIONS)
    assert all(len(v) == len(r.steps_needed) and all(0 <= a <= 1 for a in v) for v in r.success.values())
    assert all(0 <= c <= runs.MAX_CALLS for c in r.calls) and all(0 <= x <= 1 for x in r.refused)
    untrained = result("agent", "en", steps=0)
    assert {c.id: c.status for c in untrained.claims}["loop_solves"] != SHOWN


@pytest.mark.slow  # trains
def test_at_the_defaults_the_loop_solves_two_steps_and_its_null_does_not():
    r = explained("agent", "en")
    status = {c.id: c.status for c in r.claims}
    assert status["loop_solves"] == SHOWN and set(status) == {"loop_solves", "longer"}
    i = r.steps_needed.index(2)
    acc = r.success
    assert acc["agent"][i] >= 0.7 and acc["single_shot"][i] <= 0.2 and acc["no_exec"][i] <= 0.2  # the bar
    assert abs(r.calls[i] - 2) < 0.1  # two calls for a two-step task
    j = r.steps_needed.index(3)  # longer than any chain trained: the loop stops early
    assert status["longer"] != SHOWN and r.calls[j] < 2.5
    for c in r.claims:  # each claim's null (trained on shuffled characters) does not show it
        assert c.null["status"] != SHOWN, (c.id, c.null)
    x = r.trace
    assert x.right == str(python_value(x.question, toolbox().poems))
    assert [s["tool"] for s in x.steps] == ["search", "calc"] and x.answers["agent"] == x.steps[-1]["reply"]
    for (start, end), s in zip(x.replies, x.steps):
        assert x.text[start:end] == f">{s['reply']};"


def test_a_task_of_ones_own_is_read_or_refused_in_one_line():
    tools = toolbox()
    assert parse_task(" (12 + 3) × 7 ", tools) == "(12+3)*7=" and parse_task("", tools) is None
    assert right_answer("(《多多低草明》*7)+2=", tools) in (None, *(str(i * 7 + 2) for i in range(400)))
    assert right_answer("《不是诗句啊》*2=", tools) is None and right_answer("(1+2=", tools) is None
    for bad in ("12/3", "import os", "x" * 40, "1" * 40, "《abc》", "((", "((12+3)*7", "《》*2", "1 2+3", "7-"):
        with pytest.raises(ParamError) as err:
            agent(task=bad)
        assert err.value.name == "task" and "\n" not in str(err.value)


@pytest.mark.slow  # trains
def test_json_carries_success_per_steps_and_the_trace():
    out = CliRunner().invoke(app, ["explain", "agent", "--json", "--lang", "en", "--steps", "20", "--task", "(12+3)*7"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["steps_needed"] == [1, 2, 3] and set(data["success"]) == set(CONDITIONS)
    assert data["trace"]["question"] == "(12+3)*7=" and data["trace"]["right"] == "105"
    assert {"call", "reply", "tool", "name"} <= set().union(*data["trace"]["steps"]) or data["trace"]["steps"] == []
