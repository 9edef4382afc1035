"""The agent lesson's tasks and its two tools.

A task is a chain of steps, each one tool call whose argument needs the step before's result:

    (37+4)*7=               [37+4]>41;  [41*7]>287;  287.
    (《多多低草明》*7)+2=    [多多低草明]>363;  [363*7]>2541;  [2541+2]>2543;  2543.

《line》 is the number of the poem that holds the line (the search tool finds it); the calculator does one operation
a call (+, − or ×), so a task of k operations takes k calls. What the model writes is the calls and the answer; the
lab writes each result after > up to ;. A task whose question hashes to 0 mod HELD_OUT is never trained on.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import torch

from attnlab.lessons.common import poems as poems_
from attnlab.lessons.common.calc import CalcError, evaluate, tokens

OPS = "+-*"
HELD_OUT = 10  # one question in this many is asked, never trained on
TRAINED_STEPS = (1, 2)  # the chains trained on
ASKED_STEPS = (1, 2, 3)  # 3: longer than any trained chain
KINDS = ("calc", "search")  # what the first step is: an operation on two numbers, or a poem's number
FAILED = "!"  # what a tool returns for a call it refuses


@dataclass(frozen=True)
class Task:
    question: str  # (37+48)*7=
    calls: tuple[str, ...]  # 37+48, 85*7: what each step asks
    results: tuple[int, ...]  # 85, 595
    kind: str

    @property
    def steps(self) -> int:
        return len(self.calls)

    @property
    def answer(self) -> int:
        return self.results[-1]

    @property
    def held_out(self) -> bool:
        return zlib.crc32(self.question.encode()) % HELD_OUT == 0

    def worked(self) -> str:
        """What the agent is trained to write after the question, the tools' results included."""
        return "".join(f"[{c}]>{r};" for c, r in zip(self.calls, self.results)) + f"{self.answer}."


class Tools:
    """The calculator (one operation a call) and the poem search (attnlab's BM25 index over the poems: the
    number of the best poem for a line)."""

    def __init__(self, poems: list[poems_.Poem], index):
        self.poems = poems
        self.index = index
        self.lines = sorted({ch for p in poems for ch in p.text} - {"，", "。"})

    def search(self, line: str) -> str:
        from attnlab.lessons.common.search_index import search

        hits = search(self.index, line, 1)
        return str(hits[0][0]) if hits else FAILED

    def calc(self, expr: str) -> str:
        try:
            if len(tokens(expr)) != 3:
                raise CalcError("one operation a call")
            return str(evaluate(expr))
        except CalcError:
            return FAILED

    def which(self, call: str) -> str:
        """search for a call of poem characters alone, else calc."""
        return "search" if call and all(ch in self.lines for ch in call) else "calc"

    def __call__(self, call: str) -> str:
        """The tool's reply to `call`."""
        return self.search(call) if self.which(call) == "search" else self.calc(call)


def _step(g: torch.Generator, value: int) -> tuple[str, int]:
    """One more operation on `value` with one digit: + 1 … 9, − 0 … 9 (no more than it), × 2 … 9."""
    op = OPS[int(torch.randint(3, (1,), generator=g))]
    low, high = {"+": (1, 9), "-": (0, min(value, 9)), "*": (2, 9)}[op]
    n = int(torch.randint(low, high + 1, (1,), generator=g))
    return f"{op}{n}", (value + n if op == "+" else value - n if op == "-" else value * n)


def make(g: torch.Generator, kind: str, steps: int, poems: list[poems_.Poem]) -> Task:
    """A random chain of `steps` calls starting with `kind`."""
    if kind == "search":
        number = int(torch.randint(len(poems), (1,), generator=g))
        line = poems[number].lines[int(torch.randint(4, (1,), generator=g))]
        expr, value, calls, results = f"《{line}》", number, [line], [number]
    else:
        value = int(torch.randint(10, 100, (1,), generator=g))  # two digits, then the first operation
        expr, calls, results = str(value), [], []
    while len(calls) < steps:
        op, new = _step(g, value)
        expr = f"({expr}){op}" if any(o in expr for o in OPS) else f"{expr}{op}"  # parentheses around a compound
        calls.append(f"{value}{op}")
        value = new
        results.append(value)
    return Task(f"{expr}=", tuple(calls), tuple(results), kind)


__all__ = ["Task", "Tools", "make", "KINDS", "TRAINED_STEPS", "ASKED_STEPS", "FAILED"]
