"""Chapter 16 ⑦: retrieval-augmented generation. A model cannot write a line it never learnt; put the poem that holds
it into the context and it copies it. Why that works is attention: the second line's positions read the retrieved
poem and copy from it.

The experiment: an index over the poems (common/search_index.py: SQLite FTS5, trigrams, BM25, on disk) and a dense retriever (the
generator's own character embeddings, mean-pooled, cosine, exact search); a generator (generator.py) trained `seeds`
times on the training poems; on the held-out poems, which it never saw, the exact second line written alone, with
the BM25-retrieved poem, with a random poem (the control: the same context length, the wrong knowledge) and with the
right poem (the oracle). What it learns is to copy the second line of the poem in its context from its fixed place,
without reading the question: whether it is right is whether the retriever put the right poem there.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.common import disk_cache
from attnlab.lessons.common import poems as corpus_
from attnlab.lessons.common import search_index as index
from attnlab.lessons.common.claims import Claim, beats_chance, lead, weakest
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import CHANCE, Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.rag import generator as gen
from attnlab.train import progress

CONDITIONS = ("alone", "retrieved", "random", "oracle")
RETRIEVERS = ("bm25", "dense", "dense_untrained")
KS = (1, 3, 5)
HELPS_MARGIN = 0.5  # retrieval's lead over a random poem in the context, in every seed
MAX_QUERY = corpus_.LINE
# retrieval_helps: a random poem in the same place, in the run; bm25_finds: chance per query. The dense retriever is
# measured, not claimed: the generator's vectors, trained to copy random characters, retrieve no better than untrained
# (random) vectors, which the result carries beside them (dense_untrained).
NULLS = {"retrieval_helps": Null("random"), "bm25_finds": CHANCE}

PARAMS = (
    Param(
        "corpus", "str", "", max_len=4096, help="a poem file to index (.json or .txt; its 五绝); empty: the lab's own"
    ),
    Param(
        "query", "str", "", max_len=MAX_QUERY, help="a first line of 5 characters to look up (empty: a held-out one)"
    ),
    Param("steps", "int", 300, 0, 2000, step=10, help="training steps of each generator (0: untrained)"),
    Param("seeds", "int", 3, 1, 5, step=1, help="how many generators are trained (seeds 0, 1, ...)"),
)
QUICK = {"steps": 20, "seeds": 1}
COURSE = ("chapter16", 72)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Example:
    query: str
    answer: str | None  # the second line, where the query is a first line of the corpus
    bm25: list[dict]  # text, score: the top KS[-1] by BM25
    dense: list[dict]  # text, cosine
    written: dict  # condition -> the line the first seed's generator wrote
    context: list[str]  # the retrieved poem's characters
    attention: list[list[float]]  # (LINE, CONTEXT): the answer positions' attention onto it, last layer


@dataclass
class RagResult(Shown):
    topic: str
    params: dict
    corpus: str  # its name
    n_poems: int
    n_train: int
    n_test: int
    conditions: list[str]
    recall: dict  # condition -> mean exact second lines over the seeds (held-out poems)
    recall_by_seed: dict  # condition -> [per seed]
    ks: list[int]
    retrieval_recall: dict  # retriever -> [recall@k per k] (held-out first lines; dense from the first seed's vectors,
    # dense_untrained from the same vectors before training)
    example: Example
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Reads and indexes the corpus (a checked regular file), then trains `seeds` small generators."""
    corpus_.check(p["corpus"])
    if len(p["query"].strip()) not in (0, corpus_.LINE):
        raise ParamError(
            f"query must be a first line of {corpus_.LINE} characters, got {p['query']!r}",
            "query",
            "explain.rag.error.query",
            n=corpus_.LINE,
            got=repr(p["query"]),
        )
    return Cost(96.0, trains=True)


@lru_cache(maxsize=4)
def trained(corpus: str, steps: int, seeds: int) -> tuple:
    poems = list(corpus_.poems_of(corpus))
    train, _ = corpus_.split(poems)
    vocab = {c: i for i, c in enumerate(gen.vocabulary(poems))}
    total = steps * seeds
    progress.report("generator", 0, total)
    models = []
    for seed in range(seeds):
        done = seed * steps
        step = lambda s, d=done: progress.report("generator", d + s, total)  # noqa: E731
        models.append(gen.train(train, vocab, seed, steps, drills=bool(corpus), on_step=step))
    return vocab, tuple(models)


def the_index(corpus: str):
    try:
        return index.open_index([p.text for p in corpus_.poems_of(corpus)], disk_cache.folder())
    except index.IndexError_ as err:
        raise ParamError(str(err), "corpus", "explain.rag.error.index", folder=index.SUBFOLDER) from None


@torch.no_grad()
def dense_vectors(model, vocab: dict[str, int], texts: list[str]) -> torch.Tensor:
    """Each text's characters' embeddings averaged, scaled to length 1: (N, d)."""
    table = model.embed.tok.weight  # (V, d)
    v = torch.stack([table[[vocab[c] for c in s if c in vocab] or [vocab[gen.BLANK]]].mean(0) for s in texts])
    return v / v.norm(dim=1, keepdim=True)


@lru_cache(maxsize=4)
def measured(corpus: str, steps: int, seeds: int) -> tuple[dict, dict]:
    poems = list(corpus_.poems_of(corpus))
    _, test = corpus_.split(poems)
    vocab, models = trained(corpus, steps, seeds)
    conn = the_index(corpus)
    top = [[r for r, _ in index.search(conn, p.query, KS[-1])] for p in test]
    docs = dense_vectors(models[0], vocab, [p.text for p in poems])  # (N, d)
    near = (dense_vectors(models[0], vocab, [p.query for p in test]) @ docs.T).argsort(dim=1, descending=True)
    where = {p.text: i for i, p in enumerate(poems)}
    truth = [where[p.text] for p in test]
    untrained = gen.build(len(vocab), 0)  # the same initial vectors, never trained: the dense retriever's null
    docs0 = dense_vectors(untrained, vocab, [p.text for p in poems])
    near0 = (dense_vectors(untrained, vocab, [p.query for p in test]) @ docs0.T).argsort(dim=1, descending=True)
    retrieval = {
        "bm25": [sum(t in rows[:k] for t, rows in zip(truth, top)) / len(test) for k in KS],
        "dense": [sum(t in near[i, :k].tolist() for i, t in enumerate(truth)) / len(test) for k in KS],
        "dense_untrained": [sum(t in near0[i, :k].tolist() for i, t in enumerate(truth)) / len(test) for k in KS],
    }
    recall = {c: [] for c in CONDITIONS}
    for seed, model in enumerate(models):
        rng = random.Random(40_000 + seed)
        contexts = {
            "alone": [""] * len(test),
            "retrieved": [poems[rows[0]].text if rows else "" for rows in top],
            "random": [rng.choice([q for q in poems if q.text != p.text]).text for p in test],
            "oracle": [p.text for p in test],
        }
        for c in CONDITIONS:
            lines = gen.write(model, vocab, contexts[c], test)
            recall[c].append(sum(a == p.answer for a, p in zip(lines, test)) / len(test))
    return recall, retrieval


def example_of(corpus: str, steps: int, seeds: int, query: str) -> Example:
    poems = list(corpus_.poems_of(corpus))
    vocab, models = trained(corpus, steps, seeds)
    conn = the_index(corpus)
    hits = index.search(conn, query, KS[-1])
    docs = dense_vectors(models[0], vocab, [p.text for p in poems])
    cos = docs @ dense_vectors(models[0], vocab, [query])[0]  # (N,)
    dense = [{"text": poems[i].text, "cosine": float(cos[i])} for i in cos.argsort(descending=True)[: KS[-1]].tolist()]
    answer = next((p.answer for p in poems if p.query == query), None)
    asked = corpus_.Poem("", (query, answer or query))
    retrieved = poems[hits[0][0]].text if hits else ""
    rng = random.Random(7)
    contexts = {"alone": "", "retrieved": retrieved, "random": rng.choice([p for p in poems if p.query != query]).text}
    contexts["oracle"] = next((p.text for p in poems if p.query == query), retrieved)
    written = {c: gen.write(models[0], vocab, [contexts[c]], [asked])[0] for c in CONDITIONS}
    as_written = corpus_.Poem("", (query, written["retrieved"]))  # the map is read while it writes that line
    return Example(
        query,
        answer,
        [{"text": poems[r].text, "score": s} for r, s in hits],
        dense,
        written,
        list(retrieved.ljust(gen.CONTEXT, gen.BLANK)[: gen.CONTEXT]),
        gen.attention_on_context(models[0], vocab, retrieved, as_written),
    )


def claims_of(r: RagResult, lang: str) -> list[Claim]:
    k = "explain.rag."
    by = r.recall_by_seed
    helps = weakest([a - b for a, b in zip(by["retrieved"], by["random"])])
    claims = [
        lead(
            "retrieval_helps",
            t(
                k + "claim.retrieval_helps",
                lang,
                retrieved=r.recall["retrieved"],
                random=r.recall["random"],
                alone=r.recall["alone"],
                oracle=r.recall["oracle"],
                lead=helps,
                seeds=r.params["seeds"],
                n=r.n_test,
                margin=HELPS_MARGIN,
            ),
            lang,
            measured=helps,
            baseline=0.0,
            margin=HELPS_MARGIN,
            control=t(k + "control.random", lang),
            values={"by_seed": by, "smallest_lead": helps, "n_test": r.n_test},
            hint=t(k + "hint.steps", lang),
        )
    ]
    top = r.ks[-1]  # a hit is the right poem among the top k: chance k / N for a query
    hits = round(r.retrieval_recall["bm25"][-1] * r.n_test)
    claims.append(
        beats_chance(
            "bm25_finds",
            t(k + "claim.bm25_finds", lang, k=hits, n=r.n_test, poems=r.n_poems, top=top),
            lang,
            k=hits,
            n=r.n_test,
            p=top / r.n_poems,
            control=t(k + "control.chance", lang, n=r.n_test, poems=r.n_poems, top=top),
            values={"recall_at": dict(zip(map(str, r.ks), r.retrieval_recall["bm25"]))},
        )
    )
    return claims


@lesson
def rag(corpus: str = "", query: str = "", steps: int = 300, seeds: int = 3, *, lang: str = "zh") -> RagResult:
    """Retrieve a poem, then write its second line: alone, with the retrieved poem, a random one and the right one."""
    p = check(PARAMS, dict(corpus=corpus, query=query, steps=steps, seeds=seeds))
    cost(p)
    p["corpus"], p["query"] = p["corpus"].strip(), p["query"].strip()
    poems = list(corpus_.poems_of(p["corpus"]))
    train, test = corpus_.split(poems)
    recall, retrieval = measured(p["corpus"], p["steps"], p["seeds"])
    query = p["query"] or test[0].query
    name = p["corpus"].replace("\\", "/").rsplit("/", 1)[-1] if p["corpus"] else t("explain.rag.builtin", lang)
    r = RagResult(
        "rag",
        p,
        name,
        len(poems),
        len(train),
        len(test),
        list(CONDITIONS),
        {c: sum(v) / len(v) for c, v in recall.items()},
        recall,
        list(KS),
        retrieval,
        example_of(p["corpus"], p["steps"], p["seeds"], query),
        t("explain.rag.note", lang, steps=p["steps"], seeds=p["seeds"], train=len(train), test=len(test)),
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "RagResult", "rag", "cost"]
