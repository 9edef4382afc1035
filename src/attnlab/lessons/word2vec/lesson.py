"""word2vec, the idea behind it all: skip-gram with negative sampling (attnlab.models.word2vec), written out.

The experiment: a skip-gram is trained by SGD with its hand-written gradient (or, switched, torch's autograd) on
characters: the built-in 静夜思 by default, or from the CLI or Python a .txt or chinese-poetry .json file (唐诗三百首,
a 全唐诗 slice; its first 300,000 characters). Beside it a one-layer character GPT (attnlab.models.gpt) trains on
the same stream. Then, on the most frequent characters that are words (punctuation left out):
  * nearest neighbours by cosine; do they share contexts? The mean context similarity of each character's k
    nearest neighbours, for the trained vectors, their untrained start, random N(0, 1) vectors and one-hot vectors
    (every distinct pair has cosine exactly 0: all neighbours tie, so one-hot scores the mean over all pairs);
  * the distributional hypothesis: Spearman's correlation, over pairs, between embedding cosine and context
    similarity (cosine of the two characters' context count vectors: what occurs within `window` places);
  * agreement with the GPT: Spearman's correlation between the two tables' pairwise cosines;
  * analogies a - b + c ≈ d by 3CosAdd: the rank of d, against the untrained start, random vectors and chance.
Context similarity is always counted on the real text, also when the models train on it shuffled (`shuffle`,
the null: a context then carries no information). Each claim's control is its strongest null, trained in the same
run: the same two models, same seeds and steps, trained on the same characters shuffled (their frequencies kept,
every context gone); the untrained start is shown beside it. (Against the start alone, a model trained on shuffled
唐诗三百首 measured *below* it, printed as a contradiction: what frequency alone does to these measures.) The margin is
three standard deviations of the difference between two random tables' values (3√2 times their spread over 32
tables; two spreads were too low a bar: README, word2vec). With `shuffle` on the models are their own twins, and
at 0 steps the twins are the start: a tie by construction either way. The hand gradient is checked against
autograd on a batch of the trained model's own pairs. The claims and their margins are in claims.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.rank_correlation import spearman
from attnlab.lessons.common.result import Shown
from attnlab.lessons.word2vec import measure as ms
from attnlab.lessons.word2vec import runs
from attnlab.lessons.word2vec.claims import N_RANDOM, claims_of
from attnlab.models.word2vec import Diverged

N_FREQUENT = 100  # characters compared: the most frequent words of the corpus
N_NOISE, N_PCA, N_ANSWERS = 8, 40, 3
# 静夜思's two, then four for 唐诗三百首 (skipped on the poem; how they rank there: README, word2vec)
DEFAULT_ANALOGIES = "望-举+低=思 月-明+故=乡 冬-夏+春=秋 后-前+下=上 北-南+西=东 地-天+日=月"
ANALOGY = re.compile(r"^(\S)-(\S)\+(\S)=(\S)$")

PARAMS = (
    Param(
        "corpus",
        "str",
        "",
        max_len=4096,
        cli_only=True,
        from_data=True,  # the page offers the files of `attnlab serve --data DIR` by name: analogies need a corpus
        help="a .txt or chinese-poetry .json file (CLI and Python only); empty: the built-in 静夜思",
    ),
    Param("chars", "str", "月头思", max_len=8, help="characters whose nearest neighbours are listed"),
    Param(
        "analogies",
        "str",
        DEFAULT_ANALOGIES,
        max_len=200,
        help="a-b+c=d, separated by spaces; one with a character not in the corpus is skipped",
    ),
    Param("d", "int", 16, 2, 128, step=2, help="vector width d"),
    Param("window", "int", 2, 1, 5, step=1, help="context window: characters on each side"),
    Param("negatives", "int", 5, 1, 20, step=1, help="negative samples K per pair"),
    Param("train_steps", "int", 300, 0, 5000, step=50, help="skip-gram SGD steps (0: the untrained start)"),
    Param("batch", "int", 16, 1, 1024, step=1, help="pairs per step"),
    Param("lr", "float", 1.0, 0.01, 10.0, step=0.01, help="learning rate (on the batch mean loss), falling to 0"),
    Param("autograd", "bool", False, help="let torch's autograd compute the gradient instead of the hand-written one"),
    Param("gpt_steps", "int", 200, 0, 1000, step=10, help="steps of the comparison GPT (0: untrained)"),
    Param(
        "shuffle", "bool", False, help="train both models on the characters shuffled (the null: contexts say nothing)"
    ),
    Param("top_k", "int", 5, 1, 10, step=1, help="neighbours listed and scored per character"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
)
QUICK = {"gpt_steps": 20, "top_k": 3}
# Each claim's strongest null (lessons/common/nulls.py): the twins trained on the characters shuffled, in the same
# run (claims.py compares with them); the hand gradient is an identity.
NULLS = {c: Null("shuffled") for c in ("neighbours_share_contexts", "distributional", "agrees_with_gpt")}
COURSE = ("lecture06", 110)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Neighbour:
    char: str
    cos: float  # trained vectors
    cos_init: float  # the same pair at the start
    context: float  # cosine of the two characters' context counts in the real text


@dataclass
class Query:
    char: str
    count: int
    neighbours: list[Neighbour]


@dataclass
class Noise:
    char: str
    count: int
    unigram: float  # count / total
    noise: float  # count^0.75 / Σ count^0.75: what negatives are drawn from


@dataclass
class Analogy:
    text: str  # "望-举+低=思"
    expected: str
    answers: str  # the best N_ANSWERS candidates, best first
    rank: int  # of the expected character among n_candidates (1: the analogy works)
    rank_init: int  # at the untrained start
    rank_random: float  # mean over N_RANDOM random tables
    chance_rank: float  # (n + 1) / 2: random guessing, and one-hot (a - b + c has cosine 0 with every candidate)
    n_candidates: int
    works: bool


@dataclass
class Point:
    char: str
    x: float
    y: float


@dataclass
class Word2VecResult(Shown):
    topic: str
    params: dict
    corpus: str
    shuffled: bool
    n_chars: int
    vocab_size: int
    n_pairs: int  # (centre, context) pairs in the training stream
    n_compared: int  # characters the measures run over
    noise: list[Noise]  # the most frequent characters: unigram share and noise share
    loss_first: float | None  # skip-gram batch loss at the first and the last step
    loss_last: float | None
    loss_chance: float  # (K + 1) log 2: the loss with every score 0 (W_out at its start)
    gpt_loss_first: float | None
    gpt_loss_last: float | None
    gradient_error: float  # max |hand - autograd| over both tables' gradients on one batch, / the largest gradient
    neighbour_score: float  # mean context similarity of the top_k neighbours: trained
    neighbour_score_init: float
    neighbour_score_shuffled: float  # the twin trained on the characters shuffled: the control
    neighbour_score_random: float  # mean over random tables
    neighbour_score_random_sd: float
    neighbour_score_onehot: float  # every neighbour ties: the mean over all pairs
    context_corr: float | None  # Spearman(embedding cosine, context similarity): trained
    context_corr_init: float | None
    context_corr_shuffled: float | None
    context_corr_random: float | None  # mean over random tables (near 0)
    context_corr_random_sd: float | None
    gpt_corr: float | None  # Spearman(word2vec cosines, GPT embedding cosines): trained word2vec vs trained GPT
    gpt_corr_init: float | None  # trained word2vec vs the GPT's untrained embedding
    gpt_corr_shuffled: float | None  # the two twins trained on the characters shuffled, against each other
    gpt_corr_random: float | None
    gpt_corr_random_sd: float | None
    queries: list[Query]
    analogies: list[Analogy]
    skipped: list[str]  # analogies with a character not in the corpus
    pca: list[Point]  # the most frequent characters' trained vectors on their first two principal components
    pca_share: float  # the variance those two components hold
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains a skip-gram and a small GPT in float64 (stoppable at every step). A bad analogy is refused here,
    before the lesson waits for a slot (whether a character is in the corpus needs the corpus: the lesson says)."""
    parse_analogies(p["analogies"])
    return Cost(64.0, trains=p["train_steps"] > 0 or p["gpt_steps"] > 0)


def parse_analogies(spec: str) -> list[tuple[str, str, str, str]]:
    out = []
    for item in spec.replace(",", " ").replace("，", " ").split():
        m = ANALOGY.match(item)
        if not m:
            raise ParamError(
                f"analogies must be a-b+c=d items separated by spaces, got {item!r}",
                "analogies",
                "explain.word2vec.error.analogy",
                item=item,
            )
        out.append(m.groups())
    return out


def spread(values: list[float | None]) -> float | None:
    """The standard deviation of the defined values (None for fewer than two)."""
    values = [v for v in values if v is not None]
    return float(np.std(values, ddof=1)) if len(values) > 1 else None


def mean_sd(values: list[float | None]) -> tuple[float | None, float | None]:
    defined = [v for v in values if v is not None]
    return (float(np.mean(defined)) if defined else None), spread(defined)


def pca(E: np.ndarray) -> tuple[np.ndarray, float]:
    """(n, d) -> (n, 2) the rows on their first two principal components, and the variance share they hold."""
    X = E - E.mean(0)  # (n, d)
    U, s, _ = np.linalg.svd(X, full_matrices=False)
    share = float((s[:2] ** 2).sum() / max((s**2).sum(), 1e-300))
    return U[:, :2] * s[:2], share  # (n, 2)


def diverged(lr: float) -> ParamError:
    """The refusal when the vectors left the floats (a rate this large, with many pairs a step, makes SGD
    overflow): nothing measured on them would mean anything, and the page says so beside the form."""
    return ParamError(
        f"lr: training diverged at lr={lr:g} (the vectors overflowed to inf or nan); choose a smaller learning rate",
        "lr",
        "explain.word2vec.error.diverged",
        lr=f"{lr:g}",
    )


def finite(model, lr: float) -> None:
    """diverged(lr) unless both tables are finite after the last update."""
    if not bool(torch.isfinite(model.W_in).all() and torch.isfinite(model.W_out).all()):
        raise diverged(lr)


def gradient_error(model, pairs, noise, batch: int, k: int, seed: int) -> float:
    """max |closed form - autograd| over ∂L/∂W_in and ∂L/∂W_out on one batch of the trained model's pairs, relative
    to the largest gradient entry (float64 rounding scales with the numbers: a large lr grows the vectors)."""
    from attnlab.models.word2vec import table_gradients

    g = torch.Generator().manual_seed(seed + 2)
    pick = torch.randint(len(pairs[0]), (batch,), generator=g)  # (B,)
    neg = torch.multinomial(noise, batch * k, replacement=True, generator=g).view(batch, k)  # (B, K)
    c, o = pairs[0][pick], pairs[1][pick]
    G_in, G_out = table_gradients(model, c, o, neg)
    model.zero_grad(set_to_none=True)
    model(c, o, neg).mean().backward()
    diff = max((G_in - model.W_in.grad).abs().max().item(), (G_out - model.W_out.grad).abs().max().item())
    scale = max(model.W_in.grad.abs().max().item(), model.W_out.grad.abs().max().item(), 1.0)
    return diff / scale


@lesson
def word2vec(
    corpus: str = "",
    chars: str = "月头思",
    analogies: str = DEFAULT_ANALOGIES,
    d: int = 16,
    window: int = 2,
    negatives: int = 5,
    train_steps: int = 300,
    batch: int = 16,
    lr: float = 1.0,
    autograd: bool = False,
    gpt_steps: int = 200,
    shuffle: bool = False,
    top_k: int = 5,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> Word2VecResult:
    """Skip-gram trained, its neighbours, analogies and the three comparisons, and the claims."""
    p = check(
        PARAMS,
        dict(
            corpus=corpus,
            chars=chars,
            analogies=analogies,
            d=d,
            window=window,
            negatives=negatives,
            train_steps=train_steps,
            batch=batch,
            lr=lr,
            autograd=autograd,
            gpt_steps=gpt_steps,
            shuffle=shuffle,
            top_k=top_k,
            seed=seed,
        ),
    )
    cost(p)
    wanted = parse_analogies(p["analogies"])
    text = runs.read(p["corpus"], p["shuffle"], p["seed"])
    tok = text.tokenizer
    query_chars = [c for c in dict.fromkeys(p["chars"]) if not c.isspace()]
    missing = [c for c in query_chars if c not in tok.chars]
    if not query_chars or missing:
        raise ParamError(
            f"chars must be characters of the corpus {text.name}; not in it: {''.join(missing) or '(none)'}",
            "chars",
            "explain.error.not_in_corpus",
            missing="".join(missing) or "—",
            corpus=text.name,
        )

    sg = (p["d"], p["window"], p["negatives"], p["train_steps"], p["batch"], p["lr"], not p["autograd"], p["seed"])
    try:
        model, start, losses, pairs, noise = runs.train_skipgram(text, text.train_ids, *sg)
        finite(model, p["lr"])
        # the control: twins trained alike on the characters shuffled (with `shuffle` on, or untrained, these)
        if p["shuffle"] or not p["train_steps"]:
            null_E = model.W_in.detach().numpy()
        else:
            null_model = runs.train_skipgram(text, text.null_ids, *sg, name="word2vec_shuffled")[0]
            finite(null_model, p["lr"])
            null_E = null_model.W_in.detach().numpy()
    except Diverged:
        raise diverged(p["lr"]) from None
    gpt_E, gpt_E0, gpt_losses = runs.train_gpt(text, text.train_ids, p["gpt_steps"], p["seed"])
    if p["shuffle"] or not p["gpt_steps"]:
        null_gpt_E = gpt_E
    else:
        null_gpt_E = runs.train_gpt(text, text.null_ids, p["gpt_steps"], p["seed"], "gpt_shuffled")[0]
    grad_err = gradient_error(model, pairs, noise, p["batch"], p["negatives"], p["seed"])

    E, E0 = model.W_in.detach().numpy(), start.numpy()  # (V, d) each
    ids = [tok.encode(c)[0] for c in query_chars]
    rows = runs.frequent(text, N_FREQUENT)
    rows += [i for i in ids if i not in rows]  # the query characters are compared too
    n = len(rows)
    S = ms.cosines(ms.context_counts(text.ids.numpy(), tok.vocab_size, rows, p["window"], tok.eot_id))  # (n, n)
    C, C0, Cs = ms.cosines(E[rows]), ms.cosines(E0[rows]), ms.cosines(null_E[rows])  # (n, n)
    G, G0, Gs = (ms.cosines(x.numpy()[rows]) for x in (gpt_E, gpt_E0, null_gpt_E))  # (n, n)
    R = [ms.cosines(x) for x in ms.random_tables(n, p["d"], N_RANDOM, p["seed"])]
    k = min(p["top_k"], n - 1)
    s_pairs = ms.upper(S)

    nb = [ms.neighbour_score(M, S, k) for M in (C, C0, Cs)] if k > 0 else [0.0, 0.0, 0.0]
    nb_random = [ms.neighbour_score(M, S, k) for M in R] if k > 0 else [0.0]
    corr, corr0, corr_s = (spearman(ms.upper(M), s_pairs) for M in (C, C0, Cs))
    g_corr, g_corr0 = spearman(ms.upper(C), ms.upper(G)), spearman(ms.upper(C), ms.upper(G0))
    g_corr_s = spearman(ms.upper(Cs), ms.upper(Gs))  # the twins, trained on the shuffled characters

    at = {c: j for j, c in enumerate(rows)}
    counts = text.counts.numpy()
    queries = []
    for ch, q in zip(query_chars, ids):
        order = [j for j in np.argsort(-C[at[q]], kind="stable") if rows[j] != q][:k]
        queries.append(
            Query(
                ch,
                int(counts[q]),
                [
                    Neighbour(tok.token(rows[j]), float(C[at[q], j]), float(C0[at[q], j]), float(S[at[q], j]))
                    for j in order
                ],
            )
        )

    found, skipped = [], []
    for a, b, c, want in wanted:
        item = f"{a}-{b}+{c}={want}"
        if any(x not in tok.chars for x in (a, b, c, want)):
            skipped.append(item)
            continue
        A, B, Cc, D = (tok.encode(x)[0] for x in (a, b, c, want))
        pool = rows + [x for x in (A, B, Cc, D) if x not in rows]
        order = ms.analogy(E, A, B, Cc, pool)
        at_pool = {x: j for j, x in enumerate(pool)}  # random tables hold the pool's rows only
        random_rank = float(
            np.mean(
                [
                    ms.analogy(T, at_pool[A], at_pool[B], at_pool[Cc], list(range(len(pool)))).index(at_pool[D]) + 1
                    for T in ms.random_tables(len(pool), p["d"], N_RANDOM, p["seed"] + 3)
                ]
            )
        )
        found.append(
            Analogy(
                item,
                want,
                "".join(tok.token(j) for j in order[:N_ANSWERS]),
                order.index(D) + 1,
                ms.analogy(E0, A, B, Cc, pool).index(D) + 1,
                random_rank,
                (len(order) + 1) / 2,
                len(order),
                order[0] == D,
            )
        )

    total = counts.sum()
    top = runs.frequent(text, N_NOISE)
    noise_rows = [Noise(tok.token(i), int(counts[i]), float(counts[i] / total), float(noise[i])) for i in top]
    xy, share = pca(E[rows[:N_PCA]])
    points = [Point(tok.token(i), float(x), float(y)) for i, (x, y) in zip(rows[:N_PCA], xy)]

    r = Word2VecResult(
        "word2vec",
        p,
        text.name,
        p["shuffle"],
        int(len(text.ids) - (text.ids == tok.eot_id).sum()),
        tok.vocab_size,
        len(pairs[0]),
        n,
        noise_rows,
        losses[0] if losses else None,
        losses[-1] if losses else None,
        (p["negatives"] + 1) * math.log(2),
        gpt_losses[0] if gpt_losses else None,
        gpt_losses[-1] if gpt_losses else None,
        grad_err,
        nb[0],
        nb[1],
        nb[2],
        float(np.mean(nb_random)),
        spread(nb_random) or 0.0,
        float(s_pairs.mean()) if len(s_pairs) else 0.0,
        corr,
        corr0,
        corr_s,
        *mean_sd([spearman(ms.upper(M), s_pairs) for M in R]),
        g_corr,
        g_corr0,
        g_corr_s,
        *mean_sd([spearman(ms.upper(C), ms.upper(M)) for M in R]),
        queries,
        found,
        skipped,
        points,
        share,
        "",
    )
    r.note = t(
        "explain.word2vec.note.shuffled" if p["shuffle"] else "explain.word2vec.note.plain",
        lang,
        corpus=text.name,
        n=n,
        skipped=" ".join(skipped) or "—",
    )
    if not p["corpus"].strip():  # 20 characters: too few contexts for an analogy to have a chance
        r.note += " " + t("explain.word2vec.note.small", lang, n_chars=r.n_chars)
    r.claims = claims_of(r, lang)
    return r
