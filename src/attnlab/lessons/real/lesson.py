"""A real pretrained model (all-MiniLM-L6-v2, 6 layers x 12 heads) on the learner's own sentence.

Everything here runs attnlab's own `Encoder` with the checkpoint's weights (`attnlab.pretrained.load`) and
reads the attention maps through `attnlab.trace`. Layers and heads are numbered from 1, as the page shows them.
The model was trained on English; other text becomes [UNK] or single characters.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from attnlab.display.fmt import num, rounded
from attnlab.i18n import t
from attnlab.io.threads import one_thread
from attnlab.lessons.common.bad_input import BadInput, shown
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.result import Shown
from attnlab.lessons.real.coref import COREF_PAIRS, CorefCase, CorefPair, claims_of, count_case, count_pair, finding
from attnlab.lessons.real.patterns import PATTERNS, is_sep_or_punct, pattern_scores
from attnlab.pretrained import INSTALL, NotInstalled, installed, load
from attnlab.trace import trace

MODEL = "all-MiniLM-L6-v2"
MAX_TOKENS = 64  # [CLS] and [SEP] included; 72 maps of 64 x 64 are already a lot to look at
DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
DIGITS = 4  # weights are rounded to this many decimals in the results, honestly (display.fmt.rounded)

# The set the head patterns are measured on: plain English of different shapes and lengths.
PATTERN_SENTENCES = (
    "The animal didn't cross the street because it was too tired.",
    "A cat chased a mouse across the kitchen floor.",
    "Attention lets every word look at every other word in the sentence.",
    "She opened the window, and cold air filled the room.",
    "Paris is the capital of France, and Berlin is the capital of Germany.",
    "The students who finished early went home before the storm.",
    "If it rains tomorrow, we will stay inside and read books.",
    "He bought apples, bread, milk and eggs at the small shop on the corner.",
)

PRONOUN = "it"


class ModelMissing(BadInput):
    """all-MiniLM-L6-v2's package is not installed; the sentence says the one line that installs it."""

    def __init__(self) -> None:
        super().__init__("real.err.missing", None, cmd=INSTALL)


_load_lock = threading.Lock()
_model = None


def _loaded():
    global _model
    with _load_lock:  # two first requests at once load it once
        if _model is None:
            _model = load("minilm")
    return _model


def real_model():
    """(model, tokenizer), loaded once per process; ModelMissing when the weights package is not installed."""
    if not installed():
        raise ModelMissing()
    try:
        return _loaded()
    except NotInstalled:
        raise ModelMissing() from None


def model_available() -> bool:
    return installed()


# ---- one sentence --------------------------------------------------------------------------------------


@dataclass
class HeadDetail:
    """One head's full map, and beside each weight the size of what it actually adds: ||a_ij v_j||."""

    layer: int  # 1-based
    head: int  # 1-based
    weights: list[list[float]]  # (T, T), row i = query i
    value_norms: list[float]  # ||v_j|| in this head's value space (d_k = 32)
    contribution_norms: list[list[float]]  # (T, T): ||a_ij v_j|| = a_ij ||v_j||
    top_weight: list[int]  # per query: the key with the largest weight
    top_contribution: list[int]  # per query: the key with the largest ||a_ij v_j||
    disagreements: int  # queries whose top weight and top contribution are different keys


@dataclass
class RealAnalysis:
    model: str
    text: str
    tokens: list[str]  # WordPiece pieces, with [CLS] and [SEP]
    ids: list[int]
    n_layers: int
    n_heads: int
    weights: list[list[list[list[float]]]]  # (L, H, T, T)
    sentence_scores: dict[str, list[list[float]]]  # this sentence's head-pattern scores, pattern -> (L, H)
    patterns: HeadPatterns  # measured on PATTERN_SENTENCES
    detail: HeadDetail | None  # the chosen head, if one was chosen
    unknown: list[str] = field(default_factory=list)  # words that became [UNK]


def _encode(tok, text: str):
    if not isinstance(text, str) or not text.strip():
        raise BadInput("real.err.empty", "text")
    enc = tok.encode_full(text)
    if len(enc.ids) > MAX_TOKENS:
        raise BadInput("real.err.long", "text", n=len(enc.ids), max=MAX_TOKENS)
    return enc


def _rounded(x: torch.Tensor, digits: int = DIGITS):
    """x rounded to `digits` decimals, except where that would make a number whole that is not (0.99980 -> 1.0,
    4e-5 -> 0.0, which would read as masked): those keep what fmt.rounded keeps."""
    x = x.double()
    r = torch.round(x, decimals=digits)
    wrong = (r == r.round()) & (r != x)
    k = 1 - torch.floor(torch.log10(x.abs()))  # decimals that keep 2 significant digits of a tiny number
    tiny = wrong & (r == 0) & (k <= 22)  # the many: as fmt.tiny, at tensor speed (10**k is exact up to 22)
    if tiny.any():
        scale = torch.pow(10.0, k[tiny])
        r[tiny] = torch.round(x[tiny] * scale) / scale
    rest = wrong & ~tiny  # the few: next to a whole number, or below 1e-21
    if rest.any():
        r[rest] = torch.tensor([rounded(v, digits) for v in x[rest].tolist()], dtype=torch.float64)
    return r.tolist()


def _run(text: str):
    """(encoding, trace) of one sentence; weights of layer l at tr[f'layers.{l}.attn.weights'] (1, H, T, T)."""
    model, tok = real_model()
    enc = _encode(tok, text)
    with one_thread():
        tr = trace(model, torch.tensor([enc.ids]))
    return enc, tr


def _stack_weights(tr, n_layers: int) -> torch.Tensor:
    return torch.stack([tr[f"layers.{i}.attn.weights"][0] for i in range(n_layers)])  # (L, H, T, T)


def head_detail(tr, layer: int, head: int) -> HeadDetail:
    """The full map of one head (1-based) with the contribution norms ||a_ij v_j||."""
    a = tr.head(layer - 1, head - 1, "weights")[0]  # (T, T)
    v = tr.head(layer - 1, head - 1, "v")[0]  # (T, d_k)
    v_norm = v.norm(dim=-1)  # (T,)
    contrib = a * v_norm[None, :]  # (T, T): ||a_ij v_j|| = a_ij ||v_j|| since a_ij >= 0
    top_w, top_c = a.argmax(-1).tolist(), contrib.argmax(-1).tolist()
    return HeadDetail(
        layer,
        head,
        _rounded(a),
        _rounded(v_norm, 3),
        _rounded(contrib, 3),
        top_w,
        top_c,
        sum(w != c for w, c in zip(top_w, top_c)),
    )


def _check_head(layer, head, n_layers: int, n_heads: int) -> None:
    if layer is None and head is None:
        return
    if layer is None or head is None:
        raise BadInput("real.err.pair", "layer" if layer is None else "head")
    if not (isinstance(layer, int) and 1 <= layer <= n_layers):
        raise BadInput("real.err.layer", "layer", n=n_layers, got=shown(layer))
    if not (isinstance(head, int) and 1 <= head <= n_heads):
        raise BadInput("real.err.head", "head", n=n_heads, got=shown(head))


def analyse(text: str = DEFAULT_TEXT, layer: int | None = None, head: int | None = None) -> RealAnalysis:
    """Tokens, every layer x head's attention map, head-pattern scores; the full map of one head if chosen."""
    model, tok = real_model()
    c = model.config
    _check_head(layer, head, c.n_layers, c.n_heads)
    enc, tr = _run(text)
    w = _stack_weights(tr, c.n_layers)  # (L, H, T, T)
    marks = [is_sep_or_punct(x) for x in enc.tokens]
    scores = (
        pattern_scores(w, marks) if len(enc.ids) >= 2 else {p: torch.zeros(c.n_layers, c.n_heads) for p in PATTERNS}
    )
    unknown = [text[a:b] for (a, b), i in zip(enc.offsets, enc.ids) if i == tok.id_of("[UNK]")]
    return RealAnalysis(
        model=MODEL,
        text=text,
        tokens=enc.tokens,
        ids=enc.ids,
        n_layers=c.n_layers,
        n_heads=c.n_heads,
        weights=_rounded(w),
        sentence_scores={p: _rounded(s, 3) for p, s in scores.items()},
        patterns=head_patterns(),
        detail=head_detail(tr, layer, head) if layer is not None else None,
        unknown=unknown,
    )


# ---- head patterns on a set of sentences ----------------------------------------------------------------


@dataclass
class HeadScore:
    layer: int  # 1-based
    head: int  # 1-based
    score: float


@dataclass
class HeadPatterns:
    sentences: list[str]
    patterns: list[str]
    scores: dict[str, list[list[float]]]  # pattern -> (L, H), the mean over the sentences
    ranking: dict[str, list[HeadScore]]  # pattern -> every head, highest score first


@lru_cache(maxsize=1)
def head_patterns() -> HeadPatterns:
    """Each head's six pattern scores, averaged over PATTERN_SENTENCES, and the heads ranked by each."""
    model, _ = real_model()
    total = None
    for text in PATTERN_SENTENCES:
        enc, tr = _run(text)
        s = pattern_scores(_stack_weights(tr, model.config.n_layers), [is_sep_or_punct(x) for x in enc.tokens])
        total = s if total is None else {p: total[p] + s[p] for p in PATTERNS}
    mean = {p: total[p] / len(PATTERN_SENTENCES) for p in PATTERNS}  # (L, H) each
    ranking = {}
    for p in PATTERNS:
        flat = mean[p].flatten()
        order = torch.argsort(flat, descending=True, stable=True).tolist()
        H = mean[p].shape[1]
        ranking[p] = [HeadScore(i // H + 1, i % H + 1, rounded(float(flat[i]), 3)) for i in order]
    return HeadPatterns(list(PATTERN_SENTENCES), list(PATTERNS), {p: _rounded(m, 3) for p, m in mean.items()}, ranking)


# ---- coreference ----------------------------------------------------------------------------------------


@dataclass
class Coreference(Shown):
    cases: list[CorefCase]  # the six sentences, pair by pair
    pairs: list[CorefPair]  # the three minimal pairs, head by head
    claims: list[Claim]
    finding: str  # what the heads follow, said from the counts
    caveat: str


def _positions(tokens: list[str], word: str) -> list[int]:
    """Positions of a candidate word; a word split into pieces is every piece of its first occurrence."""
    for i, tok in enumerate(tokens):
        if tok == word:
            return [i]
    raise ValueError(f"{word!r} is not a single piece of {tokens}")


def pronoun_reads(text: str, candidates) -> tuple[list[str], int, torch.Tensor]:
    """(tokens, the pronoun's position, (L, H, 2) float64): the weight "it" gives each candidate in every head,
    unrounded."""
    model, _ = real_model()
    enc, tr = _run(text)
    w = _stack_weights(tr, model.config.n_layers).double()  # (L, H, T, T)
    it = _positions(enc.tokens, PRONOUN)[0]
    reads = torch.stack([w[:, :, it, _positions(enc.tokens, c)].sum(-1) for c in candidates], -1)
    return enc.tokens, it, reads


@lru_cache(maxsize=2)
def coreference(lang: str = "zh") -> Coreference:
    """For each sentence of three minimal pairs: how much "it" attends to each candidate in every head, how many
    heads prefer the implied referent (ties apart, against chance), and whether the heads switch with the meaning
    or keep the first noun. Measured; the claims say what the counts do and do not show."""
    cases, pairs = [], []
    for pair_id, candidates, sentences in COREF_PAIRS:
        two = []
        for case_id, text, implied in sentences:
            tokens, it, reads = pronoun_reads(text, candidates)
            two.append(count_case(case_id, pair_id, text, tokens, it, candidates, implied, reads))
        cases += two
        pairs.append(count_pair(pair_id, *two))
    claims = claims_of(cases, pairs, lang)
    return Coreference(cases, pairs, claims, finding(pairs, claims, lang), t("real.coref.caveat", lang))


# ---- embeddings -----------------------------------------------------------------------------------------


@dataclass
class Neighbour:
    token: str
    cosine: float


@dataclass
class Embeddings(Shown):
    word: str
    word_id: int
    d_model: int
    vocab_size: int
    neighbours: list[Neighbour]  # nearest whole-word entries of the input table by cosine, the word excluded
    analogy: list[str]  # ["king", "man", "woman", "queen"]: king - man + woman, looking for queen
    analogy_rank: int  # queen's rank among whole-word entries (1 = nearest), the three inputs excluded
    analogy_top: list[Neighbour]
    analogy_cosine: float  # cos(king - man + woman, queen)
    pair: list[str]  # ["king", "queen"]
    onehot_cosine: float  # cos(one_hot(king), one_hot(queen)): 0 for any two different words
    dense_cosine: float  # cos(E[king], E[queen])
    claims: list[Claim]
    analogy_rank_king_alone: int = 0  # the control: queen's rank among king's own neighbours (the same words left out)
    typical_cosine: float = 0.0  # the control: king's mean cosine with every whole word
    typical_q99: float = 0.0  # ... and the cosine only 1 whole word in 100 exceeds


ANALOGY = ("king", "man", "woman", "queen")  # king - man + woman, looking for queen; the pair is (king, queen)
NEARER = 0.99  # "related" means nearer than 99 whole words in 100
WORD = re.compile(r"[a-z]+")  # whole-word entries: no [CLS]/[unused12], no ##pieces, no punctuation or digits


@lru_cache(maxsize=1)
def _table():
    """The input embedding table, its rows unit-normalized, and which rows are whole words."""
    model, tok = real_model()
    E = model.embed.tok.weight.detach()  # (vocab, d_model)
    unit = E / E.norm(dim=-1, keepdim=True)
    words = torch.tensor([bool(WORD.fullmatch(tok.token(i))) for i in range(tok.vocab_size)])
    return E, unit, words


def _word_id(tok, word: str, field_name: str = "word") -> int:
    if not isinstance(word, str) or not word.strip():
        raise BadInput("real.err.word_empty", field_name)
    w = word.strip().lower()
    i = tok.id_of(w)
    if i is None or not WORD.fullmatch(w):
        pieces = tok.encode_full(w).tokens[1:-1]
        raise BadInput("real.err.word", field_name, word=shown(word), pieces=" ".join(pieces))
    return i


def _nearest(vector: torch.Tensor, exclude: list[int], k: int) -> tuple[list[tuple[int, float]], torch.Tensor]:
    """The k whole-word rows nearest `vector` by cosine (excluded ids left out), and every row's cosine."""
    _, unit, words = _table()
    cos = unit @ (vector / vector.norm())  # (vocab,)
    cos = cos.masked_fill(~words, float("-inf"))
    cos[exclude] = float("-inf")
    top = torch.topk(cos, k)
    return list(zip(top.indices.tolist(), top.values.tolist())), cos


def embeddings(word: str = "king", k: int = 10, lang: str = "zh") -> Embeddings:
    """Nearest neighbours of `word` in the input table; king - man + woman vs queen; one-hot vs dense."""
    model, tok = real_model()
    E, unit, words = _table()
    i = _word_id(tok, word)
    near, _ = _nearest(E[i], [i], k)
    a, b, c, target = (tok.id_of(x) for x in ANALOGY)
    v = E[a] - E[b] + E[c]  # (d_model,)
    top, cos = _nearest(v, [a, b, c], k)
    rank = int((cos > cos[target]).sum()) + 1
    _, alone = _nearest(E[a], [a, b, c], 1)  # the control: king alone, without - man + woman
    rank_alone = int((alone > alone[target]).sum()) + 1
    onehot_a, onehot_t = torch.zeros(tok.vocab_size), torch.zeros(tok.vocab_size)
    onehot_a[a], onehot_t[target] = 1.0, 1.0
    onehot_cos = float(onehot_a @ onehot_t)  # both unit vectors
    dense_cos = float(unit[a] @ unit[target])
    others = words.clone()
    others[a] = False
    typical = (unit[others] @ unit[a]).double()  # king's cosine with every other whole word: what an unrelated one gets
    typical_mean, typical_q = float(typical.mean()), float(torch.quantile(typical, NEARER))
    x, y = ANALOGY[0], ANALOGY[3]
    claims = [
        # The arithmetic must bring queen to rank 1 from a lower place among king's own neighbours.
        lead(
            "analogy_top1",
            t("real.emb.claim.analogy", lang, rank=rank, alone=rank_alone),
            lang,
            measured=rank,
            baseline=rank_alone,
            margin=max(rank_alone - 1, 1),
            lower=True,
            control=t("real.control.king_alone", lang),
            values={"rank": rank, "rank_king_alone": rank_alone},
        ),
        within(
            "onehot_zero",
            t("real.emb.claim.onehot", lang, cos=num(onehot_cos), x=x, y=y),
            lang,
            measured=onehot_cos,
            expected=0.0,
            tol=0.0,
            control=t("real.control.orthogonal", lang),
            values={"cosine": onehot_cos},
        ),
        lead(
            "dense_related",
            t("real.emb.claim.dense", lang, cos=num(dense_cos), mean=num(typical_mean), bound=num(typical_q), x=x, y=y),
            lang,
            measured=dense_cos,
            baseline=typical_mean,
            margin=typical_q - typical_mean,
            control=t("real.control.typical", lang, x=x),
            values={"cosine": dense_cos, "typical_mean": typical_mean, "typical_q99": typical_q},
        ),
    ]
    return Embeddings(
        word=tok.token(i),
        word_id=i,
        d_model=E.shape[1],
        vocab_size=E.shape[0],
        neighbours=[Neighbour(tok.token(j), rounded(s, 4)) for j, s in near],
        analogy=list(ANALOGY),
        analogy_rank=rank,
        analogy_top=[Neighbour(tok.token(j), rounded(s, 4)) for j, s in top],
        analogy_cosine=rounded(float(cos[target]), 4),
        pair=[x, y],
        onehot_cosine=onehot_cos,
        dense_cosine=rounded(dense_cos, 4),
        claims=claims,
        analogy_rank_king_alone=rank_alone,
        typical_cosine=rounded(typical_mean, 4),
        typical_q99=rounded(typical_q, 4),
    )
