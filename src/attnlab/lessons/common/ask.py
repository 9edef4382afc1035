"""A topic's question, asked before the topic shows any result, and its answer read from the run's own numbers.

Each lesson folder's `ask.py` declares `OPTIONS`, the ids of the choices (their words are the strings
explain.<slug>.ask.opt.<id>, the question explain.<slug>.ask.q), and `answer(result) -> Answer`: the option this
run's numbers make right, with the numbers that decide it (the fields of explain.<slug>.ask.why). The right
answer is never written down: at other settings the run may decide otherwise, and the verdict follows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnlab.i18n import t


@dataclass(frozen=True)
class Answer:
    option: str  # the right option at this run's numbers
    numbers: dict[str, Any] = field(default_factory=dict)  # what decides it: the fields of the `why` sentence


def question(slug: str, options: tuple[str, ...], lang: str) -> dict:
    """{"q", "options": [(id, words)]} in `lang`."""
    return {
        "q": t(f"explain.{slug}.ask.q", lang),
        "options": [(o, t(f"explain.{slug}.ask.opt.{o}", lang)) for o in options],
    }


def verdict(slug: str, answer: Answer, predict: str, lang: str) -> dict:
    """Whether `predict` is this run's answer, in words, with the numbers that decide it:
    {"predict", "answer", "correct", "head" ("Right." / "Not quite: the answer is …"), "why", "text"}."""
    correct = predict == answer.option
    words = t(f"explain.{slug}.ask.opt.{answer.option}", lang)
    head = t("explain.ui.ask.right", lang) if correct else t("explain.ui.ask.wrong", lang, answer=words)
    why = t(f"explain.{slug}.ask.why", lang, **answer.numbers)
    return {
        "predict": predict,
        "answer": answer.option,
        "correct": correct,
        "head": head,
        "why": why,
        "text": f"{head} {why}",
    }
