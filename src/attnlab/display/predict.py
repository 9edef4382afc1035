"""Predict first, in a notebook: a check cell compares the learner's own prediction with the lab, and refuses,
politely and without giving the answer away, while the prediction cell above it is still empty.

    my_keys = None                                # the prediction cell: the learner replaces None
    ask(check_prediction, "keys", my_keys)        # the check cell
"""

from __future__ import annotations

import html

from attnlab.display.glyphs import with_glyphs

WAITING = (
    "Verdict: not yet. Write your prediction in the cell above (replace None with one of: {options}), run "
    "that cell, then run this one again. 先在上一格写下你的预测（把 None 换成 {options} 之一），运行它，再运行这一格。"
)


class Waiting:
    """What a check cell shows before there is a prediction to check: the options, never the answer."""

    def __init__(self, question_id: str, options: list[str]):
        self.question_id, self.options = question_id, options

    def __repr__(self) -> str:
        return WAITING.format(options=" / ".join(self.options) or "…")

    def _repr_html_(self) -> str:
        return with_glyphs(
            f'<div class="attnlab-repr" style="color:#4a5266">'
            f"<strong>Verdict</strong> · {html.escape(repr(self)[len('Verdict: ') :])}</div>"
        )


def ask(check, question_id: str, given, options: list[str] | None = None):
    """`check(question_id, given)` (e.g. attnlab.lessons.toy.lesson.check_prediction) once the learner has written a
    prediction; a Waiting note while `given` is None or blank."""
    if given is None or not str(given).strip():
        return Waiting(question_id, list(options or []))
    return check(question_id, str(given).strip())
