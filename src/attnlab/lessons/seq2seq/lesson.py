"""From seq2seq to the Transformer, trained (lecture 06 §2): the bottleneck, Bahdanau's alignment, cross-attention.

Four translators learn the same generated task (digits -> Chinese numerals, attnlab.lessons.seq2seq.task)
on the same batches: an LSTM seq2seq that hands the decoder only the encoder's last state, the same with
Bahdanau's additive attention, the library's Transformer encoder-decoder, and a decoder-only GPT of the same
parameter count that reads "source, then target" as one sequence (chapter 01: decoder-only models do seq2seq too). Measured on held-out strings:
exact-match accuracy at each source length (including lengths longer than any trained on), and how well each
attention map aligns (the share of target tokens whose largest weight sits on the source digit they
translate). The numbers are averaged over `n_seeds` seeds (seed, seed + 1, ...); the typed example and its maps
come from the first seed's models. With `shuffle`, the models train on targets whose characters are shuffled
within each string (the same numerals, no order: the null of "α learned the alignment") and are measured on the
real task, as always. Trained models are cached per (task, steps, seed) and their measurements per
n_test too, so a second visit, a new typed input, or a seed already trained for another setting costs only the
forward passes.

The claims, comparisons that can fail, are made in attnlab.lessons.seq2seq.claims.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F

from attnlab.lessons.common.claims import Claim
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson, seeded
from attnlab.lessons.common.result import Shown
from attnlab.lessons.seq2seq import task as task_
from attnlab.lessons.seq2seq.checks import alpha_check, final_state_check
from attnlab.lessons.seq2seq.claims import claims_of
from attnlab.lessons.seq2seq.models import KINDS, build
from attnlab.train import progress

TRAIN_LENGTHS = tuple(range(2, 9))  # source lengths the models train on
LENGTHS = tuple(range(2, 11))  # lengths they are tested on: 9 and 10 are longer than any training string
MAX_TEXT = 12
SIZE = 32  # LSTM hidden size = Transformer d_model
BATCH = 64
CONTEXT = MAX_TEXT + 2
LR = {
    "no_attention": 1e-2,
    "bahdanau": 1e-2,
    "transformer": 5e-3,
    "decoder_only": 5e-3,
}  # Adam's peak rates, tuned once for this task

PARAMS = (
    Param("task", "choice", "digits", choices=task_.TASKS, help="the translation task (its word order)"),
    Param("text", "str", "20261130", max_len=MAX_TEXT, help=f"digits to translate and align (1 to {MAX_TEXT})"),
    Param("train_steps", "int", 400, 0, 1000, step=10, help="training steps of each model (0: untrained models)"),
    Param(
        "shuffle",
        "bool",
        False,
        help="train on targets with their characters shuffled (the null: no word order to align); tested on the real task",
    ),
    Param("n_test", "int", 50, 5, 200, step=5, help="held-out test strings per length"),
    Param("n_seeds", "int", 2, 1, 5, step=1, help="seeds trained and averaged: seed, seed + 1, ..."),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="the first seed (its models give the example and the maps)"),
)
QUICK = {"train_steps": 100, "n_test": 5, "n_seeds": 1, "text": "2026"}
COURSE = ("lecture06", 40)  # the course map's section (web/course_map.py) and place in it
HEAVY = True
# Each claim's strongest null (lessons/common/nulls.py); final_only and alpha are identities. The bottleneck's is the
# LSTM without attention trained alike, the fall's the same fall with Bahdanau's attention (exact match gets harder
# with length for any model), the encoder-decoder's lead the decoder-only GPT of equal size trained alike, all in this
# run; what the maps learned is checked against models trained alike on the same numerals in shuffled order, where
# there is no alignment to learn.
NULLS = {
    "bottleneck": Null("no_attention"),
    "bottleneck_cross": Null("no_attention"),
    "falls": Null("with_attention"),
    "encoder_decoder_leads": Null("decoder_only"),
    "alignment": Null("shuffled", shuffle=True),
    "alignment_cross": Null("shuffled", shuffle=True),
}


@dataclass
class Head:
    layer: int
    head: int
    alignment_score: float  # over the held-out strings of the trained lengths
    weights: list[list[float]]  # the example's (target x source) weights


@dataclass
class Example:
    source: str  # the digits
    target: str  # the reference translation
    held_out: bool  # a test-side string (no training batch could contain it)
    source_tokens: list[str]
    target_tokens: list[str]
    truth: list[int]  # truth[i]: the source position target token i translates
    prediction: dict  # model -> its greedy translation
    correct: dict  # model -> prediction == target
    bahdanau: list[list[float]]  # alpha (target x source)
    transformer: list[list[float]]  # cross-attention averaged over heads (target x source)
    heads: list[list[list[float]]]  # each head's weights, in the order of Seq2SeqResult.heads
    alignment_score: dict  # model -> this example's score (no_attention: None, it has no weights)


@dataclass
class Seq2SeqResult(Shown):
    topic: str
    params: dict
    lengths: list[int]
    train_lengths: list[int]
    longer: list[bool]  # longer than any training string
    seeds: list[int]  # the seeds trained; every number below but the example's is their mean
    accuracy: dict  # model -> exact-match accuracy per length (held-out strings), mean over the seeds
    accuracy_by_seed: dict  # model -> [per seed: exact-match accuracy per length]
    token_accuracy: dict  # model -> share of target tokens right per length, mean over the seeds
    alignment_score: dict  # model -> share of target tokens whose largest weight is on the right source digit
    alignment_by_seed: dict  # model -> [per seed: that share]
    alignment_by_length: dict  # model -> [per seed: [per trained length: that share]]
    chance_alignment: float  # the same score for weights spread uniformly (ties broken at random): mean 1/n
    heads: list[Head]  # the first seed's cross-attention heads
    final_loss: dict  # model -> last training batch's loss, mean over the seeds (0 steps: an untrained batch's)
    n_params: dict  # model -> its parameter count (the decoder-only GPT's matches the encoder-decoder's to 1%)
    example: Example  # through the first seed's models
    suggestions: list[str]  # held-out strings of a few lengths, for the learner to type
    checks: dict  # the hand computations behind the claims (the first seed's models)
    claims: list[Claim]


def _text_error(text: str) -> ParamError:
    return ParamError(
        f"text must be 1 to {MAX_TEXT} digits 0-9, got {text!r}",
        "text",
        "explain.seq2seq.error.text",
        max_len=MAX_TEXT,
        got=repr(text),
    )


def greedy(model, src: torch.Tensor, n: int) -> torch.Tensor:
    """Translate src (B, n) token by token, each step reading the model's own previous outputs -> (B, n + 1)."""
    tgt = torch.full((src.shape[0], 1), task_.BOS)
    for _ in range(n + 1):
        logits, _ = model(src, tgt)  # (B, t, V)
        tgt = torch.cat([tgt, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return tgt[:, 1:]


def maps_of(model, src: torch.Tensor, tgt_in: torch.Tensor) -> list[torch.Tensor]:
    """Teacher-forced attention maps, one (B, H, n, n) per layer, rows = the n target digits (EOS row dropped)."""
    _, maps = model(src, tgt_in)
    return [m[:, :, : src.shape[1], :] for m in maps]


def score(weights: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """weights (..., n_tgt, n_src), truth (n_tgt,) -> share of rows whose largest weight is at truth (float tensor)."""
    return (weights.argmax(-1) == truth).float().mean()


_here = threading.local()  # (steps already done, steps in all) of the seeds a lesson call trains, for the progress


def _report(kind: str, step: int, steps: int) -> None:
    """progress.report across the seeds: a model's bar runs over every seed's steps."""
    done, total = getattr(_here, "span", (0, steps))
    progress.report(kind, done + step, total)


def translation_loss(model, x: tuple[torch.Tensor, torch.Tensor], tgt_out: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each target token given the source and the target tokens before it (teacher forcing)."""
    logits, _ = model(*x)  # (B, n+1, V)
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten())


def shuffled_targets(tgt_in: torch.Tensor, tgt_out: torch.Tensor, g: torch.Generator):
    """The same numerals in a random order within each string, BOS and EOS kept: (B, n+1) each."""
    ys = tgt_out[:, :-1]  # (B, n)
    order = torch.argsort(torch.rand(ys.shape, generator=g), dim=1)
    ys = torch.gather(ys, 1, order)
    return torch.cat([tgt_in[:, :1], ys], 1), torch.cat([ys, tgt_out[:, -1:]], 1)


def train_one(kind: str, task: str, steps: int, seed: int, shuffle: bool = False) -> tuple[torch.nn.Module, float]:
    """Train one model on the task's training strings with the shared loop's optimizer and schedule (with
    `shuffle`, their targets' characters shuffled; the source strings are the same batches).
    At 0 steps the model stays untrained and the loss is its loss on one training batch."""
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    with seeded(seed):
        model = build(kind, task_.SRC_VOCAB, task_.TGT_VOCAB, CONTEXT, SIZE)
    cfg = TrainConfig(
        steps=max(1, steps),
        batch_size=BATCH,
        lr=LR[kind],
        warmup_steps=min(20, steps // 5),
        weight_decay=0.0,
        min_lr_ratio=0.2,
        seed=seed,
    )

    order = torch.Generator().manual_seed(20_000 + seed)  # the shuffles' own: the batches stay those of the real run

    def batch(g: torch.Generator):  # the same batches for all four models
        n = TRAIN_LENGTHS[int(torch.randint(len(TRAIN_LENGTHS), (1,), generator=g))]
        src, tgt_in, tgt_out = task_.encode(task, task_.sample(n, BATCH, g, test=False))  # (B, n), (B, n+1), (B, n+1)
        if shuffle:
            tgt_in, tgt_out = shuffled_targets(tgt_in, tgt_out, order)
        return (src, tgt_in), tgt_out

    if steps == 0:  # untrained: the first batch's loss, no update
        model.train()
        with torch.no_grad():
            loss = translation_loss(model, *batch(torch.Generator().manual_seed(cfg.seed)))
        return model.eval(), float(loss)
    losses = train_small(
        model,
        cfg,
        batch,
        translation_loss,  # the page shows each update done (0: listed before)
        on_step=lambda step: _report(kind, step, steps) if step else None,
    )
    return model.eval(), losses[-1]


@dataclass
class Trained:
    models: dict
    final_loss: dict
    accuracy: dict
    token_accuracy: dict
    alignment: dict  # "bahdanau", "transformer" -> score; "heads" -> [(layer, head, score)]
    chance: float


_lock = threading.Lock()


@lru_cache(maxsize=8)
def trained_models(task: str, steps: int, seed: int, shuffle: bool = False) -> tuple[dict, dict]:
    """The four models trained on the same batches, and their last losses; cached (a new n_test reuses them)."""
    models, final_loss = {}, {}
    for kind in KINDS:
        _report(kind, 0, steps)  # every model listed from the start
    for kind in KINDS:
        models[kind], final_loss[kind] = train_one(kind, task, steps, seed, shuffle)
    return models, final_loss


@lru_cache(maxsize=8)
def trained(task: str, steps: int, seed: int, n_test: int, shuffle: bool = False) -> Trained:
    """The four trained models measured on held-out strings of the real task; cached, so a second visit is
    instant."""
    models, final_loss = trained_models(task, steps, seed, shuffle)
    accuracy = {k: [] for k in KINDS}
    token_accuracy = {k: [] for k in KINDS}
    aligned = {"bahdanau": [], "transformer": [], "heads": []}
    chance = []
    g = torch.Generator().manual_seed(10_000 + seed)  # the test strings: never a training string (the split)
    with torch.no_grad():
        for n in LENGTHS:
            src, tgt_in, tgt_out = task_.encode(task, task_.sample(n, n_test, g, test=True))
            truth = torch.tensor(task_.align(task, n))  # (n,)
            for kind, model in models.items():
                pred = greedy(model, src, n)  # (B, n+1)
                accuracy[kind].append(float((pred == tgt_out).all(1).float().mean()))
                token_accuracy[kind].append(float((pred == tgt_out).float().mean()))
            if n in TRAIN_LENGTHS:  # alignment is scored where the models were trained
                chance.append(1 / n)
                aligned["bahdanau"].append(float(score(maps_of(models["bahdanau"], src, tgt_in)[0][:, 0], truth)))
                cross = maps_of(models["transformer"], src, tgt_in)  # [(B, H, n, n)] per layer
                aligned["transformer"].append(float(score(cross[-1].mean(1), truth)))
                aligned["heads"].append([float(score(m[:, h], truth)) for m in cross for h in range(m.shape[1])])
    heads = [sum(col) / len(col) for col in zip(*aligned["heads"])]
    alignment = {
        "bahdanau": sum(aligned["bahdanau"]) / len(aligned["bahdanau"]),
        "transformer": sum(aligned["transformer"]) / len(aligned["transformer"]),
        "heads": heads,
        "bahdanau_by_length": aligned["bahdanau"],  # per trained length
        "transformer_by_length": aligned["transformer"],
    }
    return Trained(models, final_loss, accuracy, token_accuracy, alignment, sum(chance) / len(chance))


def example_of(tr: Trained, task: str, text: str) -> tuple[Example, dict]:
    """The typed digits through the four trained models: translations, attention maps and their scores."""
    n = len(text)
    src, tgt_in, tgt_out = task_.encode(task, [text])
    truth = torch.tensor(task_.align(task, n))
    with torch.no_grad():
        prediction = {k: task_.decode_ids(greedy(m, src, n)[0].tolist()) for k, m in tr.models.items()}
        alpha = maps_of(tr.models["bahdanau"], src, tgt_in)[0][0, 0]  # (n, n)
        cross = maps_of(tr.models["transformer"], src, tgt_in)  # [(1, H, n, n)] per layer
        mean = cross[-1][0].mean(0)  # (n, n)
        heads = [m[0, h] for m in cross for h in range(m.shape[1])]
        checks = final_state_check(tr.models["no_attention"], src, tgt_in) | alpha_check(
            tr.models["bahdanau"], src, tgt_in
        )
    target = task_.translate(task, text)
    example = Example(
        source=text,
        target=target,
        held_out=task_.is_test(text),
        source_tokens=list(text),
        target_tokens=list(target),
        truth=truth.tolist(),
        prediction=prediction,
        correct={k: v == target for k, v in prediction.items()},
        bahdanau=alpha.tolist(),
        transformer=mean.tolist(),
        heads=[h.tolist() for h in heads],
        alignment_score={
            "no_attention": None,
            "bahdanau": float(score(alpha, truth)),
            "transformer": float(score(mean, truth)),
        },
    )
    return example, checks


@lru_cache(maxsize=64)
def typed_example(
    task: str, steps: int, seed: int, n_test: int, text: str, shuffle: bool = False
) -> tuple[Example, dict]:
    """example_of, cached too: the page, its figure and the API, asked the same, show the very same numbers."""
    return example_of(trained(task, steps, seed, n_test, shuffle), task, text)


def _mean(rows: list) -> list:
    return [sum(col) / len(col) for col in zip(*rows)]


def cost(p: dict) -> Cost:
    """Trains four small translators per seed (stoppable at every step); a bad text is refused before."""
    typed = p["text"].strip()
    if not (1 <= len(typed) <= MAX_TEXT and all(ch in "0123456789" for ch in typed)):
        raise _text_error(p["text"])
    return Cost(32.0, trains=p["train_steps"] > 0)


@lesson
def seq2seq(
    task: str = "digits",
    text: str = "20261130",
    train_steps: int = 400,
    shuffle: bool = False,
    n_test: int = 50,
    n_seeds: int = 2,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> Seq2SeqResult:
    """Train the four translators for each seed (cached) and measure the bottleneck and the alignments."""
    p = check(
        PARAMS,
        dict(task=task, text=text, train_steps=train_steps, shuffle=shuffle, n_test=n_test, n_seeds=n_seeds, seed=seed),
    )
    cost(p)
    p["text"] = p["text"].strip()
    steps, order = p["train_steps"], [p["seed"] + i for i in range(p["n_seeds"])]
    with _lock:  # one computation at a time: two visits with the same settings share one cached answer
        runs = []
        for i, s in enumerate(order):
            _here.span = (i * steps, len(order) * steps)
            try:
                runs.append(trained(p["task"], steps, s, p["n_test"], p["shuffle"]))
            finally:
                del _here.span
        example, checks = typed_example(p["task"], steps, order[0], p["n_test"], p["text"], p["shuffle"])
    tr = runs[0]
    heads = [
        Head(layer, head, score_, w)
        for (layer, head), score_, w in zip(_head_ids(tr), tr.alignment["heads"], example.heads)
    ]
    by_seed = {k: [run.accuracy[k] for run in runs] for k in KINDS}
    align_by_seed = {
        "no_attention": None,
        **{k: [run.alignment[k] for run in runs] for k in ("bahdanau", "transformer")},
    }
    result = Seq2SeqResult(
        "seq2seq",
        p,
        list(LENGTHS),
        list(TRAIN_LENGTHS),
        [n > TRAIN_LENGTHS[-1] for n in LENGTHS],
        order,
        {k: _mean(v) for k, v in by_seed.items()},
        by_seed,
        {k: _mean([run.token_accuracy[k] for run in runs]) for k in KINDS},
        {k: None if v is None else sum(v) / len(v) for k, v in align_by_seed.items()},
        align_by_seed,
        {k: [run.alignment[k + "_by_length"] for run in runs] for k in ("bahdanau", "transformer")},
        tr.chance,
        heads,
        {k: sum(run.final_loss[k] for run in runs) / len(runs) for k in KINDS},
        {k: sum(p.numel() for p in m.parameters()) for k, m in tr.models.items()},
        example,
        suggestions(),
        checks,
        [],
    )
    result.claims = claims_of(result, lang)
    return result


def suggestions() -> list[str]:
    """One held-out string of each of a few lengths (the same for every task and seed)."""
    return [task_.sample(n, 1, torch.Generator().manual_seed(4242 + n), test=True)[0] for n in (3, 5, 7, 8, 10)]


def _head_ids(tr: Trained) -> list[tuple[int, int]]:
    dec = tr.models["transformer"].model.decoder
    return [(i, h) for i, block in enumerate(dec) for h in range(block.cross_attn.n_heads)]


__all__ = [
    "seq2seq",
    "Seq2SeqResult",
    "PARAMS",
    "LENGTHS",
    "TRAIN_LENGTHS",
    "trained",
    "trained_models",
    "typed_example",
]
