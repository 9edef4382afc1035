"""A topic's question, asked before the topic shows any result, and its answer read from the run's own numbers.

Each lesson folder's `ask.py` declares `OPTIONS`, the ids of the choices (their words are the strings
explain.<slug>.ask.opt.<id>, the question explain.<slug>.ask.q), and `answer(result) -> Answer`: the option this
run's numbers make right, with the numbers that decide it (the fields of explain.<slug>.ask.why), and which of
them carries the lesson (`key`: the page marks it in the sentence). The right answer is never written down: at
other settings the run may decide otherwise, and the verdict follows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnlab.i18n import t


@dataclass(frozen=True)
class Answer:
    option: str  # the right option at this run's numbers
    numbers: dict[str, Any] = field(default_factory=dict)  # what decides it: the fields of the `why` sentence
    key: str | None = None  # the one of `numbers` that carries the lesson: the page marks it in the sentence


class _Marked(float):
    """A number that formats as usual between two private-use marks, so its text can be found in a sentence."""

    def __format__(self, spec: str) -> str:
        return "\ue000" + format(float(self), spec) + "\ue001"

    def __str__(self) -> str:
        return "\ue000" + float.__str__(self) + "\ue001"


def key_mark(slug: str, answer: Answer, lang: str) -> tuple[str, int]:
    """The key number as the `why` sentence writes it ("516", "0.873") and where in the sentence: ("", -1) when
    there is none. Found by writing the sentence again with that number between two private-use marks, so a
    number that also occurs elsewhere in the sentence ("1") is marked where it stands for the key."""
    value = answer.numbers.get(answer.key) if answer.key is not None else None
    kind = next((m for m in (_MarkedInt, _Marked, _MarkedStr) if type(value) is m.__bases__[0]), None)
    if kind is None:  # bool, None (a reading the run could not make): nothing to mark
        return "", -1
    text = t(f"explain.{slug}.ask.why", lang, **{**answer.numbers, answer.key: kind(value)})
    start, end = text.find("\ue000"), text.find("\ue001")
    return (text[start + 1 : end], start) if 0 <= start < end else ("", -1)


class _MarkedInt(int):
    def __format__(self, spec: str) -> str:
        return "\ue000" + format(int(self), spec) + "\ue001"

    def __str__(self) -> str:
        return "\ue000" + int.__str__(self) + "\ue001"


def question(slug: str, options: tuple[str, ...], lang: str) -> dict:
    """{"q", "options": [(id, words)]} in `lang`."""
    return {
        "q": t(f"explain.{slug}.ask.q", lang),
        "options": [(o, t(f"explain.{slug}.ask.opt.{o}", lang)) for o in options],
    }


def verdict(slug: str, answer: Answer, predict: str, lang: str) -> dict:
    """Whether `predict` is this run's answer, in words, with the numbers that decide it:
    {"predict", "answer", "correct", "head" ("Right." / "Not quite: the answer is …"), "why", "key", "key_text",
    "key_at", "text"}; key_text, the one number that carries the lesson as `why` writes it at key_at, is marked
    on the page."""
    correct = predict == answer.option
    words = t(f"explain.{slug}.ask.opt.{answer.option}", lang)
    head = t("explain.ui.ask.right", lang) if correct else t("explain.ui.ask.wrong", lang, answer=words)
    why = t(f"explain.{slug}.ask.why", lang, **answer.numbers)
    key_text, key_at = key_mark(slug, answer, lang)
    return {
        "predict": predict,
        "answer": answer.option,
        "correct": correct,
        "head": head,
        "why": why,
        "key": answer.key,  # the number that carries the lesson, by its name in `numbers`
        "key_text": key_text,  # and as `why` writes it, at `key_at` in it: the page marks it there
        "key_at": key_at,
        "text": f"{head} {why}",
    }


class _MarkedStr(str):
    def __format__(self, spec: str) -> str:
        return "\ue000" + format(str.__str__(self), spec) + "\ue001"

    def __str__(self) -> str:
        return "\ue000" + str.__str__(self) + "\ue001"
