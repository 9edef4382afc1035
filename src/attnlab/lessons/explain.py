"""The concept lessons by topic name: `attnlab explain TOPIC`, `GET /api/explain/{topic}` and the pages.

    from attnlab.lessons.explain import explain, as_dict
    result = explain("sqrt-dk", d_k=64)          # the lesson's dataclass; raw strings are parsed too
    as_dict(result)["chosen"]["var"]             # plain JSON-able data

Each topic is one folder, attnlab/lessons/<slug>/, found through this registry by every view:
- `lesson.py`: the lesson function and its parameter specs (`PARAMS`), which the CLI turns into options
  (--d-k), the API into query parameters (d_k, or d-k) and the page into sliders;
- `ask.py`: the question the page asks before it shows anything (`OPTIONS`) and `answer(result)`, the option the
  run's own numbers make right (lessons/common/ask.py);
- `figure.py`: `plot(result, fig, tr)`; `view.py`: `show(console, result, lang, t)`, the terminal view;
- `page.html`: the topic's part of /explain/<topic>; `strings.json`: its zh/en strings; `static/`: any script.
A lesson's lesson.py also owns its facts: `QUICK` (the settings every test that runs the lesson cheaply starts
from: the parameters that cost time shrunk, and a quiz answered where the page shows more once it is), `HEAVY = True` when it takes seconds (it trains, times or
samples: the static copy holds its defaults only), `TOGETHER = True` when its parameters only mean something
together, `COURSE`, its place on the course map (web/course_map.py), and `NULLS`, each claim's strongest null as
settings of its own parameters (lessons/common/nulls.py; `explained()` runs them). Its tests live in
tests/lessons/<slug>/.
Adding a topic is one folder and one line in TOPICS. Modules load on first use, so listing the topics
imports no torch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from attnlab.lessons.common.cost import DEFAULT, Cost
from attnlab.lessons.common.params import Param, ParamError, check

FOLDER = Path(__file__).parent  # attnlab/lessons/
PIECES = ("lesson.py", "ask.py", "figure.py", "view.py", "page.html", "strings.json")  # what every topic's folder holds


@dataclass(frozen=True)
class Topic:
    name: str  # the TOPIC value: "sqrt-dk"
    slug: str = ""  # its folder, attnlab/lessons/<slug>/, and its i18n keys explain.<slug>.* (default: sqrt_dk)
    function: str = ""  # the lesson function in its lesson.py (default: the slug)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slug", self.slug or self.name.replace("-", "_"))
        object.__setattr__(self, "function", self.function or self.slug)

    def piece(self, name: str):
        """The module attnlab.lessons.<slug>.<name> (lesson, figure or view), imported on first use."""
        return import_module(f"attnlab.lessons.{self.slug}.{name}")

    @property
    def folder(self) -> Path:
        return FOLDER / self.slug

    @property
    def template(self) -> str:
        """The topic's part of its page, for the web's template loader (which looks in attnlab/lessons/)."""
        return f"{self.slug}/page.html"

    @property
    def params(self) -> tuple[Param, ...]:
        return self.piece("lesson").PARAMS

    @property
    def lesson(self):
        return getattr(self.piece("lesson"), self.function)

    @property
    def options(self) -> tuple[str, ...]:
        """The ids of the choices of the question the topic asks first (its ask.py's OPTIONS)."""
        return tuple(self.piece("ask").OPTIONS)

    def answer(self, result):
        """The option this run's numbers make right, with the numbers that decide it (its ask.py)."""
        return self.piece("ask").answer(result)

    def verdict(self, result, predict: str, lang: str = "zh") -> dict:
        """Whether `predict` is this run's answer, in words (lessons/common/ask.py: verdict)."""
        from attnlab.lessons.common.ask import verdict

        return verdict(self.slug, self.answer(result), predict, lang)

    @property
    def view(self):
        """The terminal view: view(console, result, lang, t)."""
        return self.piece("view").show

    @property
    def quick(self) -> dict[str, Any]:
        """The lesson's QUICK: test-sized values of the parameters that cost time ({} when nothing does)."""
        return dict(getattr(self.piece("lesson"), "QUICK", {}))

    @property
    def heavy(self) -> bool:
        """The lesson takes seconds (it trains, times or samples): its lesson.py says HEAVY = True."""
        return bool(getattr(self.piece("lesson"), "HEAVY", False))

    @property
    def course(self) -> tuple[str, int]:
        """(section, place): where the course map (web/course_map.py) lists it; its lesson.py's COURSE."""
        section, place = self.piece("lesson").COURSE
        return section, int(place)

    @property
    def together(self) -> bool:
        """Its parameters only mean something together (a whole model's configuration): TOGETHER = True."""
        return bool(getattr(self.piece("lesson"), "TOGETHER", False))

    def key(self, raw: dict[str, Any], lang: str) -> tuple:
        """(name, every parameter's value with defaults filled in, lang): what a result depends on (ParamError
        for a bad value). The web keeps results under it, in memory and on disk (stored_key)."""
        given = self.parse(**raw)
        return (self.name, tuple((p.name, given.get(p.name, p.default)) for p in self.params), lang)

    def stored_key(self, key: tuple) -> dict:
        """The disk cache's key of the result `key` (lessons/common/disk_cache.py): it versions the lesson's folder."""
        from attnlab.lessons.common import disk_cache

        return disk_cache.make_key("explain", key[0], key[1], key[2], source=self.slug)

    def run(self, *, lang: str = "zh", **raw: Any):
        """Parse raw values (strings or Python values; d-k and d_k both name d_k) and run the lesson, all of it on
        one CPU thread (attnlab.io.threads: what a lesson does after its training, too)."""
        from attnlab.io.threads import one_thread

        given = self.parse(**raw)
        with one_thread():
            return self.lesson(**given, lang=lang)

    def names_a_file(self, raw: dict) -> bool:
        """Whether these values name a file (a cli_only parameter set): its result depends on what the file says."""
        values = {k.replace("-", "_"): v for k, v in raw.items()}
        return any(p.cli_only and values.get(p.name) not in (None, p.default) for p in self.params)

    def remembered(self, *, lang: str = "zh", **raw: Any):
        """run(), kept in the lab's disk cache (lessons/common/disk_cache.py) as the web keeps its results: asked
        again with the same settings and the same code, the stored result comes back at once, and two processes
        asking at once compute it once. A file's path (a cli_only parameter) is never remembered: the key holds
        the path, not what the file says."""
        from attnlab.lessons.common import disk_cache

        if self.names_a_file(raw):
            return self.run(lang=lang, **raw)
        stored = self.stored_key(self.key(raw, lang))
        with disk_cache.computing(stored):
            result = disk_cache.load(stored)
            if result is disk_cache.MISS:
                result = self.run(lang=lang, **raw)
                disk_cache.store(stored, result)
        return result

    @property
    def nulls(self) -> dict:
        """Each claim's strongest null by claim id (lessons/common/nulls.py): its lesson.py's NULLS."""
        return dict(getattr(self.piece("lesson"), "NULLS", {}))

    def given(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Every parameter's value at these settings, defaults filled in."""
        return dict(self.key(raw, None)[1])

    def _needed(self, result, raw: dict[str, Any]) -> list[dict[str, Any]]:
        from attnlab.lessons.common import nulls

        return nulls.needed(self.nulls, list(getattr(result, "claims", [])), self.given(raw))

    def null_settings(self, result, raw: dict[str, Any]) -> list[dict[str, Any]]:
        """The settings to run for this result's claims' nulls: each null's own settings merged over `raw`."""
        return [{**raw, **settings} for settings in self._needed(result, raw)]

    def with_nulls(self, result, raw: dict[str, Any], lang: str, null_results: list):
        """A copy of `result` whose claims carry their nulls' measurements; `null_results` are the results at
        null_settings(result, raw), in that order (None where the lesson refused those settings)."""
        from attnlab.lessons.common import nulls

        if not hasattr(result, "claims"):
            return result
        runs = {
            nulls.key_of(settings): None if done is None else {c.id: c for c in done.claims}
            for settings, done in zip(self._needed(result, raw), null_results)
        }
        claims = nulls.attach(self.slug, self.nulls, result.claims, runs, self.given(raw), lang)
        return dataclasses.replace(result, claims=claims)

    def explained(self, *, lang: str = "zh", **raw: Any):
        """remembered(), its claims carrying their nulls (each null run remembered too): what every view shows."""
        result = self.remembered(lang=lang, **raw)
        done = []
        for settings in self.null_settings(result, raw):
            try:
                done.append(self.remembered(lang=lang, **settings))
            except ParamError:
                done.append(None)
        return self.with_nulls(result, raw, lang, done)

    def cost(self, **raw: Any) -> Cost:
        """What the lesson will cost at these values (ParamError for a bad value or one too large), before
        anything is allocated: the lesson's own `cost(p)`, or DEFAULT."""
        p = check(self.params, self.parse(**raw))
        estimate = getattr(self.piece("lesson"), "cost", None)
        return estimate(p) if estimate is not None else DEFAULT

    def parse(self, **raw: Any) -> dict[str, Any]:
        """The values given, parsed and checked one by one (ParamError names the first bad one)."""
        values = {k.replace("-", "_"): v for k, v in raw.items()}
        known = {p.name for p in self.params}
        unknown = sorted(k for k in values if k not in known)
        if unknown:
            raise ParamError(
                f"topic {self.name!r} has no parameter {', '.join(unknown)}; its parameters are "
                f"{', '.join(p.name for p in self.params) or 'none'}",
                unknown[0],
                "explain.error.no_param",
                topic=self.name,
                names=", ".join(unknown),
                known=", ".join(p.name for p in self.params) or "—",
            )
        return {p.name: p.parse(values[p.name]) for p in self.params if p.name in values}

    def plot(self, result, path, *, lang: str = "zh") -> None:
        """Write the topic's figure for `result` to `path` (.png or .svg)."""
        from attnlab.lessons.common.figure import save

        save(self.piece("figure").plot, result, path, lang=lang)


TOPICS: dict[str, Topic] = {
    topic.name: topic
    for topic in (
        Topic("sqrt-dk"),
        Topic("positional"),
        Topic("permutation"),
        Topic("multihead"),
        Topic("position-wise"),
        Topic("rnn-gradients"),
        Topic("serial-vs-parallel"),
        Topic("complexity"),
        Topic("forms"),
        Topic("glossary"),
        Topic("norms"),
        Topic("context-vectors"),
        Topic("one-hot"),
        Topic("seq2seq"),
        Topic("break", "break_it"),
        Topic("mlm"),
        Topic("scale"),
        Topic("flash"),
        Topic("memory"),
        Topic("moe"),
        Topic("data-parallel"),
        Topic("logit-lens"),
        Topic("ffn-memory"),
        Topic("patching"),
        Topic("induction"),
        Topic("word2vec"),
        Topic("prompting"),
        Topic("tools"),
        Topic("bpe"),
        Topic("vit"),
        Topic("long-range"),
        Topic("encoder-uses"),
        Topic("rag"),
        Topic("agent"),
        Topic("instruct"),
    )
}


def get_topic(name: str) -> Topic:
    """The topic called `name` (sqrt-dk; sqrt_dk works too); KeyError naming the topics otherwise."""
    key = name.strip().lower().replace("_", "-")
    if key not in TOPICS:
        raise KeyError(f"no topic {name!r}; the topics are {', '.join(TOPICS)}")
    return TOPICS[key]


def explain(topic: str, *, lang: str = "zh", **params: Any):
    """Run the lesson for `topic` with `params` and return its dataclass, its claims carrying their nulls."""
    return get_topic(topic).explained(lang=lang, **params)


def _plain(obj):
    # JSON has no NaN or infinity: a value that is not a number becomes null.
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def as_dict(result) -> dict:
    """A lesson result as plain JSON-able data (NaN and infinities become None)."""
    return _plain(dataclasses.asdict(result))


__all__ = ["Topic", "TOPICS", "get_topic", "explain", "as_dict", "ParamError"]
