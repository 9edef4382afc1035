"""⑦ Use it: prompting. A model learns a mapping from the examples in its prompt, without a single update: a 2-layer
attention-only GPT trained only to continue repeated random tokens is shown k pairs of a fresh random mapping
("3→g, 5→b, …, 0→?") and asked for one key. That in-context learning is induction: the head that looks where the
query key came before and copies what followed (Olsson et al. 2022).

The experiment (runs.py): the 2-layer model and a 1-layer twin, trained alike on the copying task, each read on
N_PROMPTS prompts per number of shots 0 .. `shots`; beside them the same 2-layer model on the same prompts with
each demonstration's value moved to another key (deranged labels), and with the last layer's head that attends most
from the query to the demonstrated value zeroed (attnlab.inspect). The ceiling: k/K + (K − k)/K², what copying a
demonstrated value and guessing otherwise gets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.prompting import runs
from attnlab.train import progress

# a claim's lead over its control at the most shots: five standard errors of a difference of two shares over
# N_PROMPTS prompts (at most 0.032 each); over chance the bar, 0.3
MARGIN = 0.15
CHANCE_MARGIN = 0.3
# a last-layer head counts as induction-like when its attention from the query onto the demonstrated value passes
# this (uniform attention over a prompt of 8 examples gives 1/17 = 0.06)
INDUCTION_LIKE = 0.3
KEY_NAMES = "0123456789ABCDEF"  # how the page writes key i
VALUE_NAMES = "abcdefghijklmnop"  # and value j
MODELS = ("two_layer", "deranged", "one_layer", "ablated")
# Every claim's strongest null (lessons/common/nulls.py): both models trained alike on each copying sequence's
# tokens shuffled: the same tokens as often, nothing to copy, so no head learns to look where a token came before.
NULLS = {name: Null("shuffled", shuffle=True) for name in ("reads_examples", "follows_labels", "needs_two_layers")}
NULLS["head_carries"] = Null("shuffled", shuffle=True)

PARAMS = (
    Param(
        "steps", "int", 1000, 0, 2000, step=10, help="training steps of each model on the copying task (0: untrained)"
    ),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights, batches and prompts)"),
    Param("keys", "int", 10, 4, 16, step=1, help="keys of each prompt's mapping: chance is 1/keys"),
    Param("shots", "int", 8, 1, 15, step=1, help="the most demonstrations in a prompt (at most keys - 1)"),
    Param(
        "shuffle", "bool", False, help="train on each copying sequence's tokens shuffled (the null: nothing to copy)"
    ),
)
QUICK = {"steps": 20}
COURSE = ("chapter16", 70)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Example:
    """One prompt at the most shots whose query was demonstrated, as the page writes it."""

    pairs: list[list[str]]  # [[key, value], ...]
    query: str
    answer: str  # σ(query)
    two_layer: str  # the 2-layer model's answer
    one_layer: str
    deranged_pairs: list[list[str]]
    deranged: str  # the 2-layer model's answer with the labels deranged


@dataclass
class PromptingResult(Shown):
    topic: str
    params: dict
    shots: list[int]  # 0 .. the most
    accuracy: dict  # model -> [share right per number of shots]; also "ceiling" and "chance"
    chance: float
    n_prompts: int
    heads: list[int]  # the last layer's induction-like heads, zeroed together for "ablated" (1-based)
    fallback: bool  # no head reached INDUCTION_LIKE: the one that attends most was zeroed
    alone: list[float]  # at the most shots, the share right with each last-layer head zeroed on its own
    label_attention: list[float]  # per head of the last layer: attention from the query onto the demonstrated value
    n_params: dict  # two_layer, one_layer
    example: Example
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains two small models (stoppable at every step), then reads N_PROMPTS prompts per number of shots."""
    if p["shots"] >= p["keys"]:
        raise ParamError(
            f"shots must be less than keys ({p['keys']}): each demonstration shows another key; got {p['shots']}",
            "shots",
            "explain.prompting.error.shots",
            keys=p["keys"],
        )
    # the largest pass: N_PROMPTS prompts of 2·shots + 1 tokens, logits over VOCAB and both heads' weights recorded
    tokens = runs.N_PROMPTS * (2 * p["shots"] + 1)
    return Cost.of_bytes(
        4 * tokens * (runs.VOCAB + 40 * runs.D_MODEL + 4 * (2 * p["shots"] + 1)), trains=True, extra_mb=20.0
    )


def zero_heads(heads: list[int]):
    """An edit of head_outputs (attnlab.inspect) that sets these heads' outputs to 0."""
    from attnlab.inspect import zero_head

    def edit(x):
        for h in heads:
            x = zero_head(h)(x)
        return x

    return edit


@lesson
@lru_cache(maxsize=4)
def trained(steps: int, seed: int, shuffle: bool):
    """(the 2-layer model, the 1-layer twin), trained once for both languages."""
    for name in ("two_layer", "one_layer"):
        progress.report(name, 0, steps)  # both listed from the start
    return runs.train("two_layer", 2, steps, seed, shuffle), runs.train("one_layer", 1, steps, seed, shuffle)


def example(two, one, keys: int, shots: int, seed: int) -> Example:
    real, wrong = runs.prompts(seed, keys, shots), runs.prompts(seed, keys, shots, deranged=True)
    i = int(real.shown.nonzero()[0, 0]) if bool(real.shown.any()) else 0

    def pairs(x) -> list[list[str]]:
        row = x[i].tolist()
        return [[KEY_NAMES[row[j]], VALUE_NAMES[row[j + 1] - keys]] for j in range(0, 2 * shots, 2)]

    said = lambda model, p: VALUE_NAMES[int(runs.answers(model, p, keys)[i])]  # noqa: E731
    return Example(
        pairs(real.x),
        KEY_NAMES[int(real.x[i, -1])],
        VALUE_NAMES[int(real.answer[i])],
        said(two, real),
        said(one, real),
        pairs(wrong.x),
        said(two, wrong),
    )


def chance_margin(ceiling: float, chance: float) -> float:
    """The lead over chance that counts as reading the examples: CHANCE_MARGIN, or half of what the examples allow
    above chance when that is less (with 3 examples of 10 keys the ceiling is only 0.27 above chance)."""
    return min(CHANCE_MARGIN, (ceiling - chance) / 2)


def claims_of(r: PromptingResult, lang: str) -> list[Claim]:
    acc, k = r.accuracy, r.shots[-1]
    over_chance = chance_margin(acc["ceiling"][-1], r.chance)
    two, wrong, one, cut = acc["two_layer"][-1], acc["deranged"][-1], acc["one_layer"][-1], acc["ablated"][-1]

    def c(name: str) -> str:
        return t(f"explain.prompting.control.{name}", lang)

    return [
        lead(
            "reads_examples",
            t(
                "explain.prompting.claim.reads",
                lang,
                k=k,
                acc=two,
                chance=r.chance,
                margin=over_chance,
                ceiling=acc["ceiling"][-1],
            ),
            lang,
            measured=two,
            baseline=r.chance,
            margin=over_chance,
            control=c("chance"),
            values={"two_layer": two, "chance": r.chance, "ceiling": acc["ceiling"][-1]},
            hint=t("explain.prompting.hint.steps", lang),
        ),
        lead(
            "follows_labels",
            t("explain.prompting.claim.labels", lang, k=k, acc=two, wrong=wrong, margin=MARGIN),
            lang,
            measured=two,
            baseline=wrong,
            margin=MARGIN,
            control=c("deranged"),
            values={"two_layer": two, "deranged": wrong},
        ),
        lead(
            "needs_two_layers",
            t("explain.prompting.claim.two_layers", lang, k=k, two=two, one=one, margin=MARGIN),
            lang,
            measured=two,
            baseline=one,
            margin=MARGIN,
            control=c("one_layer"),
            values={"two_layer": two, "one_layer": one},
        ),
        lead(
            "head_carries",
            t(
                "explain.prompting.claim.head" + ("_fallback" if r.fallback else ""),
                lang,
                k=k,
                alone=", ".join(f"H{h + 1} {a:.3f}" for h, a in enumerate(r.alone)),
                heads=", ".join(f"H{h}" for h in r.heads),
                acc=two,
                cut=cut,
                margin=MARGIN,
            ),
            lang,
            measured=two,
            baseline=cut,
            margin=MARGIN,
            control=c("ablated"),
            values={"two_layer": two, "ablated": cut, "heads": r.heads},
        ),
    ]


def prompting(
    steps: int = 1000, seed: int = 0, keys: int = 10, shots: int = 8, shuffle: bool = False, *, lang: str = "zh"
) -> PromptingResult:
    """In-context learning by shots: the 2-layer model, its deranged-label and head-ablated readings, the 1-layer twin."""
    p = check(PARAMS, dict(steps=steps, seed=seed, keys=keys, shots=shots, shuffle=shuffle))
    cost(p)
    two, one = trained(p["steps"], p["seed"], p["shuffle"])
    K, top = p["keys"], p["shots"]
    attention = runs.label_attention(two, runs.prompts(p["seed"], K, top), K)
    heads = [h for h, a in enumerate(attention) if a >= INDUCTION_LIKE]
    fallback = not heads  # none looks at the value: the one that attends most
    heads = heads or [max(range(len(attention)), key=attention.__getitem__)]
    site = f"layers.{two.config.n_layers - 1}.attn.head_outputs"
    cut = {site: zero_heads(heads)}
    last = runs.prompts(p["seed"], K, top)
    alone = [runs.accuracy(two, last, K, {site: zero_heads([h])}) for h in range(len(attention))]
    acc: dict[str, list[float]] = {name: [] for name in (*MODELS, "ceiling", "chance")}
    shots_ = list(range(top + 1))
    for k in shots_:
        real = runs.prompts(p["seed"], K, k)
        acc["two_layer"].append(runs.accuracy(two, real, K))
        acc["deranged"].append(runs.accuracy(two, runs.prompts(p["seed"], K, k, deranged=True), K))
        acc["one_layer"].append(runs.accuracy(one, real, K))
        acc["ablated"].append(runs.accuracy(two, real, K, cut))
        acc["ceiling"].append(runs.ceiling(k, K))
        acc["chance"].append(1 / K)
    n_params = {
        "two_layer": sum(q.numel() for q in two.parameters()),
        "one_layer": sum(q.numel() for q in one.parameters()),
    }
    note = t(
        "explain.prompting.note" + ("_shuffled" if p["shuffle"] else ""),
        lang,
        two=n_params["two_layer"],
        one=n_params["one_layer"],
        steps=p["steps"],
        batch=runs.BATCH,
        lr=runs.LR,
        n=runs.N_PROMPTS,
    )
    r = PromptingResult(
        "prompting",
        p,
        shots_,
        acc,
        1 / K,
        runs.N_PROMPTS,
        [h + 1 for h in heads],
        fallback,
        alone,
        attention,
        n_params,
        example(two, one, K, top, p["seed"]),
        note,
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "PromptingResult", "prompting", "cost"]
