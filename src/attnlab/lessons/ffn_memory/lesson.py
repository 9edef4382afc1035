"""⑪ What the FFN remembers: a small GPT's FFN neurons read as key-value memories (Geva et al. 2021), then knocked out.

The experiment: a pre-LN GPT (`layers` blocks, d_model, d_ff = 4 · d_model, ReLU, context 16) trained on the
built-in 静夜思 or (CLI and Python) a .txt or chinese-poetry .json file's first 20,000 characters (data.py); then
read on the read positions (a file's held-out last tenth, at most 600 positions evenly spaced; for 静夜思 the poem
itself: 24 characters leave nothing to hold out, so there the keys are memorized positions, not generalization).
  * Each neuron that fires on at least K (`top`) read positions is ALIVE; its KEY is its top-K positions, its VALUE
    the tokens W_U (γ ⊙ centered v_j) promotes, v_j row j of W_2 (memory.py states the approximation).
  * Readable, two counts, each beside its chance level: the key's contexts SHARE a next token (at least half of the
    K; chance: K positions with the same current tokens drawn at random, a neuron that reads the current token and
    nothing else: the current token alone often decides the next one in real text), and the value MATCHES the key
    (the value's first token is that most common next token; chance: one neuron's value against another's key).
    The same counts on the untrained model (same seed, no step) stand beside them.
  * Knockouts (attnlab.inspect.knock_out): each alive neuron alone, the drop of log p of the model's own next token
    (against the text's frequency-weighted average token, so that flattening a prediction scores nothing: memory.py)
    where it fires against where it does not; and at every read position the `knock` neurons that fire most there
    against as many random neurons of the same layer.
Claims: each lead's margin is twice the standard error of the paired differences (at least FLOOR nats), so a tie
within noise is "not shown". Their strongest null (NULLS): the same GPT trained alike on the same characters
shuffled (`shuffle`), read on the real text; the untrained model (train_steps = 0) stands beside it.
The default of 60 steps leaves 静夜思 learnt but not saturated: trained much longer, p of every next character
nears 1 and no single neuron's knockout moves log p by more than FLOOR (true, and a lesson
of its own: the memory is spread over many neurons). On a corpus, more steps (600 on Tiny Shakespeare) read better.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, beats_chance, lead
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.ffn_memory import data as texts
from attnlab.lessons.ffn_memory import memory
from attnlab.train import progress

CONTEXT, BATCH, LR, WARMUP = 16, 16, 3e-3, 10
FLOOR = 0.001  # nats: the least a knockout lead must clear, however small the noise (one neuron moves little)
WINDOW = 6  # characters of context shown before a firing token
# Every claim is about what training on the text's order put into the neurons: its null is the same model trained
# alike on the same characters shuffled, read on the real text (lessons/common/nulls.py).
NULLS = {
    name: Null("shuffled", shuffle=True)
    for name in ("fires_hurts", "top_beats_random", "values_match_keys", "keys_share_next")
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
    Param("layers", "int", 2, 1, 4, step=1, help="blocks of the GPT"),
    Param("d_model", "int", 32, 16, 64, step=16, help="width of the residual stream; each FFN has 4 · d_model neurons"),
    Param("train_steps", "int", 60, 0, 600, step=20, help="training steps (0: the untrained model, the claims' null)"),
    Param("top", "int", 10, 3, 20, step=1, help="K: the contexts that most activate a neuron form its key"),
    Param("knock", "int", 5, 1, 16, step=1, help="neurons knocked out together at each position"),
    Param("shown", "int", 12, 1, 40, step=1, help="neurons listed in the table (those whose knockout hurts most)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed (weights and batches)"),
    Param("shuffle", "bool", False, help="train on the same characters shuffled (the null: order says nothing)"),
)
QUICK = {"layers": 1, "d_model": 16, "train_steps": 20, "top": 5, "shown": 3}
COURSE = ("inside", 30)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Window:
    before: str  # up to WINDOW characters of context
    fire: str  # the token at the read position, where the neuron fires
    next: str  # the token after it: the model's target there
    act: float  # the neuron's activation


@dataclass
class NeuronRow:
    layer: int  # counted from 1
    neuron: int  # counted from 1
    windows: list[Window]  # its key: the top-K contexts, strongest first
    key_next: str  # the next token most common after them
    key_share: float  # of the K
    shared: bool  # key_share >= 1/2
    value: str  # the tokens its value promotes most, best first, "月 3.1 · 光 2.4"
    value_top: str
    readable: bool  # value_top == key_next
    hurt_fire: float  # −Δ log p of the next token against the average token's, knocked out alone: mean over its K
    hurt_quiet: float  # the same on K positions where it does not fire
    flips: int  # of its K contexts, those whose top prediction changes
    example: str  # at its strongest context: "床前明[月]→光 p 0.93 → 0.41"


@dataclass
class Counts:
    """One model's neurons: how many are alive, how many read."""

    alive: int
    shared: int
    readable: int
    shared_chance: float  # per neuron: its key's current tokens, at other positions
    readable_chance: float


@dataclass
class LayerRow:
    layer: int  # counted from 1
    neurons: int
    alive: int
    shared: int
    readable: int
    hurt_fire: float  # mean over its alive neurons
    hurt_quiet: float
    hurt_top: float  # mean over the read positions: the `knock` strongest neurons there
    hurt_random: float  # as many random neurons


@dataclass
class FFNMemoryResult(Shown):
    topic: str
    params: dict
    corpus: str
    held_out: bool
    n_positions: int
    vocab_size: int
    neurons: int  # FFN neurons in all layers
    loss: float  # −log p of the next token, mean over the read positions, trained model
    loss_untrained: float
    trained: Counts
    untrained: Counts
    hurt_fire: float
    hurt_quiet: float
    hurt_top: float
    hurt_random: float
    layers: list[LayerRow]
    rows: list[NeuronRow]
    note: str
    claims: list[Claim] = field(default_factory=list)


RECORDED = 96  # bytes per layer, position and model dimension a recorded pass holds at its peak (every site:
# the residual stream, the attention's inputs and weights, the FFN's 4·d_model hidden units), erring high


def cost(p: dict) -> Cost:
    """Trains one small GPT (stoppable at every step), then reads and knocks out its neurons in batched passes
    that record every layer: the largest holds the read positions, or CHUNK neurons' 2·top contexts each."""
    if p["d_model"] % 2:
        raise ParamError(
            f"d_model must be even (2 heads), got {p['d_model']}",
            "d_model",
            "explain.ffn_memory.error.d_model",
            d_model=p["d_model"],
        )
    rows = max(texts.MAX_POSITIONS, memory.CHUNK * 2 * p["top"])  # the largest batched pass
    return Cost.of_bytes(rows * p["layers"] * CONTEXT * p["d_model"] * RECORDED, trains=True, extra_mb=32.0)


def train(model, data: texts.Data, steps: int, seed: int, shuffle: bool = False):
    """AdamW on cross-entropy, the lab's cosine schedule, batches from a generator of their own; progress reported."""
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    progress.report("gpt", 0, steps)  # listed at once, trained or not
    if steps == 0:
        return model.eval()
    cfg = TrainConfig(steps=steps, batch_size=BATCH, lr=LR, warmup_steps=min(WARMUP, steps), seed=seed)
    ids = texts.training_ids(data, shuffle, seed)  # (N_train,)
    train_small(
        model,
        cfg,
        lambda g: get_batch(ids, CONTEXT, BATCH, g),  # (B, T), (B, T)
        on_step=lambda step: progress.report("gpt", step, steps),
    )  # stops here when the page has gone
    return model.eval()


def analyse(model, x, at, y, K: int, knock: int, seed: int):
    """Keys, values, knockouts and counts of one model on the read positions."""
    acts, logp, _ = memory.read(model, x, at, y)  # (L, P, d_ff), (P,)
    found = memory.neurons(model, acts, y, K)
    freq = memory.frequencies(y, model.config.vocab_size)  # (V,): the average token a knockout is measured against
    memory.knock_each(model, x, at, y, acts, found, K, freq)
    hurt_top, hurt_random = memory.knock_handful(model, x, at, y, acts, knock, seed, freq)  # (L, P) each
    counts = Counts(
        len(found),
        sum(n.shared for n in found),
        sum(n.readable for n in found),
        memory.shared_given_current(x[torch.arange(len(x)), at], y, found, seed),  # reading the current token only
        memory.readable_by_chance(found),
    )
    return found, counts, hurt_top, hurt_random, float(-logp.mean())


def mean_se(xs) -> tuple[float, float]:
    """Mean and standard error (0 for fewer than two)."""
    xs = torch.as_tensor(xs, dtype=torch.float64).flatten()
    if len(xs) == 0:
        return 0.0, 0.0
    se = float(xs.std() / math.sqrt(len(xs))) if len(xs) > 1 else 0.0
    return float(xs.mean()), se


def row_of(n: memory.Neuron, x, at, y, tok) -> NeuronRow:
    def s(c: int) -> str:
        return texts.shown(tok, c)

    windows = [
        Window(
            "".join(s(c) for c in x[p, max(0, int(at[p]) - WINDOW) : int(at[p])].tolist()),
            s(int(x[p, at[p]])),
            s(int(y[p])),
            a,
        )
        for p, a in zip(n.fire, n.acts)
    ]
    p0, before, after, top0, top1 = n.example
    w = windows[0]
    example = f"{w.before}[{w.fire}]→{w.next}  p {before:.2f} → {after:.2f}" + (
        f"  ({s(top0)} → {s(top1)})" if top0 != top1 else ""
    )
    value = " · ".join(f"{s(c)} {v:.2f}" for c, v in zip(n.value_top, n.value_logit))
    return NeuronRow(
        n.layer + 1,
        n.index + 1,
        windows,
        s(n.key_next),
        n.key_count / len(n.fire),
        n.shared,
        value,
        s(n.value_top[0]),
        n.readable,
        n.hurt_fire,
        n.hurt_quiet,
        n.flips,
        example,
    )


def claims_of(
    found, counts: Counts, untrained: Counts, hurt_top, hurt_random, K: int, knock: int, lang: str
) -> list[Claim]:
    """Two knockout leads (margin: 2 standard errors of the paired differences, at least FLOOR) and two counts
    against chance. With nothing alive there is nothing to claim: every count is 0 of 0, every lead a tie."""

    def c(name: str) -> str:
        return t(f"explain.ffn_memory.control.{name}", lang)

    fire_d = [n.hurt_fire - n.hurt_quiet for n in found]
    d_mean, d_se = mean_se(fire_d)
    fire, quiet = mean_se([n.hurt_fire for n in found])[0], mean_se([n.hurt_quiet for n in found])[0]
    m1 = max(FLOOR, 2 * d_se)
    top, rnd = float(hurt_top.mean()), float(hurt_random.mean())
    m2 = max(FLOOR, 2 * mean_se(hurt_top - hurt_random)[1])
    n = counts.alive
    return [
        lead(
            "fires_hurts",
            t("explain.ffn_memory.claim.fires_hurts", lang, fire=fire, quiet=quiet, K=K, n=n, margin=m1),
            lang,
            measured=fire,
            baseline=quiet,
            margin=m1,
            control=c("quiet"),
            values={"fire": fire, "quiet": quiet, "n": n},
        ),
        lead(
            "top_beats_random",
            t("explain.ffn_memory.claim.top_beats_random", lang, top=top, rnd=rnd, k=knock, margin=m2),
            lang,
            measured=top,
            baseline=rnd,
            margin=m2,
            control=c("random"),
            values={"top": top, "random": rnd},
        ),
        beats_chance(
            "values_match_keys",
            t(
                "explain.ffn_memory.claim.values_match_keys",
                lang,
                k=counts.readable,
                n=n,
                chance=100 * counts.readable_chance,
                untrained=untrained.readable,
                alive_untrained=untrained.alive,
            ),
            lang,
            k=counts.readable,
            n=n,
            p=counts.readable_chance,
            control=c("other_neuron"),
            values={"untrained": untrained.readable, "alive_untrained": untrained.alive},
        ),
        beats_chance(
            "keys_share_next",
            t(
                "explain.ffn_memory.claim.keys_share_next",
                lang,
                k=counts.shared,
                n=n,
                K=K,
                chance=100 * counts.shared_chance,
                untrained=untrained.shared,
                alive_untrained=untrained.alive,
            ),
            lang,
            k=counts.shared,
            n=n,
            p=counts.shared_chance,
            control=c("shuffled"),
            values={"untrained": untrained.shared, "alive_untrained": untrained.alive},
            hint=t("explain.ffn_memory.hint.shared", lang),
        ),
    ]


@lesson
def ffn_memory(
    corpus: str = "",
    layers: int = 2,
    d_model: int = 32,
    train_steps: int = 60,
    top: int = 10,
    knock: int = 5,
    shown: int = 12,
    seed: int = 0,
    shuffle: bool = False,
    *,
    lang: str = "zh",
) -> FFNMemoryResult:
    """Train, read every neuron's key and value, knock neurons out, count what is readable, and the claims."""
    from attnlab.lessons.common.weights import redraw
    from attnlab.models import GPT, GPTConfig

    p = check(
        PARAMS,
        dict(
            corpus=corpus,
            layers=layers,
            d_model=d_model,
            train_steps=train_steps,
            top=top,
            knock=knock,
            shown=shown,
            seed=seed,
            shuffle=shuffle,
        ),
    )
    cost(p)
    try:
        data = texts.corpus_data(p["corpus"].strip() or "jingyesi")
    except ValueError as err:
        raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=p["corpus"][:80]) from None
    config = GPTConfig(
        vocab_size=data.vocab_size,
        context_length=CONTEXT,
        d_model=p["d_model"],
        n_heads=2,
        n_layers=p["layers"],
        norm_first=True,
        activation="relu",
    )
    x, at, y = texts.contexts(data.val, CONTEXT)  # (P, T), (P,), (P,)
    K = min(p["top"], len(y))
    untrained = redraw(GPT(config), p["seed"]).eval()
    _, counts0, _, _, loss0 = analyse(untrained, x, at, y, K, p["knock"], p["seed"])
    model = train(redraw(GPT(config), p["seed"]), data, p["train_steps"], p["seed"], p["shuffle"])
    found, counts, hurt_top, hurt_random, loss = analyse(model, x, at, y, K, p["knock"], p["seed"])
    L, d_ff = p["layers"], config.hidden
    layer_rows = []
    for i in range(L):
        mine = [n for n in found if n.layer == i]
        layer_rows.append(
            LayerRow(
                i + 1,
                d_ff,
                len(mine),
                sum(n.shared for n in mine),
                sum(n.readable for n in mine),
                mean_se([n.hurt_fire for n in mine])[0],
                mean_se([n.hurt_quiet for n in mine])[0],
                float(hurt_top[i].mean()),
                float(hurt_random[i].mean()),
            )
        )
    strongest = sorted(found, key=lambda n: (-n.hurt_fire, n.layer, n.index))[: p["shown"]]
    rows = [row_of(n, x, at, y, data.tokenizer) for n in strongest]
    name = "静夜思" if not data.held_out else data.name.rsplit("/", 1)[-1]
    note = t(
        "explain.ffn_memory.note.held_out" if data.held_out else "explain.ffn_memory.note.poem",
        lang,
        corpus=name,
        n=len(y),
        K=K,
    )
    return FFNMemoryResult(
        "ffn-memory",
        p,
        name,
        data.held_out,
        len(y),
        data.vocab_size,
        L * d_ff,
        loss,
        loss0,
        counts,
        counts0,
        mean_se([n.hurt_fire for n in found])[0],
        mean_se([n.hurt_quiet for n in found])[0],
        float(hurt_top.mean()),
        float(hurt_random.mean()),
        layer_rows,
        rows,
        note,
        claims_of(found, counts, counts0, hurt_top, hurt_random, K, p["knock"], lang),
    )
