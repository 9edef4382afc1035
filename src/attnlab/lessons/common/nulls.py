"""A claim's strongest null: the same lesson run where the effect its sentence names is absent.

A lesson's lesson.py declares, for each claim that is not an identity, the settings of its own parameters that
keep everything but the effect (the same characters shuffled, no training, the relevant part removed):

    NULLS = {"training_context": Null("shuffled", shuffle=True)}

The views run the lesson again at those settings (cached like any result) and the claim carries what the null
measured: `claim.null = {name, label, settings, measured, baseline, status, line}`. The null should not show the
claim; where it does, the claim is not shown either (it does not beat its null), and its line says why.

A claim whose own control already is its null carries it in its own arithmetic, with no second run: a count
against binomial chance per independent unit (claims.beats_chance: `CHANCE`), or a case the run computes alike
where the effect is absent by construction (`Null("d_k_1")`: its control is d_k = 1, where the two softmaxes are one).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from attnlab.lessons.common.claims import MARKS, NOT_SHOWN, SHOWN, Claim, _num


@dataclass(frozen=True)
class Null:
    """Settings of the lesson's own parameters where the claim's effect is absent, and their name in words
    (explain.<slug>.null.<name>, else the common explain.null.<name>)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)

    def __init__(self, name: str, **settings: Any):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "settings", dict(settings))

    @property
    def analytic(self) -> bool:
        """No run: the claim's own control is the null (a count against chance)."""
        return not self.settings


CHANCE = Null("chance")


def label(slug: str, null: Null, lang: str) -> str:
    from attnlab.i18n import catalog, t

    own = f"explain.{slug}.null.{null.name}"
    return t(own if own in catalog() else f"explain.null.{null.name}", lang)


def is_identity(claim: Claim) -> bool:
    return claim.direction == "within"


def needed(declared: dict[str, Null], claims: list[Claim], given: dict[str, Any]) -> list[dict[str, Any]]:
    """The distinct settings to run for these claims' nulls, skipping those the given settings already are."""
    out: list[dict[str, Any]] = []
    for c in claims:
        null = declared.get(c.id)
        if null is None or null.analytic or is_identity(c):
            continue
        if all(given.get(k) == v for k, v in null.settings.items()) or null.settings in out:
            continue
        out.append(dict(null.settings))
    return out


def _line(name: str, lang: str, status: str, measured, baseline) -> str:
    from attnlab.i18n import t

    line = t("explain.null.line", lang, null=name, mark=MARKS[status], measured=_num(measured), baseline=_num(baseline))
    return line if status != SHOWN else line + " · " + t("explain.null.also_shown", lang)


def attach(slug: str, declared: dict[str, Null], claims: list[Claim], runs: dict, given: dict, lang: str) -> list:
    """The claims, each with its null's measurement (`runs`: settings as a sorted tuple -> the null run's claims
    by id, or None when the lesson refused those settings). A claim its null shows too is not shown."""
    from attnlab.i18n import t

    out = []
    for c in claims:
        null = declared.get(c.id)
        if null is None or is_identity(c):
            out.append(c)
            continue
        name = label(slug, null, lang)
        info: dict[str, Any] = {"name": null.name, "label": name, "settings": dict(null.settings)}
        if null.analytic:  # its own control is the null (chance per independent unit, or a case computed alike)
            info.update(measured=c.baseline, baseline=c.baseline, status=NOT_SHOWN)
            which = "chance_line" if null.name == "chance" else "own_line"
            info["line"] = t(f"explain.null.{which}", lang, null=name, baseline=_num(c.baseline))
        elif all(given.get(k) == v for k, v in null.settings.items()):  # the learner chose the null itself
            info.update(measured=c.measured, baseline=c.baseline, status=c.status)
            info["line"] = t("explain.null.is_this_run", lang, null=name)
            if c.status == SHOWN:  # a claim cannot beat itself: shown on its null is what the null shows
                note = t("explain.null.not_beaten", lang)
                c = dataclasses.replace(c, status=NOT_SHOWN, holds=False, versus=f"{c.versus} · {note}")
        else:
            found = runs.get(key_of(null.settings))
            twin = None if found is None else found.get(c.id)
            if twin is None:
                info.update(measured=None, baseline=None, status=NOT_SHOWN)
                info["line"] = t("explain.null.absent", lang, null=name)
            else:
                info.update(measured=twin.measured, baseline=twin.baseline, status=twin.status)
                info["line"] = _line(name, lang, twin.status, twin.measured, twin.baseline)
                if twin.status == SHOWN and c.status == SHOWN:  # the null shows it too: not what this run shows
                    note = t("explain.null.not_beaten", lang)
                    c = dataclasses.replace(c, status=NOT_SHOWN, holds=False, versus=f"{c.versus} · {note}")
        out.append(dataclasses.replace(c, null=info))
    return out


def key_of(settings: dict[str, Any]) -> tuple:
    return tuple(sorted(settings.items()))
