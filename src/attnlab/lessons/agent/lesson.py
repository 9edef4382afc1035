"""⑦ Use it: an agent is a loop. A small GPT that cannot do arithmetic, or know which poem holds a line, learns to
work a task one tool call at a time: it writes a call, the lab runs the tool (the calculator or the poem search) and
writes the reply into its context, and the model reads it to write the next call, until it answers.

The experiment (runs.py): the agent and a single-shot model (the same GPT trained on the same tasks written
question=answer), the same seed, steps and tasks; N_ASKED questions never trained on for each number of steps a
task needs, half starting with a search, half with a sum; the agent's loop also run with its calls not executed.
It trains on chains of 1 and 2 steps; the 3-step tasks ask whether the loop runs on past what it learned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.agent import runs
from attnlab.lessons.agent import tasks as tasks_
from attnlab.lessons.common import disk_cache, search_index
from attnlab.lessons.common import poems as poems_
from attnlab.lessons.common.calc import CalcError, evaluate
from attnlab.lessons.common.claims import Claim, lead
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.train import progress

MARGIN = 0.5  # the agent's share solved leads its control's by half of all tasks
CONDITIONS = ("agent", "no_exec", "single_shot")  # the loop with its tools; the same model, calls not run; no loop
N_ASKED = 200  # tasks per number of steps (a share near 0.5 has a standard error of 0.035)
MAX_TASK = 39  # the question and its = fill at most 40 characters
SHOWN_STEPS = 2  # the claims' tasks: two steps, the longest chain trained
# Every claim's strongest null: both models trained alike on each example's characters shuffled (the same
# characters as often; no call, no answer to learn).
# The same model with its calls not executed is measured, not claimed: never trained to write a reply (the loss
# skips them), it cannot stand in for a tool, so a claim against it could not fail.
NULLS = {name: Null("shuffled", shuffle=True) for name in ("loop_solves", "longer")}

PARAMS = (
    Param("steps", "int", 600, 0, 3000, step=10, help="training steps of each model (0: untrained)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights, batches and tasks)"),
    Param(
        "task",
        "str",
        "",
        max_len=MAX_TASK,
        help="a task of your own, like (12+3)*7 or 《line》*3 (empty: a held-out two-step task)",
    ),
    Param("shuffle", "bool", False, help="train on each example's characters shuffled (the null: nothing to learn)"),
)
QUICK = {"steps": 20}
COURSE = ("chapter16", 74)  # the course map's section (web/course_map.py) and place in it
HEAVY = True
LINE = re.compile(r"《([^《》]+)》")


@dataclass
class Trace:
    """One task through the loop, step by step, beside the single-shot model's answer."""

    question: str
    right: str | None  # the task's answer, where the lab can work it out (None: a line no poem holds, a bad sum)
    steps: list[dict]  # tool (search | calc), name (in words), call, reply: each step's action and observation
    text: str  # everything after the question, the tools' replies included
    replies: list[list[int]]  # [start, end) in `text` of what the tools wrote
    answer: str
    stopped: str  # answer | limit | context
    why_stopped: str  # that in words
    single_shot: str  # what the single-shot model wrote after the question
    no_exec: str  # what the same agent wrote with its calls not executed
    answers: dict  # condition -> the answer it gave


@dataclass
class AgentResult(Shown):
    topic: str
    params: dict
    steps_needed: list[int]  # per column: the calls a task needs
    trained_steps: int  # the longest chain trained on
    success: dict  # condition -> [share of tasks solved exactly, per steps_needed]
    calls: list[float]  # per steps_needed: the agent's mean calls made
    refused: list[float]  # per steps_needed: share of the agent's runs with a call a tool refused
    n_asked: int
    n_poems: int
    n_params: int  # each model's
    trace: Trace
    note: str
    claims: list[Claim] = field(default_factory=list)


def _task_error(text: str, why: str) -> ParamError:
    return ParamError(
        f"task must be a sum like (12+3)*7 or 《line》*3 in digits, + - * ( ) and 《》 around a line of the poems' "
        f"characters ({why}); got {text[:MAX_TASK]!r}",
        "task",
        "explain.agent.error.task",
    )


@lru_cache(maxsize=1)
def toolbox() -> tasks_.Tools:
    """The lab's poems and their BM25 index (in the cache folder, built once), and the two tools over them."""
    poems = poems_.builtin()
    try:
        index = search_index.open_index([p.text for p in poems], disk_cache.folder())
    except search_index.IndexError_ as err:
        raise ParamError(str(err), "task", "explain.agent.error.index", folder=search_index.SUBFOLDER) from None
    return tasks_.Tools(poems, index)


def parse_task(text: str, tools: tasks_.Tools) -> str | None:
    """The question as the model reads it (ending in =), or None for an empty task; ParamError otherwise."""
    task = text.strip().rstrip("=").replace(" ", "").replace("×", "*").replace("−", "-")
    if not task:
        return None
    if re.search(r"\d\s+\d", text):
        raise _task_error(text, "a space inside a number")
    allowed = set(runs.MARKS) - set("[]>;=.!_") | set(tools.lines)
    bad = sorted({ch for ch in task if ch not in allowed})
    if bad:
        raise _task_error(text, f"not {''.join(bad[:5])}")
    if len(task) > MAX_TASK:
        raise _task_error(text, f"at most {MAX_TASK} characters")
    try:  # well formed: each 《line》 a number, the rest a sum the calculator reads
        evaluate(LINE.sub("1", task))
    except CalcError as err:
        if "too large" not in str(err):
            raise _task_error(text, str(err)) from None
    return task + "="


def right_answer(question: str, tools: tasks_.Tools) -> str | None:
    """The task worked out by the lab itself: each 《line》 the number of the poem holding it exactly."""
    numbers = {line: i for i, p in enumerate(tools.poems) for line in p.lines}
    expr = question.rstrip("=")
    for line in LINE.findall(expr):
        if line not in numbers:
            return None
        expr = expr.replace(f"《{line}》", str(numbers[line]), 1)
    try:
        return str(evaluate(expr))
    except CalcError:
        return None


def asked(seed: int, steps: int, poems) -> list[tasks_.Task]:
    """N_ASKED tasks of `steps` calls, alternately a search and a sum first, never trained on (held out where the
    chain is of a trained length; any beyond it). The same for every model."""
    g = torch.Generator().manual_seed(1_000 * seed + steps)
    out: list[tasks_.Task] = []
    while len(out) < N_ASKED:
        task = tasks_.make(g, tasks_.KINDS[len(out) % 2], steps, poems)
        if task.held_out or steps > max(tasks_.TRAINED_STEPS):
            out.append(task)
    return out


def example(seed: int, poems) -> str:
    """The trace's task when none is typed: the first asked two-step task that searches, then multiplies."""
    return next(t.question for t in asked(seed, SHOWN_STEPS, poems) if t.kind == "search" and "*" in t.calls[1])


def cost(p: dict) -> Cost:
    """Trains two small models (stoppable at every step), then runs N_ASKED tasks per number of steps through
    the loop in one batch each."""
    parse_task(p["task"], toolbox())
    tokens = N_ASKED * runs.CONTEXT  # one batch: logits, activations and a KV cache of every layer
    per_token = len(runs.MARKS) + 40 + 12 * runs.D_MODEL + 4 * runs.N_HEADS * runs.CONTEXT
    return Cost.of_bytes(4 * tokens * per_token, trains=True, extra_mb=24.0)


@lesson
@lru_cache(maxsize=4)
def trained(steps: int, seed: int, shuffle: bool):
    """(the agent, the single-shot model), trained once for both languages."""
    tools = toolbox()
    vocab = runs.vocabulary(tools.lines)
    for name in ("agent", "single_shot"):
        progress.report(name, 0, steps)  # both listed from the start
    return (
        runs.train("agent", True, vocab, tools.poems, steps, seed, shuffle),
        runs.train("single_shot", False, vocab, tools.poems, steps, seed, shuffle),
    )


def measure(agent, single, tools, tasks: list[tasks_.Task]) -> dict:
    vocab = runs.vocabulary(tools.lines)
    questions = [task.question for task in tasks]
    ran = {
        "agent": runs.run(agent, vocab, questions, tools),
        "no_exec": runs.run(agent, vocab, questions, None),
        "single_shot": runs.run(single, vocab, questions, None),
    }
    n = len(tasks)
    out = {c: sum(r.answer == str(task.answer) for r, task in zip(ran[c], tasks)) / n for c in CONDITIONS}
    out["calls"] = sum(len(r.steps) for r in ran["agent"]) / n
    out["refused"] = sum(any(s.reply == tasks_.FAILED for s in r.steps) for r in ran["agent"]) / n
    return out


def trace(agent, single, tools, question: str, lang: str) -> Trace:
    vocab = runs.vocabulary(tools.lines)
    r = runs.run(agent, vocab, [question], tools)[0]
    no_exec = runs.run(agent, vocab, [question], None)[0]
    one = runs.run(single, vocab, [question], None)[0]
    return Trace(
        question,
        right_answer(question, tools),
        [
            {"tool": tools.which(s.call), "name": t(f"explain.agent.tool.{tools.which(s.call)}", lang)}
            | {"call": s.call, "reply": s.reply}
            for s in r.steps
        ],
        r.text,
        [list(span) for span in r.replies],
        r.answer,
        r.stopped,
        t(f"explain.agent.stopped.{r.stopped}", lang),
        one.text,
        no_exec.text,
        {"agent": r.answer, "no_exec": no_exec.answer, "single_shot": one.answer},
    )


def claims_of(r: AgentResult, lang: str) -> list[Claim]:
    i, j = r.steps_needed.index(SHOWN_STEPS), r.steps_needed.index(r.trained_steps + 1)

    def claim(id: str, k: int, versus: str) -> Claim:
        agent, other = r.success["agent"][k], r.success[versus][k]
        return lead(
            id,
            t(f"explain.agent.claim.{id}", lang, agent=agent, other=other, margin=MARGIN, k=r.steps_needed[k]),
            lang,
            measured=agent,
            baseline=other,
            margin=MARGIN,
            control=t(f"explain.agent.control.{versus}", lang),
            values={"agent": agent, versus: other, "steps": r.steps_needed[k]},
            hint=t("explain.agent.hint.steps", lang) if id != "longer" else None,
        )

    return [
        claim("loop_solves", i, "single_shot"),
        claim("longer", j, "single_shot"),
    ]


@lesson
def agent(steps: int = 600, seed: int = 0, task: str = "", shuffle: bool = False, *, lang: str = "zh") -> AgentResult:
    """How often the loop solves tasks of 1, 2 and 3 steps, beside the single-shot model, and one task's trace."""
    p = check(PARAMS, dict(steps=steps, seed=seed, task=task, shuffle=shuffle))
    cost(p)
    tools = toolbox()
    model, single = trained(p["steps"], p["seed"], p["shuffle"])
    needed = list(tasks_.ASKED_STEPS)
    per = [measure(model, single, tools, asked(p["seed"], k, tools.poems)) for k in needed]
    mine = parse_task(p["task"], tools) or example(p["seed"], tools.poems)
    n_params = sum(q.numel() for q in model.parameters())
    note = t(
        "explain.agent.note" + ("_shuffled" if p["shuffle"] else ""),
        lang,
        n=n_params,
        steps=p["steps"],
        batch=runs.BATCH,
        lr=runs.LR,
        asked=N_ASKED,
        poems=len(tools.poems),
        limit=runs.MAX_CALLS,
    )
    r = AgentResult(
        "agent",
        p,
        needed,
        max(tasks_.TRAINED_STEPS),
        {c: [m[c] for m in per] for c in CONDITIONS},
        [m["calls"] for m in per],
        [m["refused"] for m in per],
        N_ASKED,
        len(tools.poems),
        n_params,
        trace(model, single, tools, mine, lang),
        note,
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "AgentResult", "agent", "cost"]
