"""Terminal views of the topics that check the texts' missing claims (norms, context-vectors, one-hot);
attnlab.commands.explain adds them to its VIEWS. The lessons computed every number; these only format."""

from __future__ import annotations


def _norms(console, r, lang, t) -> None:
    from attnlab.commands.explain import _table

    names = ("ln_alone", "ln_in_a", "ln_in_b", "bn_in_a", "bn_in_b", "bn_eval_a", "bn_eval_b")
    rows = [[str(k), r.sample[k], *[getattr(r, n)[k] for n in names]] for k in range(min(len(r.sample), 16))]
    console.print(_table(t("explain.norms.table", lang), [t("explain.norms.feature", lang), "x"]
                         + [t(f"explain.plot.norms.{n}", lang) for n in names], rows))


VIEWS = {"norms": _norms}
