"""A lesson's result from the suite's shared store (tests/conftest.py): computed once per (topic, settings,
language, code version) for every test and both workers, then read back.

    from results import result
    r = result("induction", lang="en", **TOPICS["induction"].quick)

Under a test that patches (monkeypatch) or is marked `fresh`, the store is off and this computes afresh."""

from __future__ import annotations

from typing import Any

from attnlab.lessons.explain import get_topic


def result(topic: str, lang: str = "en", **settings: Any):
    """The lesson's dataclass at `settings` (ParamError as the lesson raises it). Never mutate it.

    A heavy lesson at its defaults or its QUICK settings, which tests ask for in both languages, has its other
    language computed and stored too, under one lock for every language: most heavy lessons keep what they
    trained in memory, so the other language costs its text only, and two workers, one asking for zh and the
    other for en, train it once."""
    from attnlab.i18n import LANGS
    from attnlab.lessons.common import disk_cache

    lesson = get_topic(topic)
    every = lesson.key(settings, None)
    asked = [{}, lesson.quick]
    asked += [{**base, **null.settings} for base in asked for null in lesson.nulls.values()]  # the nulls of those
    if not lesson.heavy or every not in [lesson.key(x, None) for x in asked]:
        return lesson.remembered(lang=lang, **settings)
    with disk_cache.computing(lesson.stored_key(every)):
        answers = {
            other: lesson.remembered(lang=other, **settings) for other in (lang, *(x for x in LANGS if x != lang))
        }
    return answers[lang]


def explained(topic: str, lang: str = "en", **settings: Any):
    """result(), its claims carrying their nulls (lessons/common/nulls.py), each null read from the store too."""
    from attnlab.lessons.common.params import ParamError

    lesson = get_topic(topic)
    done = result(topic, lang, **settings)
    nulls = []
    for other in lesson.null_settings(done, settings):
        try:
            nulls.append(result(topic, lang, **other))
        except ParamError:
            nulls.append(None)
    return lesson.with_nulls(done, settings, lang, nulls)


def text(value: Any) -> str:
    """A value as a query string or the CLI spells it (true/false for a bool)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def quick_query(topic: str, **more: Any) -> dict[str, str]:
    """The lesson's QUICK (and `more`) as query parameters."""
    return {k: text(v) for k, v in {**get_topic(topic).quick, **more}.items()}


def quick_flags(topic: str, **more: Any) -> list[str]:
    """The lesson's QUICK (and `more`) as `attnlab explain` options: --train-steps 20, --bug / --no-bug."""
    flags: list[str] = []
    for name, value in {**get_topic(topic).quick, **more}.items():
        option = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            flags.append(option if value else "--no-" + option[2:])
        else:
            flags += [option, text(value)]
    return flags


def by_topic(names=None) -> list:
    """Topic names as pytest parameters, a heavy lesson's (it trains, times or samples: HEAVY in its lesson.py)
    marked slow, so `-m "not slow"` keeps the lessons that compute in an instant."""
    import pytest

    from attnlab.lessons.explain import TOPICS

    return [
        pytest.param(name, marks=pytest.mark.slow, id=name) if TOPICS[name].heavy else pytest.param(name, id=name)
        for name in (TOPICS if names is None else names)
    ]
