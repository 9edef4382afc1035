"""Coreference on a real model, counted so that the count can fail: minimal pairs, ties apart, chance and the
first noun as controls.

Each minimal pair is two sentences that differ only in the adjective: in the first the pronoun means the first
noun, in the second the second noun, and the words stay where they are. A head "prefers" the candidate to which
"it" gives the larger weight, on unrounded weights; a head whose two weights differ by less than TIE prefers
neither and is counted apart (a tie). Three comparisons, all sign tests at the 5% binomial level:

  * majority: heads preferring the implied referent against chance (a head choosing at random: ½ of the untied);
  * flip: from the pair's first sentence to its second, the heads preferring the first noun must fall (the heads
    that switch with the meaning must outnumber those that switch against it); "always the first noun" never falls;
  * meaning: heads that follow the meaning in both sentences against heads that keep the first noun in both.

This module only counts: the weights come from the model in lesson.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.display.fmt import rounded
from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, chance_count, lead

TIE = 1e-4  # two weights closer than this: the head prefers neither (a tie, counted apart)

# (pair id, the two candidates, first noun first, ((case id, sentence, implied referent), (case id, ...))).
# The heavy sentence is chapter 16's 小明把书放在桌子上，因为它太重了 rendered in English.
COREF_PAIRS = (
    (
        "tired_wide",
        ("animal", "street"),
        (
            ("tired", "The animal didn't cross the street because it was too tired.", "animal"),
            ("wide", "The animal didn't cross the street because it was too wide.", "street"),
        ),
    ),
    (
        "heavy_sturdy",
        ("book", "table"),
        (
            ("heavy", "Xiaoming put the book on the table because it was too heavy.", "book"),
            ("sturdy", "Xiaoming put the book on the table because it was sturdy.", "table"),
        ),
    ),
    (
        "big_small",
        ("trophy", "suitcase"),
        (
            ("big", "The trophy didn't fit in the suitcase because it was too big.", "trophy"),
            ("small", "The trophy didn't fit in the suitcase because it was too small.", "suitcase"),
        ),
    ),
)


@dataclass
class CorefHead:
    layer: int
    head: int
    weights: dict[str, float]  # candidate -> weight from "it" (summed over the candidate's pieces), unrounded
    prefers: str | None  # the candidate with the larger weight; None: a tie (the two differ by less than TIE)


@dataclass
class CorefCase:
    id: str
    pair: str
    text: str
    tokens: list[str]
    pronoun_index: int
    candidates: list[str]  # the first noun first
    implied: str
    other: str  # the candidate not implied
    first_noun: str
    heads: list[CorefHead]  # every layer x head
    n_heads: int
    n_prefer_implied: int  # heads whose larger weight goes to the implied referent (ties apart)
    n_prefer_other: int
    n_ties: int  # heads whose two weights differ by less than TIE
    n_untied: int  # the heads that are counted: every head but the ties
    n_prefer_first: int  # heads preferring the first noun: what "always the first noun" predicts for every head
    chance_expected: float  # half of the untied heads: a head picking one of the two at random
    chance_needed: int  # the count chance reaches with probability at most 5%
    last_layer_prefer_implied: int  # heads of the last layer preferring the implied referent
    mean_weight: dict[str, float]  # candidate -> weight from "it", averaged over every head


@dataclass
class CorefPair:
    id: str
    cases: list[str]  # [the sentence meaning the first noun, the one meaning the second]
    candidates: list[str]
    untied: int  # heads with a preference in both sentences (the rest are tied in one of them)
    first_a: int  # of those, heads preferring the first noun in the first sentence
    first_b: int  # ... and in the second
    switched_with: int  # first noun, then second: they follow the meaning
    switched_against: int  # second noun, then first
    kept_first: int  # the first noun in both: "always the first noun"
    kept_second: int  # the second noun in both


def prefers(weights: dict[str, float], candidates) -> str | None:
    a, b = candidates
    if abs(weights[a] - weights[b]) < TIE:
        return None
    return a if weights[a] > weights[b] else b


def heads_of(reads, candidates) -> list[CorefHead]:
    """reads: (L, H, 2) weights from "it" to the two candidates -> one CorefHead per head, 1-based."""
    heads = []
    for layer, row in enumerate(reads.tolist()):
        for head, pair in enumerate(row):
            w = dict(zip(candidates, pair))
            heads.append(CorefHead(layer + 1, head + 1, w, prefers(w, candidates)))
    return heads


def count_case(case_id: str, pair: str, text: str, tokens, it: int, candidates, implied: str, reads) -> CorefCase:
    heads = heads_of(reads, candidates)
    n_layers = reads.shape[0]
    ties = sum(h.prefers is None for h in heads)
    other = next(c for c in candidates if c != implied)
    mean = {c: rounded(float(reads[:, :, i].mean()), 4) for i, c in enumerate(candidates)}
    return CorefCase(
        id=case_id,
        pair=pair,
        text=text,
        tokens=list(tokens),
        pronoun_index=it,
        candidates=list(candidates),
        implied=implied,
        other=other,
        first_noun=candidates[0],
        heads=heads,
        n_heads=len(heads),
        n_prefer_implied=sum(h.prefers == implied for h in heads),
        n_prefer_other=sum(h.prefers == other for h in heads),
        n_ties=ties,
        n_untied=len(heads) - ties,
        n_prefer_first=sum(h.prefers == candidates[0] for h in heads),
        chance_expected=(len(heads) - ties) / 2,
        chance_needed=chance_count(len(heads) - ties, 0.5),
        last_layer_prefer_implied=sum(h.prefers == implied for h in heads if h.layer == n_layers),
        mean_weight=mean,
    )


def count_pair(pair_id: str, a: CorefCase, b: CorefCase) -> CorefPair:
    """Head by head across the two sentences of a minimal pair; a head tied in either sentence is left out."""
    first, second = a.candidates
    both = [(x.prefers, y.prefers) for x, y in zip(a.heads, b.heads) if x.prefers and y.prefers]
    return CorefPair(
        id=pair_id,
        cases=[a.id, b.id],
        candidates=list(a.candidates),
        untied=len(both),
        first_a=sum(x == first for x, _ in both),
        first_b=sum(y == first for _, y in both),
        switched_with=both.count((first, second)),
        switched_against=both.count((second, first)),
        kept_first=both.count((first, first)),
        kept_second=both.count((second, second)),
    )


def sign_margin(n: int) -> int:
    """What k - (n - k) must reach for k of n to beat a fair coin at the 5% level: 2 * chance_count(n, ½) - n."""
    return 2 * chance_count(n, 0.5) - n


def claims_of(cases: list[CorefCase], pairs: list[CorefPair], lang: str) -> list[Claim]:
    def control(name: str, **fields) -> str:
        return t(f"real.control.{name}", lang, **fields)

    # A head count in one sentence against a coin is not a claim here: the heads of one model are not
    # independent, and a count for the meant word cannot tell meaning from word order. Its control is the
    # partner sentence, where the other noun is meant: the pair's claims below.
    by = {c.id: c for c in cases}
    claims = []
    for pair in pairs:
        a, b = (by[i] for i in pair.cases)
        switched = pair.switched_with + pair.switched_against
        compared = pair.switched_with + pair.kept_first
        fields = dict(
            a=a.id,
            b=b.id,
            first=a.first_noun,
            second=b.implied,
            fa=pair.first_a,
            fb=pair.first_b,
            with_=pair.switched_with,
            against=pair.switched_against,
            kept_first=pair.kept_first,
            kept_second=pair.kept_second,
            untied=pair.untied,
            flip_margin=sign_margin(switched),
            meaning_margin=sign_margin(compared),
        )
        values = {
            "first_a": pair.first_a,
            "first_b": pair.first_b,
            "switched_with": pair.switched_with,
            "switched_against": pair.switched_against,
            "kept_first": pair.kept_first,
            "kept_second": pair.kept_second,
            "untied": pair.untied,
        }
        claims.append(
            lead(
                f"flip_{pair.id}",
                t("real.coref.claim.flip", lang, **fields),
                lang,
                measured=pair.first_b,
                baseline=pair.first_a,
                lower=True,
                margin=sign_margin(switched),
                control=control("same_heads", a=a.id, first=a.first_noun),
                values=values,
            )
        )
        claims.append(
            lead(
                f"meaning_{pair.id}",
                t("real.coref.claim.meaning", lang, **fields),
                lang,
                measured=pair.switched_with,
                baseline=pair.kept_first,
                margin=sign_margin(compared),
                control=control("first_noun", first=a.first_noun),
                values=values,
            )
        )
    return claims


def finding(pairs: list[CorefPair], claims: list[Claim], lang: str) -> str:
    """What the heads follow, in one sentence built from the counts (it says no more than the claims show)."""
    total = dict(
        kept=sum(p.kept_first + p.kept_second for p in pairs),
        untied=sum(p.untied for p in pairs),
        first=sum(p.kept_first for p in pairs),
        second=sum(p.kept_second for p in pairs),
        with_=sum(p.switched_with for p in pairs),
        against=sum(p.switched_against for p in pairs),
        n=len(pairs),
    )
    status = {c.id: c.status for c in claims}
    moved = [p.id.replace("_", "/") for p in pairs if status[f"flip_{p.id}"] == "shown"]
    first = [p.id.replace("_", "/") for p in pairs if status[f"meaning_{p.id}"] == "contradicted"]
    sep = "、" if lang == "zh" else ", "
    text = t("real.coref.finding.counts", lang, **total)
    if moved:
        text += " " + t("real.coref.finding.moved", lang, pairs=sep.join(moved))
    else:
        text += " " + t("real.coref.finding.words", lang)
    if first:
        text += " " + t("real.coref.finding.first", lang, pairs=sep.join(first))
    return text
