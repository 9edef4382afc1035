"""Importance is measured, not read off the weights (the course's "weights ≠ importance", measured).

The experiment: one small pre-LN GPT (lessons/patching/model.py: context 8, d_model 32, n_layers blocks of n_heads
heads) trained on the built-in 静夜思 (or, from the CLI or Python, a .txt or chinese-poetry .json file's first
4,000 characters); beside it the same model untrained (the same seed, no step), shown, never the only control.
One prediction, prompt → answer (床前明月 → 光), is read three ways:
  * ablation: each head's output removed (zero, its mean over the text's other windows, or resampled from them;
    attnlab.inspect.head_effects) and the nats of log p(answer) lost;
  * activation patching: the corrupted prompt (床望明月: 前 → 望, as in 举头望明月) run with one site taken from the
    clean run, and the share of the log-p gap it restores (attnlab.inspect.restoration), per residual stream
    (layer × position) and per head;
  * the weights: each head's attention from the answer position to the changed (key) position, and attention
    rollout (attnlab.inspect.rollout).
Then over every window of the text and every earlier position in it (lessons/patching/measure.py), Spearman's rank
correlation between what the weights say and what was measured, against windows paired with other windows, and the
effects measured twice (on two halves of the replacements) for what a reading that is importance reaches. Whether
the answer is carried by the changed character and by a few heads is counted over seeds, each model beside its twin
trained on the same characters shuffled (lessons/patching/seeds.py). Nothing is held out: the model has learned the
text by heart, and the question is only which of its parts carry the answer.
What is claimed from it, against which control, lives in lessons/patching/claims.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import CHANCE, Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Matrix, Shown, Vector, tolist
from attnlab.lessons.patching import measure, seeds
from attnlab.lessons.patching import model as runs
from attnlab.lessons.patching.claims import claims_of
from attnlab.train import progress

PARAMS = (
    Param(
        "corpus",
        "str",
        "",
        max_len=4096,
        cli_only=True,
        help="a .txt or chinese-poetry .json file (its first 4,000 characters); empty: the built-in 静夜思",
    ),
    Param("prompt", "str", "床前明月", max_len=runs.CONTEXT, help="the clean prompt (2 to 8 characters)"),
    Param(
        "corrupt",
        "str",
        "床望明月",
        max_len=runs.CONTEXT,
        help="the corrupted prompt: as long, some characters changed",
    ),
    Param(
        "target", "str", "光", max_len=1, help="the answer whose log-probability is measured (empty: the model's top)"
    ),
    Param("n_layers", "int", 2, 1, 3, step=1, help="blocks of the GPT"),
    Param("n_heads", "int", 4, 1, 8, step=1, help="heads per block (must divide d_model = 32)"),
    Param("train_steps", "int", 100, 0, 400, step=10, help="training steps (0: the model stays untrained)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights and batches)"),
)
QUICK = {"n_layers": 1, "n_heads": 2, "train_steps": 20, "seed": 1}
COURSE = ("inside", 40)  # the course map's section (web/course_map.py) and place in it
HEAVY = True
# Each claim's strongest null (lessons/common/nulls.py), all computed in the run itself: the seed count's control is
# at every seed the model trained alike on the characters shuffled, a coin per seed; a correlation's is whole windows
# paired with other windows; "weights ≠ importance" is checked against importance measured again.
NULLS = {
    "corruption_matters": CHANCE,
    "few_heads": CHANCE,
    "one_head_restores": CHANCE,
    "head_weight_tracks": Null("windows"),
    "token_attention_tracks": Null("windows"),
    "token_rollout_tracks": Null("windows"),
    "weights_not_importance": Null("remeasured"),
}


@dataclass
class Reading:
    """One model (trained or untrained) read on the one prediction."""

    lp_clean: float  # log p(answer | prompt)
    lp_corrupt: float  # log p(answer | corrupted prompt)
    gap: float  # lp_clean - lp_corrupt: what the corruption costs
    drop_zero: Matrix  # (L, H): nats of log p(answer) lost when the head's output is set to 0 (= -Δ log p)
    drop_mean: Matrix  # (L, H): ... set to its mean over the text's other windows
    drop_resample: Matrix  # (L, H): ... taken from the other windows, averaged over them
    restore_resid: Matrix | None  # (L + 1, T): share of the gap restored by one clean residual stream (None: no gap)
    restore_heads: Matrix | None  # (L, H): share restored by one head's clean output
    restored_nats: Matrix | None  # (L, H): the same in nats (share · gap)
    weight_key: Matrix  # (L, H): attention from the answer position to the key position
    weight_prev: Matrix  # (L, H): ... to the previous token
    rollout: Vector  # (T,): rollout from the answer position to each position
    attention: Vector  # (T,): the last layer's attention from the answer position, mean over heads
    importance: list  # (T,): measured |Δ log p(answer)| when the character there is replaced (last: None)
    top_lead: float  # nats: the largest |mean-ablation loss| of a head minus the median head's (0: all alike)
    best_restored: float  # the most nats one head restores: its share of the gap times the gap's size (0: no gap)


@dataclass
class HeadRow:
    """One head: what its weights say beside what was measured."""

    layer: int  # counted from 1
    head: int  # counted from 1
    weight_key: float
    weight_prev: float
    drop_zero: float
    drop_mean: float
    drop_resample: float
    restored: float | None  # share of the gap its clean output restores
    rank_weight: int  # 1 = the largest weight to the key position
    rank_effect: int  # 1 = the largest |restored| (or |mean-ablation loss| without a gap)


@dataclass
class TokenRow:
    """One position of the prompt: what attention and rollout say about it beside its measured importance."""

    position: int  # counted from 1
    char: str  # "前→望" where the corruption changed it
    attention: float  # the last layer's attention from the answer position, mean over heads
    rollout: float  # rollout from the answer position
    importance: float | None  # |Δ log p(answer)| when the character is replaced (the answer position: None)


@dataclass
class Correlation:
    """Spearman's ρ between a reading of the weights and a measured effect, over pairs, against shuffled pairings."""

    name: str  # head_weight | token_attention | token_rollout
    label: str  # the reading against the measurement, in the requested language
    n: int  # pairs
    rho: float | None  # None: a side is constant
    chance_mean: float | None  # ρ's mean over SHUFFLES random pairings of whole windows with other windows
    chance_q95: float | None  # its 95th percentile: what a measured ρ must clear


@dataclass
class PatchingResult(Shown):
    topic: str
    params: dict
    corpus: str
    vocab_size: int
    prompt: str
    corrupt: str
    answer: str
    key: int  # the key position, counted from 1: the first the corruption changed (the previous token if none)
    changed: bool  # whether clean and corrupt differ
    no_gap: bool  # the trained model gives the answer the same log p after both: nothing to restore, no patching
    positions: list[str]  # column labels: each position's character, "前→望" where the corruption changed it
    resid_rows: list[str]  # row labels of restore_resid: the embedding, then each block
    loss_first: float | None  # the training batch's cross-entropy at the first and last step (None: untrained)
    loss_last: float | None
    trained: Reading
    untrained: Reading
    heads: list[HeadRow]
    tokens: list[TokenRow]
    head_pairs: Matrix  # [[weight to c, |effect|], ...]: every (example, position c, layer, head) correlated
    token_pairs: Matrix  # [[last layer's attention to c, rollout to c, |effect|], ...]: every (example, c)
    correlations: list[Correlation]
    n_examples: int  # windows of the text the correlations run over
    remeasured: float | None  # ρ between the heads' effects on the even and on the odd replacements (None: undefined)
    seeds: list[seeds.SeedRow]  # the seed count: each seed's model of the text beside its shuffled twin
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains one small GPT (stoppable at every step), then a few thousand forward passes of a few tokens and the
    correlations' chance levels."""
    if runs.D_MODEL % p["n_heads"]:
        raise ParamError(
            f"n_heads must divide d_model = {runs.D_MODEL}, got {p['n_heads']}",
            "n_heads",
            "explain.error.divisible",
            width="d_model",
            d=runs.D_MODEL,
            h=p["n_heads"],
        )
    prompt, corrupt = p["prompt"].strip(), p["corrupt"].strip()
    if len(prompt) < 2:
        raise ParamError(
            f"prompt must have at least 2 characters, got {len(prompt)}",
            "prompt",
            "explain.patching.error.short",
            n=len(prompt),
        )
    if len(corrupt) != len(prompt):
        raise ParamError(
            f"corrupt must have as many characters as prompt ({len(prompt)}: {prompt!r}), got "
            f"{len(corrupt)} ({corrupt!r})",
            "corrupt",
            "explain.patching.error.length",
            n=len(prompt),
            prompt=prompt,
            m=len(corrupt),
            corrupt=corrupt,
        )
    # the largest arrays: the chance level's SHUFFLES pairings of every (window, layer, head, position) reading,
    # two copies of them at once (measure.shuffled), beside a fixed 24 MiB for the model and its passes
    pairs = measure.MAX_EXAMPLES * p["n_layers"] * p["n_heads"] * runs.CONTEXT
    return Cost.of_bytes(2 * measure.SHUFFLES * pairs * 8, trains=True, extra_mb=24.0)


def encode(data: runs.Data, text: str, name: str) -> torch.Tensor:
    missing = "".join(sorted(set(data.tokenizer.unknown(text))))
    if missing:
        raise ParamError(
            f"{name} must be characters of the corpus {data.name}; not in it: {missing}",
            name,
            "explain.error.not_in_corpus",
            missing=missing,
            corpus=data.name,
        )
    return torch.tensor(data.tokenizer.encode(text))


def reading(m: measure.Main) -> Reading:
    mean = m.drop["mean"].abs().flatten()  # (L·H,)
    top_lead = float(mean.max() - mean.quantile(0.5))
    nats = None if m.heads is None else m.heads * m.gap
    opt = lambda x: None if x is None else tolist(x)  # noqa: E731
    return Reading(
        m.lp_clean,
        m.lp_corrupt,
        m.gap,
        tolist(m.drop["zero"]),
        tolist(m.drop["mean"]),
        tolist(m.drop["resample"]),
        opt(m.resid),
        opt(m.heads),
        opt(nats),
        tolist(m.weight_key),
        tolist(m.weight_prev),
        tolist(m.rollout),
        tolist(m.attention),
        m.importance,
        top_lead,
        0.0 if m.heads is None else float(m.heads.max() * abs(m.gap)),  # the share of the gap's size
    )


def order(values: list[float]) -> list[int]:
    """Each value's rank, 1 = the largest."""
    rank = np.empty(len(values), dtype=int)
    rank[np.argsort(-np.asarray(values), kind="stable")] = np.arange(1, len(values) + 1)
    return rank.tolist()


def head_rows(r: Reading) -> list[HeadRow]:
    L, H = len(r.weight_key), len(r.weight_key[0])
    cells = [(i, h) for i in range(L) for h in range(H)]
    effect = [abs(r.restore_heads[i][h]) if r.restore_heads else abs(r.drop_mean[i][h]) for i, h in cells]
    rw, re = order([r.weight_key[i][h] for i, h in cells]), order(effect)
    return [
        HeadRow(
            i + 1,
            h + 1,
            r.weight_key[i][h],
            r.weight_prev[i][h],
            r.drop_zero[i][h],
            r.drop_mean[i][h],
            r.drop_resample[i][h],
            r.restore_heads[i][h] if r.restore_heads else None,
            rw[k],
            re[k],
        )
        for k, (i, h) in enumerate(cells)
    ]


def token_rows(r: Reading, positions: list[str]) -> list[TokenRow]:
    return [TokenRow(i + 1, ch, r.attention[i], r.rollout[i], r.importance[i]) for i, ch in enumerate(positions)]


@lru_cache(maxsize=8)
def example_pairs(corpus: str, n_layers: int, n_heads: int, steps: int, seed: int, n: int):
    """The windows of n + 1 characters the correlations run over, and their pairs (they do not depend on the
    prompt, only on its length: a new corruption reuses them)."""
    data = runs.corpus_data(corpus)
    trained = runs.models(corpus, n_layers, n_heads, steps, seed)[0]
    examples = measure.windows(data.ids, n + 1, measure.MAX_EXAMPLES)  # (E, n + 1): a prompt and its answer
    return examples, measure.pairs(trained, examples, data.tokenizer.vocab_size)


def correlations(pairs: measure.Pairs, seed: int, lang: str) -> list[Correlation]:
    """Each reading against its measurement, chance from whole windows paired with other windows."""
    out = []
    for name, a, b in (
        ("head_weight", pairs.head_weight, pairs.head_effect),
        ("token_attention", pairs.token_attention, pairs.token_effect),
        ("token_rollout", pairs.token_rollout, pairs.token_effect),
    ):
        chance = measure.shuffled(a, b, seed, pairs.units)
        out.append(
            Correlation(
                name,
                t(f"explain.patching.corr.{name}", lang),
                int(np.size(a)),
                measure.spearman(a, b),
                *(chance or (None, None)),
            )
        )
    return out


@lesson
def patching(
    corpus: str = "",
    prompt: str = "床前明月",
    corrupt: str = "床望明月",
    target: str = "光",
    n_layers: int = 2,
    n_heads: int = 4,
    train_steps: int = 100,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> PatchingResult:
    """Train (or fetch) the model; read the prediction by ablation, patching, weights and rollout; correlate; claim."""
    p = check(
        PARAMS,
        dict(
            corpus=corpus,
            prompt=prompt,
            corrupt=corrupt,
            target=target,
            n_layers=n_layers,
            n_heads=n_heads,
            train_steps=train_steps,
            seed=seed,
        ),
    )
    cost(p)
    try:
        data = runs.corpus_data(p["corpus"].strip())
    except ValueError as err:
        raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=p["corpus"][:80]) from None
    clean_text, corrupt_text = p["prompt"].strip(), p["corrupt"].strip()
    clean, bad = encode(data, clean_text, "prompt"), encode(data, corrupt_text, "corrupt")
    if p["target"].strip():
        answer = int(encode(data, p["target"].strip(), "target")[0])
    n = len(clean)
    reference = [w for w in measure.windows(data.ids, n, measure.MAX_REFERENCE) if not torch.equal(w, clean)]
    if not reference:
        raise ParamError(
            f"the corpus {data.name} has no window of {n} characters other than the prompt",
            "prompt",
            "explain.patching.error.no_reference",
            n=n,
            corpus=data.name,
        )
    reference = torch.stack(reference)  # (W, n)
    total = {"trained": p["train_steps"], "seeds": seeds.N_SEEDS, "measure": measure.MAX_EXAMPLES}
    for name in runs.NAMES:
        progress.report(name, 0, total[name])  # listed from the start
    key_args = (p["corpus"].strip(), p["n_layers"], p["n_heads"], p["train_steps"], p["seed"])
    trained, untrained, losses = runs.models(*key_args)
    progress.report("trained", p["train_steps"], p["train_steps"])  # done (also when the models came from the cache)
    if not p["target"].strip():
        from attnlab.inspect import run_with

        answer = int(run_with(trained, clean)[0][0, -1].argmax())
    diff = (clean != bad).nonzero().flatten().tolist()
    key = diff[0] if diff else max(0, n - 2)
    V = data.tokenizer.vocab_size
    r_tr = reading(measure.main(trained, clean, bad, answer, key, reference, V))
    r_un = reading(measure.main(untrained, clean, bad, answer, key, reference, V))
    seed_rows = seeds.count(key_args, trained, clean, bad, answer, reference)
    examples, pairs = example_pairs(*key_args, n)
    progress.report("measure", len(examples), len(examples))
    corr = correlations(pairs, p["seed"], lang)
    head_pairs = np.stack([pairs.head_weight.ravel(), pairs.head_effect.ravel()], 1)  # (P·L·H, 2)
    token_pairs = np.stack([pairs.token_attention, pairs.token_rollout, pairs.token_effect], 1)  # (P, 3)
    positions = [a if a == b else f"{a}→{b}" for a, b in zip(clean_text, corrupt_text)]
    resid_rows = [t("explain.patching.embedding", lang)] + [str(i + 1) for i in range(p["n_layers"])]
    note = t(
        "explain.patching.note" if losses else "explain.patching.note_untrained",
        lang,
        corpus=data.name,
        steps=p["train_steps"],
        e=len(examples),
        loss=losses[-1] if losses else 0.0,
    )
    return PatchingResult(
        "patching",
        p,
        data.name,
        V,
        clean_text,
        corrupt_text,
        data.tokenizer.decode([answer]),
        key + 1,
        bool(diff),
        r_tr.restore_resid is None,
        positions,
        resid_rows,
        losses[0] if losses else None,
        losses[-1] if losses else None,
        r_tr,
        r_un,
        head_rows(r_tr),
        token_rows(r_tr, positions),
        tolist(head_pairs),
        tolist(token_pairs),
        corr,
        len(examples),
        pairs.remeasured(),
        seed_rows,
        note,
        claims_of(seed_rows, corr, pairs.remeasured(), lang),
    )
