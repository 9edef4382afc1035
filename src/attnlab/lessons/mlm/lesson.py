"""Bidirectional against causal (course chapter 1 §1.5): guess a hidden character from both sides or from the left.

An encoder (BERT-style, attnlab.models.Encoder) is trained on masked-character prediction: some characters of
a window are replaced by [MASK] and its token head guesses them from every other position, left and right.
A GPT of the same size (attnlab.models.GPT) is trained as usual to guess the next character, so it predicts a
character from the ones on its left only. A third model, the same GPT, is trained on the encoder's own task (fill
the [MASK]) with its causal mask: left only, like the GPT, but like the encoder it must fetch every clue through
attention, since the [MASK] on its own position says nothing. So bidirectional against causal_fill changes the
direction alone; causal against causal_fill shows what reading the previous character on one's own position is
worth. All three train the same steps on the same windows; then every character
(punctuation aside) of texts neither ever saw is hidden, one at a time, and each model guesses it, choosing
among the characters (punctuation, <eot> and [MASK] are never a guess).

The text is the generated couplets of mlm_task (the page's default: the answer to a 上联 character lies on its
right, in the 下联) or real poems from a path (CLI and Python: e.g. 全唐诗 from the chinese-poetry collection).
The split is by text: every 5th one is held out whole; no training window ever contains a held-out character.
Accuracies are counted per verse too: the first verse of each couplet (出句, 上联) and the second (对句, 下联).
Which model comes out ahead is read off the numbers, not assumed. That the causal model cannot see the right
side is structural and checked exactly: changing every character after position i leaves its output at i
unchanged (difference 0). The claims, and the paired leads they are judged by, are in claims.py; the shortcut
(causal against causal_fill) is a question of how training goes, so it is counted over `seeds` seeds of those two
(held_out.left_pair), one seed being no count at all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

import torch

from attnlab.lessons.common.claims import Claim
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import CHANCE, Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.mlm import task as mlm_task
from attnlab.lessons.mlm.claims import PAIRS, claims_of, lead_z
from attnlab.lessons.mlm.held_out import HOLD_EVERY, MAX_SEEDS, left_pair, split, streams
from attnlab.lessons.mlm.models import (
    MODELS,
    N_HEADS,
    guess_logits,
    maskable,
    predict,
    right_change,
    train_one,
)
from attnlab.lessons.mlm.task import COUPLETS
from attnlab.train import progress

N_EXAMPLES = 2  # held-out texts shown character by character
TOP = 5  # guesses listed for the learner's own blank
HOLES = ("[?]", "［?］", "[？]", "［？］", "?", "？")  # how a learner marks the blank: 床前?月光
POEM_EXAMPLE = "床前?月光，疑是地上霜。"


def context_of(corpus_name: str) -> int:
    """Window length: a couplet is 12 characters with its marks, so 16 sees any character's pair; a poem's
    couplet can be 16 (七言), so real poems get 32."""
    return 16 if corpus_name == COUPLETS else 32


PARAMS = (
    Param(
        "corpus",
        "str",
        "",
        max_len=4096,
        cli_only=True,
        help="poems from a path (CLI and Python only): a chinese-poetry folder or glob, a .json file, or a .txt "
        "with one poem a line; empty: the built-in generated couplets",
    ),
    Param(
        "text",
        "str",
        "",
        max_len=31,
        help="a line with one blank marked ? (床前?月光): both models' guesses for it; empty: the corpus's example",
    ),
    Param("steps", "int", 600, 20, 1000, step=10, help="training steps of each model"),
    Param("d_model", "int", 32, 8, 128, step=8, help="model width of both models (2 heads, 2 layers)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
    Param(
        "seeds",
        "int",
        1,
        1,
        MAX_SEEDS,
        step=1,
        help="seeds of the two left-only GPTs for the shortcut count: seed, seed + 1, ... (one: no count)",
    ),
)
QUICK = {"steps": 20, "d_model": 8}
# Each claim's strongest null (lessons/common/nulls.py), in the same run: the GPTs trained alike that read the left
# only (their blindness is the causal_blind identity), and for the shortcut a coin per seed of the left-only pair.
NULLS = {"accuracy": Null("left_only"), "direction": Null("left_only"), "shortcut": CHANCE}
COURSE = ("lecture06", 120)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Guess:
    char: str  # the hidden character
    bidirectional: str  # the encoder's guess
    causal: str  # the GPT's guess
    causal_fill: str  # the guess of the GPT trained to fill the blank from the left


@dataclass
class Example:
    poem: str
    guesses: list[Guess]  # one per masked character, in order


@dataclass
class Candidate:
    char: str
    p: float  # the model's probability for it, among the characters (punctuation, <eot>, [MASK] excluded)


@dataclass
class Fill:
    text: str  # the learner's line, the blank shown as [?]
    position: int  # the blank's index in the line (from 0)
    bidirectional: list[Candidate]  # the encoder's TOP guesses, most probable first
    causal: list[Candidate]  # the GPT's, from the characters left of the blank only
    causal_fill: list[Candidate]  # the fill-the-blank GPT's, from the same characters


@dataclass
class MlmResult(Shown):
    topic: str
    params: dict
    corpus: str  # "couplets" or the file or folder's name
    n_poems: int
    n_train_poems: int
    n_test_poems: int  # held out whole: never inside a training window
    n_train_chars: int
    vocab_size: int  # characters + the end-of-text mark + [MASK]
    context: int  # window length of both models
    n_params: dict  # model -> parameters used (the encoder's unused classification head left out)
    n_masked: int  # held-out characters hidden one at a time (punctuation is not)
    n_unseen: int  # of them, characters that never occur in the training texts: no model can get them
    correct: dict  # model -> how many it guessed right
    accuracy: dict  # model -> correct / n_masked; "baseline": always the most frequent training character
    held_out_loss: dict  # model -> mean -ln p(the hidden character) over the held-out characters (p among characters)
    n_by_verse: dict  # "first" (出句 / 上联) and "second" (对句 / 下联) -> hidden characters in such verses
    by_verse: dict  # model -> {"first": accuracy, "second": accuracy}
    chance: float | None  # couplets: 1 / 40, a guess among the pairs' characters; None for real poems
    baseline_char: str
    final_loss: dict  # model -> last training batch's loss
    causal_right_change: float  # max |Δ logits| at positions <= i when every character after i changes: GPT
    encoder_right_change: float  # the same for the encoder
    paired: dict  # "a-b" -> z_accuracy, z_loss: a's lead over b, per-character differences in standard errors (below)
    shortcut_seeds: (
        list  # per seed of the left-only pair, from `seed` on: {seed, z_accuracy, z_loss, causal, causal_fill}
    )
    fill: Fill
    examples: list[Example]
    claims: list[Claim]


def read_poems(corpus: str) -> tuple[list[str], str]:
    """The texts to split: the generated couplets (mlm_task), or poems from a path: a chinese-poetry folder or
    glob (simplified script), a chinese-poetry .json file, or a .txt file with one poem a line."""
    from pathlib import Path

    from attnlab.text import read_corpus
    from attnlab.text.poetry import is_poetry_collection, read_poetry
    from attnlab.train.data import check_corpus

    spec = corpus.strip()
    if not spec:
        return mlm_task.couplets(), COUPLETS
    try:
        check_corpus(spec)  # a regular file or folder of them, within the size limit: a FIFO would block forever
        texts = read_poetry(spec).poems if is_poetry_collection(spec) else read_corpus(spec)
    except (ValueError, OSError) as err:  # OSError: a name too long, no permission ...
        raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=corpus[:80]) from None
    if len(texts) == 1:  # a .txt file: one poem a line
        texts = [line.strip() for line in texts[0].splitlines() if line.strip()]
    texts = list(
        dict.fromkeys(texts)
    )  # a poem printed twice (唐诗三百首 has 14) must not sit on both sides of the split
    if len(texts) < HOLD_EVERY:
        raise ParamError(
            f"corpus needs at least {HOLD_EVERY} poems to hold one out, got {len(texts)}",
            "corpus",
            "explain.mlm.error.few_poems",
            n=len(texts),
            need=HOLD_EVERY,
        )
    return texts, Path(spec).name


def verse_parity(poem: str) -> list[int]:
    """For each maskable character: 0 in a couplet's first verse (出句, 上联), 1 in its second (对句, 下联).
    A verse ends at punctuation or a line break."""
    out, verse, in_verse = [], 0, False
    for ch in poem:
        if maskable(ch):
            out.append(verse % 2)
            in_verse = True
        elif in_verse:
            verse, in_verse = verse + 1, False
    return out


def parse_blank(text: str) -> tuple[str, int]:
    """'床前?月光' -> ('床前月光' without the blank, 2): the line and where its one blank is."""
    marks = [(text.find(h), h) for h in HOLES if h in text]
    if not marks:
        raise ParamError(
            f"text needs one blank marked ? (e.g. {POEM_EXAMPLE}), got {text!r}",
            "text",
            "explain.mlm.error.no_blank",
            example=POEM_EXAMPLE,
        )
    at, hole = min(marks, key=lambda m: (m[0], -len(m[1])))  # [?] before the ? inside it
    rest = text[:at] + text[at + len(hole) :]
    if any(h in rest for h in HOLES):
        raise ParamError(f"text has more than one blank: {text!r}", "text", "explain.mlm.error.two_blanks")
    return rest, at


@dataclass
class Trained:
    vocab_size: int
    n_params: dict
    n_train_chars: int
    n_masked: int
    n_unseen: int
    correct: dict
    held_out_loss: dict
    paired: dict
    n_by_verse: dict
    correct_by_verse: dict
    baseline_char: str
    final_loss: dict
    right: dict
    examples: list
    models: dict  # the trained models, for the learner's own blank
    tokenizer: object
    allowed: torch.Tensor


_lock = threading.Lock()


@lru_cache(maxsize=8)
def trained(poems: tuple[str, ...], steps: int, d: int, context: int, seed: int) -> Trained:
    """Train the three models and guess every maskable held-out character; cached, so a second visit is instant."""
    train, test = split(list(poems))
    tok, vocab, train_stream, test_stream, where, allowed = streams(poems)
    mask_id = vocab - 1
    models, final_loss = {}, {}
    for kind in MODELS:
        progress.report(kind, 0, steps)  # every model listed from the start
    for kind in MODELS:
        models[kind], final_loss[kind] = train_one(kind, train_stream, vocab, d, context, steps, seed)
    truth = test_stream[where]  # (n,)
    guesses, nll = predict(models, test_stream, where, mask_id, allowed, context)
    counts = torch.bincount(train_stream, minlength=vocab)
    counts[~allowed] = 0  # the baseline guesses among the same characters
    common = int(counts.argmax())
    guesses["baseline"] = torch.full_like(truth, common)
    right = {k: v == truth for k, v in guesses.items()}  # (n,) bool each
    parity = torch.tensor([v for poem in test for v in verse_parity(poem)], dtype=torch.long)  # (n,)
    n_by_verse = {name: int((parity == v).sum()) for v, name in enumerate(("first", "second"))}
    correct_by_verse = {
        k: {name: int(r[parity == v].sum()) for v, name in enumerate(("first", "second"))} for k, r in right.items()
    }
    seen = set(train_stream.tolist())
    n_unseen = sum(int(j) not in seen for j in truth.tolist())
    n_params = {
        k: sum(p.numel() for n, p in m.named_parameters() if not n.startswith("class_head")) for k, m in models.items()
    }
    examples, k = [], 0
    for poem in test:
        n = sum(maskable(ch) for ch in poem)
        if len(examples) < N_EXAMPLES:
            rows = range(k, k + n)
            examples.append(
                Example(
                    poem,
                    [Guess(tok.token(int(truth[r])), *[tok.token(int(guesses[k][r])) for k in MODELS]) for r in rows],
                )
            )
        k += n
    held_out_loss = {k: float(v.mean()) if len(v) else None for k, v in nll.items()}
    paired = {
        f"{a}-{b}": {"z_accuracy": lead_z(right[a].double() - right[b].double()), "z_loss": lead_z(nll[b] - nll[a])}
        for _, a, b in PAIRS
    }
    return Trained(
        vocab,
        n_params,
        len(train_stream),
        len(where),
        n_unseen,
        {k: int(r.sum()) for k, r in right.items()},
        held_out_loss,
        paired,
        n_by_verse,
        correct_by_verse,
        tok.token(common),
        final_loss,
        right_change(models, test_stream, tok.vocab_size - 1, context),
        examples,
        models,
        tok,
        allowed,
    )


def fill_blank(tr: Trained, text: str, context: int) -> Fill:
    """Each model's TOP guesses for the learner's blank; every other character must be one the models know."""
    line, at = parse_blank(text)
    unknown = tr.tokenizer.unknown(line)
    if unknown:
        raise ParamError(
            f"text has characters the models never saw: {''.join(unknown)}",
            "text",
            "explain.mlm.error.unknown_chars",
            chars="".join(unknown),
        )
    ids = [tr.tokenizer.eot_id] + tr.tokenizer.encode(line)  # <eot> first, as every training text follows one
    j = at + 1  # the blank's place in ids
    stream = torch.tensor(ids[:j] + [tr.vocab_size - 1] + ids[j:])  # (n + 2,): [MASK] where the blank is
    logits = {
        kind: row for kind, _, row in guess_logits(tr.models, stream, [j], tr.vocab_size - 1, context)
    }  # (1, V) each
    off = torch.where(tr.allowed, 0.0, float("-inf"))

    def top(row: torch.Tensor) -> list[Candidate]:
        p = torch.softmax(row + off, -1)  # (V,): among the characters only
        vals, idx = p.topk(min(TOP, int(tr.allowed.sum())))
        return [Candidate(tr.tokenizer.token(int(i)), float(v)) for v, i in zip(vals, idx)]

    shown = line[:at] + "[?]" + line[at:]
    return Fill(shown, at, *[top(logits[k][0]) for k in MODELS])


def cost(p: dict) -> Cost:
    """Trains three small models (stoppable at every step); a width rotary positions cannot turn, or a bad
    blank, is refused before."""
    if p["d_model"] % (2 * N_HEADS):  # rotary positions turn pairs of a head's dimensions
        raise ParamError(
            f"d_model must be a multiple of {2 * N_HEADS} ({N_HEADS} heads of even width), got {p['d_model']}",
            "d_model",
            "explain.error.even_heads",
            width="d_model",
            d=p["d_model"],
            h=N_HEADS,
        )
    if p["text"].strip():
        parse_blank(p["text"].strip())
    # training's activations grow with the width (0.25 MiB per unit of d_model measured at 128), and each seed of
    # the shortcut's count keeps its pair of models (tests/cost_peaks.py); erring high
    return Cost(24.0 + 0.3 * p["d_model"] + 4.0 * p["seeds"], trains=True)


@lesson
def mlm(
    corpus: str = "",
    text: str = "",
    steps: int = 600,
    d_model: int = 32,
    seed: int = 0,
    seeds: int = 1,
    *,
    lang: str = "zh",
) -> MlmResult:
    """Train an encoder (masked characters), a GPT (next character) and a GPT filling masked characters from the
    left, then hide held-out characters one at a time."""
    p = check(PARAMS, dict(corpus=corpus, text=text, steps=steps, d_model=d_model, seed=seed, seeds=seeds))
    cost(p)
    poems, name = read_poems(p["corpus"])
    context = context_of(name)
    blank = p["text"].strip() or (mlm_task.EXAMPLE if name == COUPLETS else POEM_EXAMPLE)
    parse_blank(blank)  # a bad blank is refused before any training
    with _lock:  # one computation at a time: two visits with the same settings share one cached answer
        tr = trained(tuple(poems), p["steps"], p["d_model"], context, p["seed"])
        fill = fill_blank(tr, blank, context)
        more = range(p["seed"] + 1, p["seed"] + p["seeds"])  # the shortcut's other seeds: the left-only pair only
        for k in ("causal_seeds", "causal_fill_seeds") if len(more) else ():
            progress.report(k, 0, p["steps"])
        others = [left_pair(tuple(poems), p["steps"], p["d_model"], context, s) for s in more]
    first = tr.paired["causal-causal_fill"]
    c = {k: tr.correct[k] / tr.n_masked if tr.n_masked else None for k in PAIRS[2][1:]}
    shortcut_seeds = [{"seed": p["seed"], **first, **c}, *others]
    train, test = split(poems)
    n = tr.n_masked
    accuracy = {k: (v / n if n else None) for k, v in tr.correct.items()}
    by_verse = {
        k: {v: (c[v] / tr.n_by_verse[v] if tr.n_by_verse[v] else None) for v in c}
        for k, c in tr.correct_by_verse.items()
    }
    result = MlmResult(
        "mlm",
        p,
        name,
        len(poems),
        len(train),
        len(test),
        tr.n_train_chars,
        tr.vocab_size,
        context,
        tr.n_params,
        n,
        tr.n_unseen,
        dict(tr.correct),
        accuracy,
        dict(tr.held_out_loss),
        dict(tr.n_by_verse),
        by_verse,
        1 / len(mlm_task.CHARS) if name == COUPLETS else None,
        tr.baseline_char,
        tr.final_loss,
        tr.right["causal"],
        tr.right["bidirectional"],
        dict(tr.paired),
        shortcut_seeds,
        fill,
        tr.examples,
        [],
    )
    result.claims = claims_of(result, lang)
    return result


__all__ = [
    "mlm",
    "MlmResult",
    "MODELS",
    "PARAMS",
    "split",
    "read_poems",
    "trained",
    "maskable",
    "verse_parity",
    "parse_blank",
    "COUPLETS",
]
