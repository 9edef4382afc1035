"""The course map: every page and every explain topic, in the order of the course texts (lecture 06, then
chapter 1, then chapter 16's steps ① to ⑦, then looking inside a trained model), each with the one line that
says what it answers. The home page draws it, the top bar's menu lists it, and lab.js marks the questions a
learner has answered (kept in the browser, nothing on the server).

A topic's place comes from its lesson.py (`COURSE`); the pages that are not topics are placed here."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.lessons.explain import TOPICS

SECTIONS = ("lecture06", "chapter01", "chapter16", "inside")  # in course order; titles: web.map.<id>
PAGES = {  # path: (section, place, title key, summary key)
    "/toy": ("lecture06", 10, "toy.nav.title", "toy.nav.summary"),
    "/ledger": ("lecture06", 150, "toy.ledger.nav.title", "toy.ledger.nav.summary"),
    "/lookup": ("chapter01", 20, "toy.lookup.nav.title", "toy.lookup.nav.summary"),
    "/pipeline": ("chapter16", 10, "pipeline.nav.title", "pipeline.nav.summary"),
    "/runs": ("chapter16", 20, "runs.nav.title", "runs.nav.summary"),
    "/scale": ("chapter16", 35, "web.map.scale.title", "web.map.scale.summary"),
    "/real": ("inside", 10, "real.nav.title", "real.nav.summary"),
}


@dataclass(frozen=True)
class Stop:
    path: str
    title_key: str
    summary_key: str
    topic: str = ""  # an explain topic's name (its question's answer is remembered under it), else ""


def course_map() -> tuple[tuple[str, tuple[Stop, ...]], ...]:
    """[(section, [stops in course order])] for SECTIONS."""
    placed: dict[str, list[tuple[int, Stop]]] = {s: [] for s in SECTIONS}
    for path, (section, place, title, summary) in PAGES.items():
        placed[section].append((place, Stop(path, title, summary)))
    for topic in TOPICS.values():
        section, place = topic.course
        title, summary = f"explain.{topic.slug}.title", f"explain.{topic.slug}.summary"
        placed[section].append((place, Stop(f"/explain/{topic.name}", title, summary, topic.name)))
    return tuple((s, tuple(stop for _, stop in sorted(placed[s], key=lambda p: p[0]))) for s in SECTIONS)
