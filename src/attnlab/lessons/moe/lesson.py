"""⑦ Mixture of experts: a top-k routed FFN (attnlab.nn.moe) trained beside two dense models and without its
balancing loss.

The experiment: four small GPTs (2 pre-LN blocks, d_model 32, context 8; lessons/moe/runs.py) trained with the same
seed, the same batches, the same steps and the same schedule on the built-in 静夜思 (or, from the CLI or Python, a
.txt or chinese-poetry .json file's first 4,000 characters):
  * moe: each FFN is n_experts experts of hidden width D_FF, top_k of them per token, a capacity factor, and the
    Switch balancing loss E · Σ f_i P_i added with weight `balance`;
  * moe_free: the same MoE with balance = 0;
  * dense_active: one FFN of width top_k · D_FF, so a token runs through as many parameters as in the MoE
    (the router's d_model · E a layer aside);
  * dense_total: one FFN of width n_experts · D_FF, as many parameters in all as the MoE (the routers and
    E − 1 output biases aside).
Held out: for a file, its last tenth, which no model trains on. For the built-in 静夜思 nothing can be held out (24
characters): the loss is measured on the poem itself, so it says how well each model has learned the poem by heart,
not how it generalizes. Routing is read on those same evaluation windows: tokens per expert, dead experts (fewer than
DEAD of the layer's choices) and the characters each expert takes. The sizes are counted exactly
(models/count.py: count_params and active_params, equal to sum(p.numel()) by test).

What the balancing loss does is a statement about a mechanism, so it is not read off one seed: the two MoEs are
trained on SEEDS seeds (seed, seed + 1, ...), and the claims count the seeds where balancing lowered the busiest
expert's share (or where fewer experts died with it) against a coin per seed, the chance of either when the loss
does nothing. The tables and the loss claims are the first seed's four models.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, beats_chance, chance_count, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import CHANCE, Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.moe import runs
from attnlab.train import progress
from attnlab.train.data import eval_windows

D_FF = 32  # each expert's hidden width (n_experts of them make dense_total's FFN)
DEAD = 0.02  # an expert that takes fewer than 2% of its layer's choices on the evaluation windows is dead
# nats a model's loss must lead another's by: far above the spread reseeding gives the four models' losses on
# 静夜思 at the defaults, so a lead this large is no reseeding's doing
LOSS_MARGIN = 0.05
# seeds the two MoEs are trained on for the balancing claims: with a coin per seed, 5 of 5 is the least count that
# chance reaches with probability under 5% (1/32); at the defaults seed 0 lowers the busiest share by 18 points and
# seeds 1 to 9 by 1 to 12, so one seed's size says little, the direction over seeds a lot
SEEDS = 5
# Each claim's strongest null (lessons/common/nulls.py). The loss claims compare with a twin trained alike that
# lacks just the effect (the experts' extra parameters; sparse activation); the balancing claims count seeds
# against a coin per seed, the seed being the independent unit (the layers of one model are not).
NULLS = {
    "moe_beats_active": Null("dense_active"),
    "total_beats_moe": Null("moe"),
    "balance_evens": CHANCE,
    "dead_without": CHANCE,
}

PARAMS = (
    Param(
        "corpus",
        "str",
        "",
        max_len=4096,
        cli_only=True,
        help="a .txt or chinese-poetry .json file (its last tenth held out); empty: the built-in 静夜思",
    ),
    Param("n_experts", "int", 4, 2, 8, step=1, help="experts per MoE layer"),
    Param("top_k", "int", 1, 1, 4, step=1, help="experts each token runs through (at most n_experts)"),
    Param(
        "capacity_factor",
        "float",
        1.25,
        0.25,
        4.0,
        step=0.25,
        help="an expert takes at most capacity_factor · tokens · top_k / n_experts tokens",
    ),
    Param("balance", "float", 0.01, 0.0, 1.0, step=0.01, help="weight of the load-balancing loss (0: none)"),
    Param("train_steps", "int", 60, 10, 300, step=10, help="training steps of each of the four models"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights and batches)"),
)
QUICK = {"train_steps": 30}
COURSE = ("chapter16", 50)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Run:
    name: str  # moe | moe_free | dense_active | dense_total
    label: str  # the name in the requested language
    d_ff: int  # the FFN's (or each expert's) hidden width
    n_experts: int  # 0: dense
    top_k: int
    balance: float
    total_params: int  # sum(p.numel()) of the built model
    active_params: int  # what one token runs through: the total less the (E - k) experts a token skips
    loss: float  # cross-entropy on the evaluation windows (held out for a file; the poem itself for 静夜思)
    loss_first: float  # the training batch's cross-entropy at the first and the last step
    loss_last: float
    routing: runs.Routing | None  # MoE only
    dead: int | None  # experts (over all layers) under DEAD of their layer's choices
    busiest: float | None  # the largest share one expert takes in any layer (1/E: perfectly even)


@dataclass
class ExpertRow:
    """One expert of one layer of one of the two MoEs, as the routing table lists it."""

    model: str
    label: str
    layer: int  # counted from 1
    expert: int  # counted from 1
    tokens: int  # choices routed to it on the evaluation windows
    share: float  # of its layer's choices
    dead: bool  # share < DEAD
    chars: str  # its most frequent characters: "月 12 (80%)", the percentage of that character's positions


@dataclass
class Pair:
    """The two MoEs, balanced and free, trained on one seed: what the balancing claims count."""

    seed: int
    moe_busiest: float  # the largest share one expert takes in any layer
    free_busiest: float
    moe_dead: int  # experts under DEAD of their layer's choices
    free_dead: int


@dataclass
class MoEResult(Shown):
    topic: str
    params: dict
    corpus: str
    held_out: bool  # False: the loss is measured on the text trained on (the built-in poem)
    n_eval_tokens: int
    vocab_size: int
    dead_below: float
    even_share: float  # 1 / n_experts
    runs: list[Run]
    experts: list[ExpertRow]  # both MoEs' experts, layer by layer
    pairs: list[Pair]  # the two MoEs on each of SEEDS seeds (the first: the seed the tables show)
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains four small GPTs (stoppable at every step)."""
    if p["top_k"] > p["n_experts"]:
        raise ParamError(
            f"top_k must be at most n_experts ({p['n_experts']}), got {p['top_k']}",
            "top_k",
            "explain.moe.error.top_k",
            k=p["top_k"],
            E=p["n_experts"],
        )
    return Cost(48.0, trains=True)


def dead_experts(share: list[list[float]]) -> int:
    """Experts under DEAD of their layer's choices, over all layers."""
    return sum(s < DEAD for layer in share for s in layer)


def measure(name: str, config, data: runs.Data, steps: int, seed: int, lang: str, bar: str = "", span=None) -> Run:
    """One model trained and measured; `bar` and `span`: the progress bar it counts on (its own by default)."""
    from attnlab.models.count import active_params, count_params

    model, losses = runs.train(config, data, steps, seed, bar or name, span)
    loss, routing = runs.evaluate(model, data)
    total = sum(p.numel() for p in model.parameters())  # the built model's, not a formula's
    moe = config.ffn == "moe"
    return Run(
        name,
        t(f"explain.moe.model.{name}", lang),
        config.hidden,
        config.n_experts if moe else 0,
        config.top_k if moe else 0,
        config.balance_loss,
        total,
        total - (count_params(config) - active_params(config)),
        loss,
        losses[0],
        losses[-1],
        routing,
        dead_experts(routing.share) if routing else None,
        max(max(layer) for layer in routing.share) if routing else None,
    )


def expert_rows(by: dict[str, Run]) -> list[ExpertRow]:
    rows = []
    for run in by.values():
        if run.routing is None:
            continue
        r = run.routing
        for layer, (counts, shares, chars) in enumerate(zip(r.tokens_per_expert, r.share, r.chars)):
            for e, (n, s, top) in enumerate(zip(counts, shares, chars)):
                text = " · ".join(f"{c['char']} {c['count']} ({100 * c['share']:.0f}%)" for c in top)
                rows.append(ExpertRow(run.name, run.label, layer + 1, e + 1, n, s, s < DEAD, text or "—"))
    return rows


def pair_of(by: dict[str, Run], seed: int) -> Pair:
    return Pair(seed, by["moe"].busiest, by["moe_free"].busiest, by["moe"].dead, by["moe_free"].dead)


def claims_of(by: dict[str, Run], lang: str, pairs: list[Pair] | None = None) -> list[Claim]:
    """Two identities that make the comparison fair (the dense twins lack exactly the routers, and dense_total the
    E - 1 output biases besides: parameters counted by sum(p.numel()) of the built models), two loss comparisons
    (MoE against dense_active, dense_total against MoE) and two on the balancing loss over the seeds of `pairs`
    (default: the one seed of `by`): it evens the load, experts die without it, each a count of the seeds where the
    two MoEs differ, against a coin per seed. A tie is 'not shown': identical runs (balance 0, so moe and moe_free
    are one model) differ on no seed and show neither."""

    def c(name: str) -> str:
        return t(f"explain.moe.control.{name}", lang)

    moe, free, active, total = by["moe"], by["moe_free"], by["dense_active"], by["dense_total"]
    pairs = pairs if pairs is not None else [pair_of(by, 0)]
    evened = [p.moe_busiest < p.free_busiest for p in pairs if p.moe_busiest != p.free_busiest]
    died = [p.free_dead > p.moe_dead for p in pairs if p.free_dead != p.moe_dead]
    busy, free_busy = (sum(x) / len(pairs) for x in zip(*((p.moe_busiest, p.free_busiest) for p in pairs)))
    L, d, E, k = runs.BASE["n_layers"], runs.BASE["d_model"], moe.n_experts, moe.top_k
    # what the dense twins lack: the routers, and the output biases of the experts merged into one wider FFN
    routers, biases, biases_k = L * d * E, L * (E - 1) * d, L * (k - 1) * d
    return [
        within(
            "equal_active",
            t(
                "explain.moe.claim.equal_active",
                lang,
                moe=moe.active_params,
                dense=active.total_params,
                routers=routers,
                biases=biases_k,
                off=100 * (routers + biases_k) / moe.active_params,
            ),
            lang,
            measured=moe.active_params - active.total_params,
            expected=routers + biases_k,
            tol=0,
            control=c("routers_biases"),
            values={"moe_active": moe.active_params, "dense_active": active.total_params},
        ),
        within(
            "equal_total",
            t(
                "explain.moe.claim.equal_total",
                lang,
                moe=moe.total_params,
                dense=total.total_params,
                routers=routers,
                biases=biases,
                off=100 * (routers + biases) / moe.total_params,
            ),
            lang,
            measured=moe.total_params - total.total_params,
            expected=routers + biases,
            tol=0,
            control=c("routers_biases"),
            values={"moe_total": moe.total_params, "dense_total": total.total_params},
        ),
        lead(
            "moe_beats_active",
            t("explain.moe.claim.moe_beats_active", lang, moe=moe.loss, dense=active.loss, margin=LOSS_MARGIN),
            lang,
            measured=moe.loss,
            baseline=active.loss,
            margin=LOSS_MARGIN,
            lower=True,
            control=c("dense_active"),
            values={"moe": moe.loss, "dense_active": active.loss},
            hint=t("explain.moe.hint.loss", lang),
        ),
        lead(
            "total_beats_moe",
            t("explain.moe.claim.total_beats_moe", lang, dense=total.loss, moe=moe.loss, margin=LOSS_MARGIN),
            lang,
            measured=total.loss,
            baseline=moe.loss,
            margin=LOSS_MARGIN,
            lower=True,
            control=c("moe"),
            values={"dense_total": total.loss, "moe": moe.loss},
            hint=t("explain.moe.hint.loss", lang),
        ),
        coin_count(
            "balance_evens",
            evened,
            len(pairs),
            lang,
            w=moe.balance,
            busy=100 * busy,
            free=100 * free_busy,
            even=100 / moe.n_experts,
            values={"moe": busy, "moe_free": free_busy, "by_seed": [dataclasses.asdict(p) for p in pairs]},
        ),
        coin_count(
            "dead_without",
            died,
            len(pairs),
            lang,
            free=sum(p.free_dead for p in pairs),
            moe=sum(p.moe_dead for p in pairs),
            e=sum(len(layer) for layer in free.routing.share),
            dead=100 * DEAD,
            values={"by_seed": [dataclasses.asdict(p) for p in pairs]},
            hint=t("explain.moe.hint.dead", lang),
        ),
    ]


def coin_count(cid: str, wins: list[bool], seeds: int, lang: str, *, values: dict, hint=None, **fields) -> Claim:
    """Of the seeds where the two MoEs differ, those that went the claim's way, against a coin per seed."""
    k, n = sum(wins), len(wins)
    return beats_chance(
        cid,
        t(
            f"explain.moe.claim.{cid}",
            lang,
            k=k,
            n=n,
            seeds=seeds,
            expected=n / 2,
            needed=chance_count(n, 0.5),
            **fields,
        ),
        lang,
        k=k,
        n=n,
        p=0.5,
        control=t("explain.moe.control.coin", lang),
        values={"seeds": seeds, **values},
        hint=hint,
    )


@lesson
def moe(
    corpus: str = "",
    n_experts: int = 4,
    top_k: int = 1,
    capacity_factor: float = 1.25,
    balance: float = 0.01,
    train_steps: int = 60,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> MoEResult:
    """Four models trained alike; their losses, the routing of the two MoEs, and the claims."""
    p = check(
        PARAMS,
        dict(
            corpus=corpus,
            n_experts=n_experts,
            top_k=top_k,
            capacity_factor=capacity_factor,
            balance=balance,
            train_steps=train_steps,
            seed=seed,
        ),
    )
    cost(p)
    try:
        data = runs.corpus_data(p["corpus"].strip() or "jingyesi")
    except ValueError as err:
        raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=p["corpus"][:80]) from None
    configs = runs.configs(data, p["n_experts"], p["top_k"], p["capacity_factor"], p["balance"], D_FF)
    steps, more = p["train_steps"], 2 * (SEEDS - 1) * p["train_steps"]
    for name in runs.MODELS:
        progress.report(name, 0, steps)  # every model listed from the start
    progress.report("seeds", 0, more)
    by = {name: measure(name, configs[name], data, steps, p["seed"], lang) for name in runs.MODELS}
    pairs = [pair_of(by, p["seed"])]
    for i in range(1, SEEDS):  # the two MoEs again on more seeds: the balancing claims count seeds
        done = 2 * (i - 1) * steps
        pair = {
            name: measure(name, configs[name], data, steps, p["seed"] + i, lang, "seeds", (done + j * steps, more))
            for j, name in enumerate(("moe", "moe_free"))
        }
        pairs.append(pair_of(pair, p["seed"] + i))
    T = runs.BASE["context_length"]
    n_eval = int(eval_windows(data.val, T)[0].numel())
    name = "静夜思" if not data.held_out else data.name.rsplit("/", 1)[-1]
    note = t("explain.moe.note.held_out" if data.held_out else "explain.moe.note.poem", lang, corpus=name, n=n_eval)
    return MoEResult(
        "moe",
        p,
        name,
        data.held_out,
        n_eval,
        data.vocab_size,
        DEAD,
        1 / p["n_experts"],
        [by[n] for n in runs.MODELS],
        expert_rows(by),
        pairs,
        note,
        claims_of(by, lang, pairs),
    )
