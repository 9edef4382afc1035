"""The concept lessons by topic name: `attnlab explain TOPIC`, `GET /api/explain/{topic}` and the pages.

    from attnlab.lessons.explain import explain, as_dict
    result = explain("sqrt-dk", d_k=64)          # the lesson's dataclass; raw strings are parsed too
    as_dict(result)["chosen"]["var"]             # plain JSON-able data

Each topic is one lesson function (in attnlab/lessons/<module>.py) with its parameter specs (`PARAMS`),
which the CLI turns into options (--d-k), the API into query parameters (d_k, or d-k) and the page into
sliders, and one figure function in attnlab/plots.py. Modules load on first use, so listing the topics
imports no torch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from attnlab.lessons.params import Param, ParamError


@dataclass(frozen=True)
class Topic:
    name: str  # the TOPIC value: "sqrt-dk"
    module: str  # attnlab.lessons.<module>
    function: str  # the lesson function in it

    @property
    def slug(self) -> str:
        return self.module  # sqrt_dk: i18n keys explain.<slug>.*, figure plots.plot_<slug>

    @property
    def params(self) -> tuple[Param, ...]:
        return import_module(f"attnlab.lessons.{self.module}").PARAMS

    @property
    def lesson(self):
        return getattr(import_module(f"attnlab.lessons.{self.module}"), self.function)

    def run(self, *, lang: str = "zh", **raw: Any):
        """Parse raw values (strings or Python values; d-k and d_k both name d_k) and run the lesson."""
        return self.lesson(**self.parse(**raw), lang=lang)

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
        from attnlab import plots

        plots.save(getattr(plots, f"plot_{self.slug}"), result, path, lang=lang)


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
