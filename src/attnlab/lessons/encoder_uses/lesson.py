"""Chapter 01: what an encoder-only model is for. Three uses, on models the lab has: a sentence's vector (mean-pooled
states) whose nearest neighbours share its meaning; one label for a whole line read off that vector; a label for each
character (the shape of NER tagging). Each against what a model that ignores context gets: a bag of words, a bag of
characters, a character's own frequency.

The experiment (runs.py, task.py): one encoder of 2 blocks with a line head and a tag head, trained `seeds` times on
6,000 generated couplets (对对子), half of them spoilt by one wrong character; measured on 400 other couplets. The
sentence vectors (sentences.py) are all-MiniLM-L6-v2's, where it is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import NOT_SHOWN, Claim, beats_chance, lead, weakest
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import CHANCE, Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.encoder_uses import runs, sentences, task
from attnlab.pretrained import INSTALL
from attnlab.train import progress

CLASSIFY_MARGIN = 0.1  # the encoder's line accuracy over the bag of characters', in every seed (400 test lines)
TAG_MARGIN = 0.2  # its share of spoilt lines where it points at the wrong character, over the frequency tagger's
NULLS = {
    "classifies": Null("shuffled", shuffle=True),
    "tags": Null("shuffled", shuffle=True),
    "neighbours": CHANCE,
}
TEXT = "天山红日高，地水绿雨低。"  # 月 would answer 日: the fourth character of the 下联 is wrong
QUERY = "Where can I get something to eat?"

PARAMS = (
    Param("steps", "int", 500, 0, 3000, step=10, help="training steps of each encoder (0: untrained)"),
    Param("seeds", "int", 3, 1, 5, step=1, help="how many encoders are trained (seeds 0, 1, ...)"),
    Param("text", "str", TEXT, max_len=task.LENGTH, help="a couplet of the lesson's 40 characters to classify and tag"),
    Param("query", "str", QUERY, max_len=sentences.MAX_QUERY, help="an English sentence: its nearest neighbours"),
    Param("shuffle", "bool", False, help="train on labels shuffled across the couplets (the null: nothing to learn)"),
)
QUICK = {"steps": 30, "seeds": 1}
COURSE = ("chapter01", 55)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Couplet:
    """The typed couplet through seed 0's encoder."""

    text: str
    chars: list[str]
    wrong: list[int]  # positions whose 下联 character does not answer its 上联 one (the truth)
    p_wrong: list[float]  # the tagger: each character's probability of being the wrong one
    frequency: list[float]  # the frequency tagger: how often each character was the wrong one in training
    p_spoilt: float  # the line classifier's probability that the couplet is spoilt
    neighbours: list[dict]  # the test couplets nearest by sentence vector: text, cosine, spoilt


@dataclass
class Sentences:
    """all-MiniLM-L6-v2's mean-pooled vectors on the lesson's twenty sentences (installed False: none)."""

    installed: bool
    sentences: list[str]
    topics: list[str]
    nearest: list[str]  # each sentence's nearest other by MiniLM's vectors
    hits: list[bool]  # it is on the same topic
    bag_nearest: list[str]  # the same by word counts
    bag_hits: list[bool]
    chance: float  # another sentence of its topic, at random
    query: str
    query_nearest: list[dict]  # sentence, cosine


@dataclass
class EncoderUsesResult(Shown):
    topic: str
    params: dict
    seeds: list[int]
    accuracy: dict  # "encoder": [per seed], "bag": the bag of characters' (line labels, test couplets)
    found: dict  # "encoder": [per seed], "frequency": the frequency tagger's (spoilt test couplets, chance 1/5)
    majority: float  # the test lines' larger class: what always guessing it gets
    n_train: int
    n_test: int
    n_spoilt: int  # spoilt test couplets
    couplet: Couplet
    sentences: Sentences
    note: str
    claims: list[Claim] = field(default_factory=list)


def _text_error(text: str) -> ParamError:
    return ParamError(
        f"text must be a couplet of the lesson's 40 characters, 5 + '，' + 5 + '。', got {text!r}",
        "text",
        "explain.encoder_uses.error.text",
        got=repr(text),
    )


def cost(p: dict) -> Cost:
    """Trains `seeds` small encoders (stoppable at every step) and runs MiniLM on twenty-one sentences."""
    if not task.is_couplet(p["text"].strip()):
        raise _text_error(p["text"])
    if not p["query"].strip():
        raise ParamError("query must be a sentence, got an empty one", "query", "explain.encoder_uses.error.query")
    return Cost(160.0, trains=True)  # MiniLM's 22.7 M float32 weights and their states on one sentence


@lru_cache(maxsize=4)
def trained(steps: int, seeds: int, shuffle: bool) -> tuple:
    """The encoders of seeds 0 .. seeds - 1, trained once for both languages and every typed input."""
    total = steps * seeds
    progress.report("encoder", 0, total)
    out = []
    for seed in range(seeds):
        done = seed * steps
        out.append(runs.train(seed, steps, shuffle, on_step=lambda s, d=done: progress.report("encoder", d + s, total)))
    return tuple(out)


@lru_cache(maxsize=4)
def measured(steps: int, seeds: int, shuffle: bool) -> list[dict]:
    return [runs.measure(m) for m in trained(steps, seeds, shuffle)]


@torch.no_grad()
def couplet(model: runs.Uses, text: str, rate: dict) -> Couplet:
    _, test = task.examples()
    ids, _, _ = task.encode([task.Example(text, None)])  # (1, T)
    v, line, per_char = model(ids)
    pool, _, _ = model(task.encode(test)[0])  # (N, d)
    cos = torch.nn.functional.cosine_similarity(pool, v, dim=-1)  # (N,)
    top = cos.argsort(descending=True)[:3].tolist()
    return Couplet(
        text,
        list(text),
        task.wrong_positions(text),
        per_char.softmax(-1)[0, :, 1].tolist(),
        [rate[ch] for ch in text],
        line.softmax(-1)[0, 1].item(),
        [{"text": test[i].text, "cosine": float(cos[i]), "spoilt": test[i].wrong is not None} for i in top],
    )


@lru_cache(maxsize=1)
def _sentence_vectors() -> tuple[torch.Tensor, list[int]]:
    v = sentences.vectors(sentences.SENTENCES)  # (20, d)
    return v, sentences.nearest(v)


def sentence_part(query: str) -> Sentences:
    bag = sentences.nearest(sentences.bag_vectors(sentences.SENTENCES))
    common = dict(
        sentences=list(sentences.SENTENCES),
        topics=list(sentences.TOPIC_OF),
        bag_nearest=[sentences.SENTENCES[j] for j in bag],
        bag_hits=sentences.same_topic(bag),
        chance=sentences.CHANCE,
        query=query,
    )
    if not sentences.installed():
        return Sentences(installed=False, nearest=[], hits=[], query_nearest=[], **common)
    v, nearest = _sentence_vectors()
    q = sentences.vectors([query])[0]
    close = [{"sentence": s, "cosine": c} for s, c in sentences.ranked(query, v, q)]
    texts = [sentences.SENTENCES[j] for j in nearest]
    return Sentences(True, nearest=texts, hits=sentences.same_topic(nearest), query_nearest=close, **common)


def claims_of(r: EncoderUsesResult, lang: str) -> list[Claim]:
    k = "explain.encoder_uses."
    seeds = r.params["seeds"]
    enc_acc, enc_found = r.accuracy["encoder"], r.found["encoder"]
    over_bag = weakest([a - r.accuracy["bag"] for a in enc_acc])
    over_freq = weakest([f - r.found["frequency"] for f in enc_found])
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    hint = t(k + "hint.steps", lang)
    claims = [
        lead(
            "classifies",
            t(
                k + "claim.classifies",
                lang,
                acc=mean(enc_acc),
                bag=r.accuracy["bag"],
                lead=over_bag,
                seeds=seeds,
                margin=CLASSIFY_MARGIN,
            ),
            lang,
            measured=over_bag,
            baseline=0.0,
            margin=CLASSIFY_MARGIN,
            control=t(k + "control.bag", lang),
            values={"encoder": enc_acc, "bag": r.accuracy["bag"], "smallest_lead": over_bag, "n_test": r.n_test},
            hint=hint,
        ),
        lead(
            "tags",
            t(
                k + "claim.tags",
                lang,
                found=mean(enc_found),
                freq=r.found["frequency"],
                lead=over_freq,
                seeds=seeds,
                n=r.n_spoilt,
                chance=1 / task.VERSE,
                margin=TAG_MARGIN,
            ),
            lang,
            measured=over_freq,
            baseline=0.0,
            margin=TAG_MARGIN,
            control=t(k + "control.frequency", lang),
            values={
                "encoder": enc_found,
                "frequency": r.found["frequency"],
                "smallest_lead": over_freq,
                "n_spoilt": r.n_spoilt,
                "chance": 1 / task.VERSE,
            },
            hint=hint,
        ),
    ]
    s = r.sentences
    n = len(s.sentences)
    control = t(k + "control.chance", lang, chance=s.chance)
    if s.installed:
        hits, bag = sum(s.hits), sum(s.bag_hits)
        claims.append(
            beats_chance(
                "neighbours",
                t(k + "claim.neighbours", lang, k=hits, n=n, bag=bag, chance=s.chance),
                lang,
                k=hits,
                n=n,
                p=s.chance,
                control=control,
                values={"bag": bag},
            )
        )
    else:
        text = t(k + "claim.neighbours_missing", lang, cmd=INSTALL)
        versus = control + " · " + t("explain.claim.status.not_shown", lang)
        claims.append(Claim("neighbours", text, None, None, False, NOT_SHOWN, control, None, None, "above", {}, versus))
    return claims


@lesson
def encoder_uses(
    steps: int = 500,
    seeds: int = 3,
    text: str = TEXT,
    query: str = QUERY,
    shuffle: bool = False,
    *,
    lang: str = "zh",
) -> EncoderUsesResult:
    """Sentence vectors, a line classifier and a per-character tagger, each beside a baseline that ignores context."""
    p = check(PARAMS, dict(steps=steps, seeds=seeds, text=text, query=query, shuffle=shuffle))
    cost(p)
    p["text"], p["query"] = p["text"].strip(), p["query"].strip()
    scores = measured(p["steps"], p["seeds"], p["shuffle"])
    base = runs.baselines(p["shuffle"])
    _, test = task.examples()
    spoilt = sum(e.wrong is not None for e in test)
    r = EncoderUsesResult(
        "encoder-uses",
        p,
        list(range(p["seeds"])),
        {"encoder": [s["accuracy"] for s in scores], "bag": base["accuracy"]},
        {"encoder": [s["found"] for s in scores], "frequency": base["found"]},
        max(spoilt, len(test) - spoilt) / len(test),
        task.N_TRAIN,
        task.N_TEST,
        spoilt,
        couplet(trained(p["steps"], p["seeds"], p["shuffle"])[0], p["text"], base["rate"]),
        sentence_part(p["query"]),
        t(
            "explain.encoder_uses.note" + ("_shuffled" if p["shuffle"] else ""),
            lang,
            steps=p["steps"],
            seeds=p["seeds"],
            n_train=task.N_TRAIN,
            n_test=task.N_TEST,
        ),
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "EncoderUsesResult", "encoder_uses", "cost"]
