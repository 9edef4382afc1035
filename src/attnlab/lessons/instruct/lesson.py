"""⑦ Use it: instruction tuning. A base model of poems follows no request; fine-tuned on requests made
from the poems themselves (藏头: the four line-initial characters), in a chat template with role tokens and the loss
on the answer only, it writes a quatrain whose lines start with heads it never saw. The control that isolates
"learned to follow" is fine-tuned on the same answers with each request taken from another poem: the same tokens
and steps, no link from request to answer. LoRA fine-tunes the same way through rank-r updates of the attention matrices.

The experiment (runs.py): for each of `seeds` seeds a base model, then three fine-tunings of it (SFT, the shuffled
control, LoRA); on the held-out poems (never trained on, base or fine-tuning) each model is asked for their heads
(the base model with the request as plain text) and its answer scored: a 五绝 in form whose four lines start with
the four heads, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from attnlab.i18n import t
from attnlab.lessons.common import poems as poems_
from attnlab.lessons.common.claims import Claim, lead, weakest
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.instruct import runs
from attnlab.train import progress

MODELS = ("base", "shuffled", "lora", "sft")
TUNED = ("sft", "shuffled", "lora")
MARGIN = 0.3  # the bar: SFT's exact following leads the stronger of its two controls by 0.3, in every seed
BYTES_FULL = 4 + 4 + 8  # a trained float32 parameter: its weight, its gradient, AdamW's two moments (the memory topic)
BYTES_FROZEN = 4  # a frozen one: its weight only
# follows: the control fine-tuned on the same answers with the requests shuffled across them, in the run
NULLS = {"follows": Null("shuffled")}

PARAMS = (
    Param(
        "corpus",
        "str",
        "",
        max_len=4096,
        help="a poem file (.json or .txt; its 五绝) for the base model; empty: the lab's own",
    ),
    Param("request", "str", "", max_len=4, help="four heads of your own for a 藏头诗 (empty: a held-out poem's)"),
    Param("base_steps", "int", 100, 0, 2000, step=10, help="training steps of each base model (0: untrained)"),
    Param("steps", "int", 250, 0, 2000, step=10, help="fine-tuning steps of each tuned model (0: the base itself)"),
    Param("seeds", "int", 3, 1, 5, step=1, help="how many base models are trained and tuned (seeds 0, 1, ...)"),
)
QUICK = {"base_steps": 20, "steps": 20, "seeds": 1}
COURSE = ("chapter16", 71)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Example:
    request: str
    template: str  # the chat template as the tuned models read it, role tokens written out
    plain: str  # the same request as the base model reads it
    answers: dict  # model -> what the first seed's model wrote
    exact: dict  # model -> whether it follows the request exactly
    heads_right: dict  # model -> lines starting with their head


@dataclass
class InstructResult(Shown):
    topic: str
    params: dict
    corpus: str
    n_poems: int
    n_train: int
    n_test: int
    models: list[str]
    following: dict  # model -> share of held-out requests followed exactly, mean over the seeds
    following_by_seed: dict  # model -> [per seed] (LoRA: the first seed only)
    heads_right: dict  # model -> share of lines starting with their head, mean over the seeds
    in_form: dict  # model -> share of answers that are a 五绝 in form
    chance_head: float  # a line's head right by chance: 1 / the characters a line can start with
    trainable: dict  # sft | lora -> parameters trained
    total: int  # parameters of the model
    memory: dict  # sft | lora -> bytes of weights, gradients and AdamW's moments while fine-tuning
    example: Example
    note: str
    claims: list[Claim] = field(default_factory=list)


def _request_error(request: str, why: str) -> ParamError:
    return ParamError(
        f"request must be four characters of the poems ({why}), got {request!r}",
        "request",
        "explain.instruct.error.request",
    )


def cost(p: dict) -> Cost:
    """Reads the corpus (a checked regular file), then trains `seeds` base models and three tunings of each."""
    poems_.check(p["corpus"])
    if len(p["request"].strip()) not in (0, 4):
        raise _request_error(p["request"], "four, one a line")
    return Cost(96.0, trains=True)


@lru_cache(maxsize=4)
def trained(corpus: str, base_steps: int, steps: int, seeds: int) -> tuple:
    """(vocab, [{model: the trained model} per seed]), trained once for both languages."""
    poems = list(poems_.poems_of(corpus))
    train, _ = poems_.split(poems)
    vocab = runs.vocabulary(poems)
    for name in ("base", *TUNED):
        progress.report(name, 0, (base_steps if name == "base" else steps) * (1 if name == "lora" else seeds))
    out = []
    for seed in range(seeds):

        def step(name: str, total: int, seed=seed, n=seeds):
            return lambda s: progress.report(name, seed * total + s, n * total)

        base = runs.pretrain(vocab, train, base_steps, seed, on_step=step("base", base_steps))
        models = {"base": base}
        for name in TUNED if seed == 0 else ("sft", "shuffled"):  # LoRA on the first seed: time for a first visit
            kind = {"shuffled": name == "shuffled", "lora": name == "lora"}
            models[name] = runs.finetune(
                base, vocab, train, steps, seed, on_step=step(name, steps, n=1 if name == "lora" else seeds), **kind
            )
        out.append(models)
    return vocab, out


def scored(model, name: str, vocab, requests: list[str]) -> tuple[list[str], list[runs.Following]]:
    prompts = [runs.plain(r) if name == "base" else runs.prompt(r) for r in requests]
    answers = runs.write(model, vocab, prompts)
    return answers, [runs.follows(a, r) for a, r in zip(answers, requests)]


def claims_of(r: InstructResult, lang: str) -> list[Claim]:
    sft = r.following_by_seed["sft"]
    stronger = [max(b, s) for b, s in zip(r.following_by_seed["base"], r.following_by_seed["shuffled"])]
    lead_by = weakest([a - b for a, b in zip(sft, stronger)])
    values = {"sft": r.following["sft"], "base": r.following["base"], "shuffled": r.following["shuffled"]}
    return [
        lead(
            "follows",
            t("explain.instruct.claim.follows", lang, margin=MARGIN, seeds=len(sft), lead=lead_by, **values),
            lang,
            measured=lead_by,
            baseline=0.0,
            margin=MARGIN,
            control=t("explain.instruct.control.follows", lang),
            values={**values, "weakest_lead": lead_by, "seeds": len(sft)},
            hint=t("explain.instruct.hint.steps", lang),
        )
    ]


@lesson
def instruct(
    corpus: str = "",
    request: str = "",
    base_steps: int = 100,
    steps: int = 250,
    seeds: int = 3,
    *,
    lang: str = "zh",
) -> InstructResult:
    """A base model of poems, fine-tuned to follow 藏头 requests: how often each model follows held-out ones."""
    p = check(PARAMS, dict(corpus=corpus, request=request, base_steps=base_steps, steps=steps, seeds=seeds))
    cost(p)
    p["corpus"] = p["corpus"].strip()
    poems = list(poems_.poems_of(p["corpus"]))
    train, test = poems_.split(poems)
    mine = p["request"].strip() or runs.heads(test[0])
    known = set(runs.vocabulary(poems)) - set("，。" + runs.ASK + runs.USER + runs.ASSISTANT + runs.END)
    bad = "".join(dict.fromkeys(ch for ch in mine if ch not in known))
    if bad:
        raise _request_error(mine, f"not {bad!r}: the poems' line-initial characters are {''.join(sorted(known))[:60]}")
    vocab, per_seed = trained(p["corpus"], p["base_steps"], p["steps"], p["seeds"])
    starts = sorted({line[0] for q in train for line in q.lines})
    requests = [runs.heads(q) for q in test]
    by_seed: dict[str, list[float]] = {m: [] for m in MODELS}
    heads_right: dict[str, list[float]] = {m: [] for m in MODELS}
    in_form: dict[str, list[float]] = {m: [] for m in MODELS}
    for models in per_seed:
        for name in (m for m in MODELS if m in models):
            _, marks = scored(models[name], name, vocab, requests)
            by_seed[name].append(sum(f.exact for f in marks) / len(marks))
            heads_right[name].append(sum(f.heads_right for f in marks) / (4 * len(marks)))
            in_form[name].append(sum(f.in_form for f in marks) / len(marks))
    first = per_seed[0]
    said = {name: scored(first[name], name, vocab, [mine]) for name in MODELS}
    example = Example(
        mine,
        runs.shown(runs.prompt(mine)),
        runs.plain(mine),
        {name: said[name][0][0] for name in MODELS},
        {name: said[name][1][0].exact for name in MODELS},
        {name: said[name][1][0].heads_right for name in MODELS},
    )
    total = sum(q.numel() for q in first["base"].parameters())
    lora = sum(q.numel() for q in first["lora"].parameters() if q.requires_grad)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    r = InstructResult(
        "instruct",
        p,
        p["corpus"] or t("explain.instruct.builtin", lang),
        len(poems),
        len(train),
        len(test),
        list(MODELS),
        {m: mean(v) for m, v in by_seed.items()},
        by_seed,
        {m: mean(v) for m, v in heads_right.items()},
        {m: mean(v) for m, v in in_form.items()},
        1 / len(starts),
        {"sft": total, "lora": lora},
        total,
        {"sft": BYTES_FULL * total, "lora": BYTES_FROZEN * total + BYTES_FULL * lora},
        example,
        t(
            "explain.instruct.note",
            lang,
            seeds=p["seeds"],
            base_steps=p["base_steps"],
            steps=p["steps"],
            n=total,
            rank=runs.LORA_RANK,
            drills=runs.DRILL_SHARE,
            batch=runs.BATCH,
        ),
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "InstructResult", "instruct", "cost"]
