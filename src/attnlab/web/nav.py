"""The lab's lessons, in teaching order: the navigation bar and the home page are drawn from this list.

A lesson joins the lab with one line here. `slug` is its page path (/<slug>); `title_key` and
`summary_key` are i18n keys (the summary is shown on the home page); `source_key` (optional) names the
course text the lesson follows (第 06 讲, 第 1 章, 第 16 章), shown on the home page too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lesson:
    slug: str
    title_key: str
    summary_key: str
    source_key: str = ""

    @property
    def path(self) -> str:
        return f"/{self.slug}"


LESSONS: tuple[Lesson, ...] = (
    Lesson("toy", "toy.nav.title", "toy.nav.summary", "web.source.lecture06"),
    Lesson("lookup", "toy.lookup.nav.title", "toy.lookup.nav.summary", "web.source.chapter01"),
    Lesson("ledger", "toy.ledger.nav.title", "toy.ledger.nav.summary", "web.source.lecture06"),
    Lesson("pipeline", "pipeline.nav.title", "pipeline.nav.summary", "web.source.chapter16"),
    Lesson("runs", "runs.nav.title", "runs.nav.summary", "web.source.chapter16"),
    Lesson("real", "real.nav.title", "real.nav.summary", "web.source.real"),
    Lesson("explain", "explain.nav.title", "explain.nav.summary", "web.source.explain"),
)
