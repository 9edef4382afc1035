"""The lab's lessons, in teaching order: the navigation bar and the home page are drawn from this list.

A lesson joins the lab with one line here. `slug` is its page path (/<slug>); `title_key` and
`summary_key` are i18n keys (the summary is shown on the home page).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lesson:
    slug: str
    title_key: str
    summary_key: str

    @property
    def path(self) -> str:
        return f"/{self.slug}"


LESSONS: tuple[Lesson, ...] = (
    Lesson("toy", "toy.nav.title", "toy.nav.summary"),
    Lesson("lookup", "toy.lookup.nav.title", "toy.lookup.nav.summary"),
    Lesson("ledger", "toy.ledger.nav.title", "toy.ledger.nav.summary"),
    Lesson("pipeline", "pipeline.nav.title", "pipeline.nav.summary"),
    Lesson("runs", "runs.nav.title", "runs.nav.summary"),
    Lesson("real", "real.nav.title", "real.nav.summary"),
    Lesson("explain", "explain.nav.title", "explain.nav.summary"),
)
