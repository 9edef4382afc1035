"""The concept lessons by topic name: `attnlab explain TOPIC`, `GET /api/explain/{topic}` and the pages.

    from attnlab.lessons.explain import explain, as_dict
    result = explain("sqrt-dk", d_k=64)          # the lesson's dataclass; raw strings are parsed too
    as_dict(result)["chosen"]["var"]             # plain JSON-able data

Each topic is one folder, attnlab/lessons/<slug>/, found through this registry by every view:
- `lesson.py`: the lesson function and its parameter specs (`PARAMS`), which the CLI turns into options
  (--d-k), the API into query parameters (d_k, or d-k) and the page into sliders;
- `figure.py`: `plot(result, fig, tr)`; `view.py`: `show(console, result, lang, t)`, the terminal view;
- `page.html`: the topic's part of /explain/<topic>; `strings.json`: its zh/en strings; `static/`: any script.
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
PIECES = ("lesson.py", "figure.py", "view.py", "page.html", "strings.json")  # what every topic's folder holds


@dataclass(frozen=True)
class Topic:
    name: str  # the TOPIC value: "sqrt-dk"
    slug: str  # its folder, attnlab/lessons/<slug>/, and its i18n keys explain.<slug>.*
    function: str  # the lesson function in its lesson.py

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
    def view(self):
        """The terminal view: view(console, result, lang, t)."""
        return self.piece("view").show

    def run(self, *, lang: str = "zh", **raw: Any):
        """Parse raw values (strings or Python values; d-k and d_k both name d_k) and run the lesson."""
        return self.lesson(**self.parse(**raw), lang=lang)

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
                unknown[0], "explain.error.no_param", topic=self.name, names=", ".join(unknown),
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
        Topic("sqrt-dk", "sqrt_dk", "sqrt_dk"),
        Topic("positional", "positional", "positional"),
        Topic("permutation", "permutation", "permutation"),
        Topic("multihead", "multihead", "multihead"),
        Topic("position-wise", "position_wise", "position_wise"),
        Topic("rnn-gradients", "rnn_gradients", "rnn_gradients"),
        Topic("serial-vs-parallel", "serial_vs_parallel", "serial_vs_parallel"),
        Topic("complexity", "complexity", "complexity"),
        Topic("forms", "forms", "forms"),
        Topic("glossary", "glossary", "glossary"),
        Topic("norms", "norms", "norms"),
        Topic("context-vectors", "context_vectors", "context_vectors"),
        Topic("one-hot", "one_hot", "one_hot"),
        Topic("seq2seq", "seq2seq", "seq2seq"),
        Topic("break", "break_it", "break_it"),
        Topic("mlm", "mlm", "mlm"),
        Topic("scale", "scale", "scale"),
        Topic("flash", "flash", "flash"),
        Topic("memory", "memory", "memory"),
        Topic("moe", "moe", "moe"),
        Topic("data-parallel", "data_parallel", "data_parallel"),
        Topic("logit-lens", "logit_lens", "logit_lens"),
        Topic("ffn-memory", "ffn_memory", "ffn_memory"),
        Topic("patching", "patching", "patching"),
        Topic("induction", "induction", "induction"),
        Topic("word2vec", "word2vec", "word2vec"),
    )
}


def get_topic(name: str) -> Topic:
    """The topic called `name` (sqrt-dk; sqrt_dk works too); KeyError naming the topics otherwise."""
    key = name.strip().lower().replace("_", "-")
    if key not in TOPICS:
        raise KeyError(f"no topic {name!r}; the topics are {', '.join(TOPICS)}")
    return TOPICS[key]


def explain(topic: str, *, lang: str = "zh", **params: Any):
    """Run the lesson for `topic` with `params` and return its dataclass."""
    return get_topic(topic).run(lang=lang, **params)


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
