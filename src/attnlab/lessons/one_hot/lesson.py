"""One-hot vectors against dense embeddings (lecture 06 §2), measured on a character model.

A one-hot vector has one dimension per vocabulary entry (|V|), a single 1 and zeros elsewhere, so any two
different ones are orthogonal: cosine exactly 0, every pair equally unrelated. An embedding table gives each
character a dense vector of d_model numbers; their cosines are not 0, and after training they can carry
something of how the characters are used. The lesson trains a small GPT on a corpus for `train_steps` steps
(the built-in 静夜思 by default; from the CLI or Python also a .txt or chinese-poetry .json file) and reads
its embedding table.

What the neighbours show is measured, not asserted: for the most frequent characters, the rank correlation
(Spearman) between embedding cosine and *context similarity* (cosine of their left- and right-neighbour
counts in the corpus), after training, at initialization, and for its strongest null: the same model trained
alike (same seed, same initial table, same steps) on the same characters shuffled, where the order, and with it
every context, says nothing; the frequencies it can still learn. A lead over that twin says training pulled
characters that occur in similar contexts together; it does not say the model knows what they mean. (Against the
untrained table alone, training on shuffled text passed at some seeds: frequency alone moves the correlation.)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, heads_divide, lesson
from attnlab.lessons.common.rank_correlation import spearman
from attnlab.lessons.common.result import Shown
from attnlab.lessons.common.weights import redraw
from attnlab.lessons.one_hot.claims import N_RANDOM_TABLES, claims_of
from attnlab.train import progress

CONTEXT, BATCH, LR = 32, 16, 3e-3
MODEL, NULL_MODEL = (
    "gpt",
    "gpt_shuffled",
)  # the models trained, as the training progress names them (explain.one_hot.model.*)
N_FREQUENT = 100  # characters in the correlation: the most frequent ones
# Each claim's strongest null (lessons/common/nulls.py), both computed in the same run: one-hot's exact 0, and
# the twin trained on the characters shuffled (with `shuffle` on, the run is that twin: a tie by construction).
NULLS = {"dense_not_orthogonal": Null("onehot"), "training_context": Null("shuffled")}

PARAMS = (
    Param(
        "corpus",
        "str",
        "",
        max_len=4096,
        cli_only=True,
        help="a .txt or chinese-poetry .json file to train on (CLI and Python only); empty: the built-in 静夜思",
    ),
    Param("chars", "str", "月光头", max_len=8, help="characters whose nearest neighbours are listed"),
    Param("d_model", "int", 32, 4, 128, step=2, help="embedding width d (even: 2 heads)"),
    Param("train_steps", "int", 200, 0, 1000, step=10, help="training steps (0: the untrained table)"),
    Param("shuffle", "bool", False, help="train on the same characters shuffled (the null: order says nothing)"),
    Param("top_k", "int", 5, 1, 10, step=1, help="neighbours listed per character"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
)
QUICK = {"d_model": 8, "train_steps": 20}
COURSE = ("lecture06", 100)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Neighbour:
    char: str
    cos: float  # trained embeddings
    cos_init: float  # the same pair at initialization
    context: float  # cosine of the two characters' neighbour counts in the corpus


@dataclass
class Query:
    char: str
    count: int  # occurrences in the corpus
    neighbours: list[Neighbour]


@dataclass
class OneHotResult(Shown):
    topic: str
    params: dict
    corpus: str  # "静夜思 (built-in)" or the file's name
    n_chars: int  # characters in the corpus
    vocab_size: int  # |V|: the one-hot dimension (characters + the end-of-text mark)
    d_model: int  # the dense dimension
    onehot_max_cos: float  # max |cos| over every pair of different one-hot vectors: 0
    onehot_norm: float  # every one-hot vector's length: 1
    dense_mean_cos: float  # mean |cos| over pairs of trained embeddings
    dense_max_cos: float
    init_mean_cos: float  # the same at initialization
    loss_first: float | None  # training loss at the first and the last step
    loss_last: float | None
    n_frequent: int  # characters in the correlation and the neighbour candidates: the most frequent ones

    context_corr: float | None  # Spearman(embedding cos, context similarity), trained; None when undefined
    context_corr_init: float | None  # the same at initialization
    context_corr_shuffled: float | None  # the same model trained alike on the characters shuffled: the control
    context_corr_spread: float | None  # its standard deviation over N_RANDOM_TABLES random tables: what chance moves it
    queries: list[Query]
    note: str
    claims: list[Claim]


def read_texts(corpus: str) -> tuple[list[str], str]:
    from pathlib import Path

    from attnlab.text import JINGYESI, read_corpus
    from attnlab.train.data import check_corpus

    if not corpus.strip():
        return [JINGYESI], "静夜思"
    try:
        check_corpus(corpus.strip())  # a regular file within the size limit: a FIFO would block forever
        return read_corpus(corpus.strip()), Path(corpus.strip()).name
    except (ValueError, OSError) as err:  # OSError: a name too long, a folder, no permission ...
        raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=corpus[:80]) from None


def onehot_table(V: int) -> torch.Tensor:
    """(V, V): row i is e_i, in float64."""
    return F.one_hot(torch.arange(V), V).double()


def random_spread(S_pairs: np.ndarray, n: int, d: int, seed: int) -> float | None:
    """Standard deviation of Spearman(cosines of a random N(0, 1) table of n rows and d columns, S_pairs) over
    N_RANDOM_TABLES tables: how far the correlation moves by chance alone, for a table that learned nothing."""
    g = torch.Generator().manual_seed(seed)
    iu = np.triu_indices(n, k=1)
    draws = [
        spearman(cosines(torch.randn(n, d, generator=g, dtype=torch.float64)).numpy()[iu], S_pairs)
        for _ in range(N_RANDOM_TABLES)
    ]
    draws = [x for x in draws if x is not None]
    return float(np.std(draws, ddof=1)) if len(draws) > 1 else None


def cosines(E: torch.Tensor) -> torch.Tensor:
    """(V, d) -> (V, V) cosine of every pair of rows."""
    unit = F.normalize(E, dim=1)
    return unit @ unit.T


def off_diagonal_abs(C: torch.Tensor) -> tuple[float, float]:
    """Mean and max of |C_ij| over i != j (boolean indexing of a V x V matrix is slow for a large V)."""
    A = C.abs().fill_diagonal_(0)
    V = C.shape[0]
    return (A.sum() / (V * (V - 1))).item(), A.max().item()


def context_similarity(ids: np.ndarray, V: int, rows: list[int]) -> np.ndarray:
    """Cosine between the context vectors of the characters `rows`: a character's context vector counts its left
    neighbours (first V entries) and its right neighbours (last V) over the whole token stream."""
    where = np.full(V, -1)
    where[rows] = np.arange(len(rows))
    ctx = np.zeros((len(rows), 2 * V))
    a, b = ids[:-1], ids[1:]  # every adjacent pair: a then b
    keep = where[b] >= 0
    np.add.at(ctx, (where[b[keep]], a[keep]), 1)  # a is a left neighbour of b
    keep = where[a] >= 0
    np.add.at(ctx, (where[a[keep]], V + b[keep]), 1)  # b is a right neighbour of a
    return cosines(torch.from_numpy(ctx)).numpy()


def train(stream: torch.Tensor, vocab: int, d: int, steps: int, seed: int, name: str = MODEL):
    """A one-layer character GPT trained `steps` AdamW steps on random windows of `stream` (progress as `name`)."""
    from attnlab.models import GPT, GPTConfig
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    # float64: twenty steps amplify rounding, and the page and the API must show the same last digits;
    # redraw: the initial weights from the seed alone, whatever other threads draw meanwhile
    model = redraw(
        GPT(GPTConfig(vocab_size=vocab, n_layers=1, d_model=d, n_heads=2, context_length=CONTEXT)), seed
    ).double()
    init = model.embed.tok.weight.detach().clone()  # (V, d)
    cfg = TrainConfig(steps=max(1, steps), lr=LR, schedule="constant", grad_clip=None, seed=seed)
    # torch's AdamW with its own defaults; a run of 0 steps reports nothing (the page lists no model)
    losses = train_small(
        model,
        cfg,
        lambda g: get_batch(stream, CONTEXT, BATCH, g),
        steps=steps,  # (B, T) each
        optimizer=torch.optim.AdamW(model.parameters(), lr=LR, foreach=True),  # bitwise the loop's update, faster
        on_step=lambda step: progress.report(name, step, steps) if steps else None,
    )
    return model.embed.tok.weight.detach().double(), init.double(), losses


def cost(p: dict) -> Cost:
    """Trains one small GPT in float64 (stoppable at every step); an odd width is refused before."""
    heads_divide(p["d_model"], 2, "d_model")
    return Cost(32.0, trains=p["train_steps"] > 0)


@lesson
def one_hot(
    corpus: str = "",
    chars: str = "月光头",
    d_model: int = 32,
    train_steps: int = 200,
    shuffle: bool = False,
    top_k: int = 5,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> OneHotResult:
    """One-hot cosines (exactly 0), dense cosines before and after training, and nearest neighbours."""
    from attnlab.text import CharTokenizer, shuffled_chars
    from attnlab.train.data import token_stream

    p = check(
        PARAMS,
        dict(
            corpus=corpus,
            chars=chars,
            d_model=d_model,
            train_steps=train_steps,
            shuffle=shuffle,
            top_k=top_k,
            seed=seed,
        ),
    )
    cost(p)
    texts, name = read_texts(p["corpus"])
    tok = CharTokenizer.train(texts)
    queries_chars = [c for c in dict.fromkeys(p["chars"]) if not c.isspace()]
    missing = [c for c in queries_chars if c not in tok.chars]
    if not queries_chars or missing:
        raise ParamError(
            f"chars must be characters of the corpus {name}; not in it: {''.join(missing) or '(none given)'}",
            "chars",
            "explain.error.not_in_corpus",
            missing="".join(missing) or "—",
            corpus=name,
        )
    stream = token_stream(texts, tok)  # (N,)
    V = tok.vocab_size

    onehot = onehot_table(V)  # (V, V): row i is e_i
    sparse = onehot.to_sparse()  # (V, V) COO: one stored 1 per row
    with warnings.catch_warnings():  # torch routes sparse x sparse through CSR, which it calls "beta"
        warnings.simplefilter("ignore", UserWarning)
        gram = torch.sparse.mm(sparse, sparse.t()).coalesce()  # every dot product e_i . e_j
    i, j = gram.indices()  # the entries that are not 0: a dense V x V product would cost V^3
    norms = torch.zeros(V, dtype=torch.float64).index_put_((i[i == j],), gram.values()[i == j].sqrt())  # ||e_i||
    pair_cos = gram.values()[i != j] / (norms[i[i != j]] * norms[j[i != j]])  # cosines of the nonzero pairs only
    onehot_max = pair_cos.abs().max().item() if pair_cos.numel() else 0.0  # every other pair has dot product 0
    onehot_norm = norms.max().item()

    # the null: the same characters in random order (contexts are still counted on the real text), trained alike
    # beside the model; with `shuffle` on, the model itself trains on them and is its own twin
    shuffled = token_stream(shuffled_chars(texts, p["seed"]), tok)  # (N,)
    E, E0, losses = train(shuffled if p["shuffle"] else stream, V, p["d_model"], p["train_steps"], p["seed"])
    same = p["shuffle"] or not p["train_steps"]  # the twin would be this very table
    E_null = E if same else train(shuffled, V, p["d_model"], p["train_steps"], p["seed"], NULL_MODEL)[0]
    C, C0, C_null = cosines(E), cosines(E0), cosines(E_null)

    ids = stream.numpy()
    counts = np.bincount(ids, minlength=V)
    frequent = [int(i) for i in np.argsort(-counts, kind="stable") if i != tok.eot_id][:N_FREQUENT]
    query_ids = [tok.encode(ch)[0] for ch in queries_chars]
    rows = list(dict.fromkeys(frequent + query_ids))  # the characters whose contexts are compared
    S = context_similarity(ids, V, rows)  # (len(rows), len(rows))
    at = {c: k for k, c in enumerate(rows)}
    n_f = len(frequent)  # rows[:n_f] are the frequent characters
    iu = np.triu_indices(n_f, k=1)
    pick = lambda M: M[np.ix_(frequent, frequent)][iu]  # noqa: E731  the pairs among the frequent characters
    corr, corr0, corr_null = (spearman(pick(M.numpy()), S[:n_f, :n_f][iu]) for M in (C, C0, C_null))
    spread = random_spread(S[:n_f, :n_f][iu], n_f, p["d_model"], p["seed"])

    candidates = {int(i) for i in frequent}  # a rare character's vector says little: neighbours among the frequent
    queries = []
    for ch, q in zip(queries_chars, query_ids):
        order = [
            int(j) for j in torch.argsort(C[q], descending=True, stable=True) if int(j) in candidates and int(j) != q
        ]
        queries.append(
            Query(
                ch,
                int(counts[q]),
                [
                    Neighbour(tok.token(j), C[q, j].item(), C0[q, j].item(), float(S[at[q], at[j]]))
                    for j in order[: p["top_k"]]
                ],
            )
        )
    dense_mean, dense_max = off_diagonal_abs(C)
    init_mean, _ = off_diagonal_abs(C0)
    fmt = lambda x: "—" if x is None else f"{x:+.3f}"  # noqa: E731
    note = t(
        "explain.one_hot.note",
        lang,
        steps=p["train_steps"],
        n=len(stream),
        corpus=name,
        F=len(frequent),
        corr=fmt(corr),
        corr0=fmt(corr0),
        null=fmt(corr_null),
    )
    if p["shuffle"]:
        note = t("explain.one_hot.note.shuffled", lang) + (" " if lang == "en" else "") + note
    claims = claims_of(
        lang,
        V,
        p["d_model"],
        p["train_steps"],
        onehot_max,
        onehot_norm,
        onehot.shape[1],
        dense_mean,
        dense_max,
        init_mean,
        corr,
        corr0,
        corr_null,
        spread,
        len(frequent),
    )
    return OneHotResult(
        "one-hot",
        p,
        name,
        int(sum(len(x) for x in texts)),
        V,
        p["d_model"],
        onehot_max,
        onehot_norm,
        dense_mean,
        dense_max,
        init_mean,
        losses[0] if losses else None,
        losses[-1] if losses else None,
        len(frequent),
        corr,
        corr0,
        corr_null,
        spread,
        queries,
        note,
        claims,
    )
