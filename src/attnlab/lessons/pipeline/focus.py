"""Step ③ checked: where does one character look? The text's example says 月 attends more to 明.

For every layer and head of a model, the attention weights from the query character (月) to every character
it can see (床 前 明 月), which one gets the largest weight, and how many heads give it to the text's
expected character (明). A tiny model that memorizes one line needs no such pattern: any weights that let
the last layer predict the next character will do, and the measurements say which it found. Optionally the
same count over freshly trained models of seeds 0 .. n-1.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, beats_chance, chance_count, lead
from attnlab.lessons.common.result import Shown
from attnlab.lessons.pipeline.lesson import attention_step

DEFAULT_QUERY, DEFAULT_EXPECTED = "月", "明"
LEADS = 0.05  # a head "looks at" a character when that weight leads the row's next largest by 5 points
COUNT_WORK_LIMIT = 200_000_000  # parameters × steps × seeds the count may train (静夜思's defaults: ~1.6e8)


def count_work(n_params: int, steps: int, seeds: int) -> int:
    """How much training a count over `seeds` seeds is, in parameter-steps (compared with COUNT_WORK_LIMIT)."""
    return n_params * steps * seeds


@dataclass
class HeadFocus:
    layer: int  # 0-based
    head: int
    weights: list[float]  # from the query to tokens 0 .. query_index (a causal row: the rest is 0)
    top: int  # index of the largest weight
    top_token: str
    top_weight: float
    expected_weight: float | None  # the weight on the text's expected token, if it is in view


@dataclass
class SeedFocus:
    """The same question for models trained from seeds 0 .. seeds-1 with the same settings."""

    seeds: int
    heads: int  # heads per model (layers × heads)
    seeds_with_expected: int  # models where at least one head gives the expected token the largest weight
    heads_with_expected: int  # over all seeds and heads


@dataclass
class Focus(Shown):
    text: str
    tokens: list[str]  # the tokens the query can see, itself last
    query: str
    query_index: int
    expected: str | None
    expected_index: int | None  # None if the expected token is not before the query
    uniform: float  # 1 / (query_index + 1): the weight of a head that looks everywhere alike
    heads: list[HeadFocus]
    expected_top: int  # heads of this model giving the expected token the largest weight
    over_seeds: SeedFocus | None
    claims: list[Claim]


def _heads(model, tokenizer, text: str, query: str, expected: str | None):
    att = attention_step(model, tokenizer, text)
    if query not in att.tokens:
        raise ValueError(f"the query {query!r} is not a token of the text {text!r}")
    i = att.tokens.index(query)
    seen = att.tokens[: i + 1]
    e = seen.index(expected) if expected and expected in seen[:-1] else None
    heads = []
    for m in att.maps:
        row = m.weights[i][: i + 1]  # (i+1,) what the query reads
        top = max(range(i + 1), key=row.__getitem__)
        heads.append(
            HeadFocus(
                layer=m.layer,
                head=m.head,
                weights=row,
                top=top,
                top_token=seen[top],
                top_weight=row[top],
                expected_weight=row[e] if e is not None else None,
            )
        )
    return seen, i, e, heads


def focus(
    model,
    tokenizer,
    text: str,
    query: str = DEFAULT_QUERY,
    expected: str | None = DEFAULT_EXPECTED,
    *,
    over_seeds: SeedFocus | None = None,
    lang: str = "zh",
) -> Focus:
    """Where `query` (its first occurrence in `text`) looks, in every layer and head of `model`."""
    seen, i, e, heads = _heads(model, tokenizer, text, query, expected)
    hits = sum(h.top == e for h in heads) if e is not None else 0
    return Focus(
        text=text,
        tokens=seen,
        query=query,
        query_index=i,
        expected=expected if e is not None else None,
        expected_index=e,
        uniform=1 / (i + 1),
        heads=heads,
        expected_top=hits,
        over_seeds=over_seeds,
        claims=_claims(query, seen, e, heads, hits, over_seeds, lang),
    )


_SEED_CACHE: dict[tuple, SeedFocus] = {}


def focus_over_seeds(
    corpus: str,
    settings: dict,
    text: str,
    query: str = DEFAULT_QUERY,
    expected: str = DEFAULT_EXPECTED,
    seeds: int = 10,
) -> SeedFocus:
    """Train a fresh run (attnlab.train.new_run(corpus, **settings, seed=s)) for s = 0 .. seeds-1 and count the
    heads in which `expected` gets `query`'s largest weight. Each run trains its whole budget (a second or
    more per seed); the counts are cached per settings, since they never change."""
    from attnlab.train import new_run

    if not 1 <= seeds <= 20:
        raise ValueError(f"seeds must be from 1 to 20, got {seeds}")
    settings = {k: v for k, v in settings.items() if k != "seed" and v is not None}
    key = (corpus, tuple(sorted(settings.items())), text, query, expected, seeds)
    if key in _SEED_CACHE:
        return _SEED_CACHE[key]
    with_expected = hits = per_model = 0
    for seed in range(seeds):
        run = new_run(corpus, **settings, seed=seed, device="cpu")
        work = count_work(sum(p.numel() for p in run.model.parameters()), run.config.steps, seeds)
        if work > COUNT_WORK_LIMIT:
            raise ValueError(
                f"counting over {seeds} seeds would train {work:.2g} parameter-steps, more than this "
                f"lab allows ({COUNT_WORK_LIMIT:.2g}); use fewer seeds, steps or a smaller model"
            )
        run.trainer.run()
        _, _, e, heads = _heads(run.model, run.tokenizer, text, query, expected)
        n = sum(h.top == e for h in heads) if e is not None else 0
        per_model, hits, with_expected = len(heads), hits + n, with_expected + (n > 0)
    if len(_SEED_CACHE) > 32:
        _SEED_CACHE.clear()
    _SEED_CACHE[key] = SeedFocus(
        seeds=seeds, heads=per_model, seeds_with_expected=with_expected, heads_with_expected=hits
    )
    return _SEED_CACHE[key]


def _claims(query, seen, e, heads, hits, over_seeds, lang) -> list[Claim]:
    """Each head's largest weight against its next largest (a lead of LEADS); the heads that give the expected
    character the largest weight against chance: a head choosing at random among the c characters the query can
    see (itself included) picks it with probability 1/c."""
    c = len(seen)
    claims = []
    for h in heads:
        second = max((w for j, w in enumerate(h.weights) if j != h.top), default=0.0)
        nxt = max((j for j in range(c) if j != h.top), key=h.weights.__getitem__, default=h.top)
        claims.append(
            lead(
                f"top_{h.layer + 1}_{h.head + 1}",
                t(
                    "pipeline.focus.claim.top",
                    lang,
                    query=query,
                    layer=h.layer + 1,
                    head=h.head + 1,
                    token=h.top_token,
                    index=h.top + 1,
                    w=f"{h.top_weight:.4f}",
                    next=seen[nxt],
                    second=f"{second:.4f}",
                    m=f"{LEADS:.2f}",
                ),
                lang,
                measured=h.top_weight,
                baseline=second,
                margin=LEADS,
                control=t("pipeline.focus.control.runner_up", lang),
                values={"top": h.top_weight, "next": second, "uniform": 1 / c},
            )
        )
    if e is not None:
        n = len(heads)
        claims.append(
            beats_chance(
                "expected_heads",
                t(
                    "pipeline.focus.claim.expected",
                    lang,
                    query=query,
                    expected=seen[e],
                    k=hits,
                    n=n,
                    c=c,
                    chance=f"{n / c:.3g}",
                    need=chance_count(n, 1 / c),
                ),
                lang,
                k=hits,
                n=n,
                p=1 / c,
                control=t("pipeline.focus.control.chance", lang, c=c),
            )
        )
    if over_seeds is not None and e is not None:
        s = over_seeds
        hn = s.seeds * s.heads
        claims.append(
            beats_chance(
                "expected_seeds",
                t(
                    "pipeline.focus.claim.seeds",
                    lang,
                    query=query,
                    expected=seen[e],
                    k=s.seeds_with_expected,
                    n=s.seeds,
                    last=s.seeds - 1,
                    hk=s.heads_with_expected,
                    hn=hn,
                    c=c,
                    chance=f"{hn / c:.3g}",
                    need=chance_count(hn, 1 / c),
                ),
                lang,
                k=s.heads_with_expected,
                n=hn,
                p=1 / c,
                control=t("pipeline.focus.control.chance", lang, c=c),
                values={"models": s.seeds_with_expected, "seeds": s.seeds},
            )
        )
    return claims
