"""⑦ Use it: a tool the model learns to call. A small GPT that cannot multiply 3-digit numbers learns instead to
write a call, [037*048], whose result the lab computes and writes back, >1776., as the answer. The lesson
measures where the right answers come from: the same model with its calls not executed, and a control trained on
as many problems with the answer written out, are both wrong; and a call is only as good as what the model copies
into it: operands longer than any trained on are miscopied.

The experiment (runs.py): the tool model and the control, the same seed, steps and problems; N_ASKED held-out
questions per operand length 2 and 3 (pairs never trained on), and N_ASKED with a 4-digit operand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.tools import runs
from attnlab.train import progress

MARGIN = 0.5  # the bar: the tool's share right leads its control's by half of all questions
CONDITIONS = ("tool", "no_exec", "control")  # calls executed; the same model, calls not executed; no calls
PROBLEM = re.compile(r"\s*(\d{1,4})\s*[*×xX]\s*(\d{1,4})\s*")  # what a learner may ask: a·b, 1 to 4 digits each
# Every claim's strongest null: both models trained alike on each example's characters shuffled (the same
# characters as often; no call, no answer to learn).
NULLS = {name: Null("shuffled", shuffle=True) for name in ("tool_helps", "lab_computes", "longer")}

PARAMS = (
    Param("steps", "int", 800, 0, 3000, step=10, help="training steps of each model (0: untrained)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights, batches and questions)"),
    Param(
        "problem",
        "str",
        "",
        max_len=24,
        help="a product of your own, a*b with 1 to 4 digits each (empty: a held-out question)",
    ),
    Param("shuffle", "bool", False, help="train on each example's characters shuffled (the null: nothing to learn)"),
)
QUICK = {"steps": 20}
COURSE = ("chapter16", 73)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Trace:
    """One question as each condition answered it."""

    question: str  # 037*048=
    right: str  # the product
    tool: str  # what followed the question with calls executed
    inserted: list[list[int]]  # [start, end) in `tool` of what the calculator wrote
    no_exec: str  # the same model, calls not executed
    control: str  # the control model
    answers: dict  # condition -> the answer it gave


@dataclass
class ToolsResult(Shown):
    topic: str
    params: dict
    lengths: list[int]  # the longer operand's digits, per column
    trained_digits: int  # the longest operand trained on
    accuracy: dict  # condition -> [share right per length]
    well_formed: list[float]  # per length: the tool model's first call is one the calculator evaluates
    copied: list[float]  # per length: its first call asks exactly the question's product
    n_asked: int
    n_params: int  # each model's
    trace: Trace
    note: str
    claims: list[Claim] = field(default_factory=list)


def parse_problem(text: str) -> tuple[int, int] | None:
    if not text.strip():
        return None
    m = PROBLEM.fullmatch(text)
    if m is None:
        raise ParamError(
            f"problem must be a product a*b of whole numbers with 1 to 4 digits each, like 123*45; got {text[:24]!r}",
            "problem",
            "explain.tools.error.problem",
        )
    return int(m.group(1)), int(m.group(2))


def cost(p: dict) -> Cost:
    """Trains two small models (stoppable at every step), then decodes N_ASKED questions per length and condition."""
    parse_problem(p["problem"])
    # the largest pass: N_ASKED rows of CONTEXT characters, logits, activations of every layer, and each layer's
    # attention scores and weights (n_heads × CONTEXT a token)
    tokens = runs.N_ASKED * runs.CONTEXT
    per_token = len(runs.CHARS) + 12 * runs.D_MODEL + 4 * runs.N_HEADS * runs.CONTEXT
    return Cost.of_bytes(4 * tokens * per_token, trains=True, extra_mb=24.0)


@lesson
@lru_cache(maxsize=4)
def trained(steps: int, seed: int, shuffle: bool):
    """(the tool model, the control), trained once for both languages."""
    for name in ("tool", "control"):
        progress.report(name, 0, steps)  # both listed from the start
    return runs.train("tool", True, steps, seed, shuffle), runs.train("control", False, steps, seed, shuffle)


def measure(tool, control, pairs: list[tuple[int, int]]) -> dict:
    """Each condition's share right on these questions, and the tool model's calls: well formed, copied right."""
    questions = [runs.question(a, b) for a, b in pairs]
    right = [str(a * b) for a, b in pairs]
    said = {
        "tool": runs.decode(tool, questions, True),
        "no_exec": runs.decode(tool, questions, False),
        "control": runs.decode(control, questions, False),
    }
    n = len(pairs)
    out = {c: sum(s.answer == r for s, r in zip(said[c], right)) / n for c in CONDITIONS}
    out["well_formed"] = sum(s.well_formed for s in said["tool"]) / n
    out["copied"] = sum(s.call == f"{runs.written(a)}*{runs.written(b)}" for s, (a, b) in zip(said["tool"], pairs)) / n
    return out


def trace(tool, control, a: int, b: int) -> Trace:
    q = runs.question(a, b)
    with_tool, no_exec, ctrl = (
        runs.decode(tool, [q], True)[0],
        runs.decode(tool, [q], False)[0],
        runs.decode(control, [q], False)[0],
    )
    return Trace(
        q,
        str(a * b),
        with_tool.text,
        [list(span) for span in with_tool.inserted],
        no_exec.text,
        ctrl.text,
        {"tool": with_tool.answer, "no_exec": no_exec.answer, "control": ctrl.answer},
    )


def claims_of(r: ToolsResult, lang: str) -> list[Claim]:
    i, j = r.lengths.index(r.trained_digits), r.lengths.index(r.trained_digits + 1)
    acc = r.accuracy

    def c(name: str) -> str:
        return t(f"explain.tools.control.{name}", lang)

    def claim(id: str, key: str, k: int, versus: str) -> Claim:
        tool, other = acc["tool"][k], acc[versus][k]
        return lead(
            id,
            t(f"explain.tools.claim.{key}", lang, tool=tool, other=other, margin=MARGIN, d=r.lengths[k]),
            lang,
            measured=tool,
            baseline=other,
            margin=MARGIN,
            control=c(versus),
            values={"tool": tool, versus: other, "digits": r.lengths[k]},
            hint=t("explain.tools.hint.steps", lang) if id != "longer" else None,
        )

    return [
        claim("tool_helps", "helps", i, "control"),
        claim("lab_computes", "computes", i, "no_exec"),
        claim("longer", "longer", j, "control"),
    ]


def tools(
    steps: int = 800, seed: int = 0, problem: str = "", shuffle: bool = False, *, lang: str = "zh"
) -> ToolsResult:
    """Where a tool-using model's right answers come from, per operand length."""
    p = check(PARAMS, dict(steps=steps, seed=seed, problem=problem, shuffle=shuffle))
    cost(p)
    tool, control = trained(p["steps"], p["seed"], p["shuffle"])
    per = [measure(tool, control, runs.asked(p["seed"], d)) for d in runs.LENGTHS]
    mine = parse_problem(p["problem"]) or runs.asked(p["seed"], runs.DIGITS)[0]
    n_params = sum(q.numel() for q in tool.parameters())
    note = t(
        "explain.tools.note" + ("_shuffled" if p["shuffle"] else ""),
        lang,
        n=n_params,
        steps=p["steps"],
        batch=runs.BATCH,
        lr=runs.LR,
        asked=runs.N_ASKED,
        digits=runs.DIGITS,
    )
    r = ToolsResult(
        "tools",
        p,
        list(runs.LENGTHS),
        runs.DIGITS,
        {c: [m[c] for m in per] for c in CONDITIONS},
        [m["well_formed"] for m in per],
        [m["copied"] for m in per],
        runs.N_ASKED,
        n_params,
        trace(tool, control, *mine),
        note,
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "ToolsResult", "tools", "cost"]
