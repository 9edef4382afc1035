"""Chapter 01: subwords. A model reads tokens, not characters: byte-level BPE (GPT-2's scheme) starts from the 256
bytes of UTF-8 and adds, one merge at a time, the pair of tokens seen most often. A 汉字 is three bytes, so with no
merge Chinese costs three tokens a character; merges make common characters, then common words, one token, while a
rare character stays split, and a token that holds part of a 汉字 prints as � on its own.

The experiment (runs.py): tokenizers trained on the lab's own words (or a corpus file) at vocabulary sizes from bytes
only (257) to `vocab`, beside twins trained on the same characters shuffled; tokens per character counted on the
held-out tenth; the vocabulary's tokens that hold two or more 汉字 counted; `text` cut token by token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnlab.i18n import t
from attnlab.lessons.bpe import runs
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.text.corpus import shuffled_chars

WORDS_MARGIN = 10  # tokens holding two or more 汉字 that the text's order must add over its shuffled twin
SHORTER_MARGIN = 0.5  # tokens per Chinese character the merges must save against bytes only
D_MODEL = 768  # GPT-2 small's width: the embedding table's cost per token of vocabulary
# Each claim's strongest null: for "merges shorten", no merge at all (vocab = 257, bytes only); for "words come from
# the order", tokenizers trained on the same characters shuffled. "Bytes only is UTF-8" is an identity.
NULLS = {"shorter": Null("bytes_only", vocab=runs.BYTES_ONLY), "words": Null("shuffled", shuffle=True)}

PARAMS = (
    Param("vocab", "int", 1024, runs.BYTES_ONLY, 4096, step=1, help="tokens in the vocabulary (257: bytes only)"),
    Param(
        "text",
        "str",
        "变压器 注意力 床前明月光 Transformer attention",
        max_len=200,
        help="a text to cut into tokens, token by token",
    ),
    Param("shuffle", "bool", False, help="train on the same characters shuffled (the null: no order to learn)"),
    Param(
        "corpus",
        "str",
        "",
        max_len=400,
        cli_only=True,
        help="empty: the lab's own words; or a .txt / .json corpus file (CLI and Python only)",
    ),
)
QUICK = {"vocab": 512}
COURSE = ("chapter01", 60)  # the course map's section (web/course_map.py) and place in it
HEAVY = False


@dataclass
class Piece:
    token: int  # its id
    shown: str  # the token decoded alone (� where it holds part of a character)
    bytes: str  # its UTF-8 bytes in hex
    partial: bool  # it holds part of a character: alone it does not decode


@dataclass
class WordPiece:
    word: str
    tokens: list[str]  # MiniLM's WordPiece tokens ("##" marks a piece inside a word)
    shown: str  # the tokens joined by " · "
    unknown: int  # how many are [UNK]: a character its vocabulary does not hold, its identity lost


@dataclass
class BpeResult(Shown):
    topic: str
    params: dict
    corpus: str  # "our words" or the file's name
    sizes: list[int]
    tokens_per_char: dict  # "zh", "en", "zh_shuffled", "en_shuffled" -> [per size]
    bytes_per_char: dict  # "zh", "en": UTF-8 bytes per character of the held-out text
    multi_han: dict  # "text", "shuffled" -> [tokens holding two or more 汉字, per size]
    embedding: list[int]  # per size: the embedding table's parameters at width D_MODEL
    pieces: list[Piece]  # `text` at `vocab`, token by token
    whole: str  # `text` encoded and decoded whole: itself
    examples: list[list[str]]  # [token, ...] of the longest multi-汉字 tokens at `vocab` (a few)
    n_train: int  # characters trained on
    note: str
    wordpiece: list[WordPiece] | None  # the course's words and `text` cut by MiniLM, where it is installed
    wordpiece_vocab: int | None  # its vocabulary's size
    wordpiece_han: int | None  # its tokens that are one whole 汉字
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains 2 tokenizers a size (no model): seconds, and little memory."""
    return Cost.of_bytes(0, trains=False, extra_mb=40.0 + p["vocab"] / 64)


def texts(corpus: str) -> tuple[list[str], list[str], str]:
    """(zh strings, en strings, the corpus's name): the lab's words, or a file's texts split by whether they hold 汉字."""
    if not corpus.strip():
        words = runs.our_words()
        return words["zh"], words["en"], "our words"
    from pathlib import Path

    from attnlab.text.corpus import read_corpus

    try:
        lines = [line for text in read_corpus(corpus) for line in text.splitlines() if line.strip()]
    except (ValueError, OSError) as err:  # OSError: a name too long, a folder without access
        why = err if isinstance(err, ValueError) else (err.strerror or type(err).__name__)
        raise ParamError(f"corpus: {why}", "corpus", "explain.bpe.error.corpus", got=repr(corpus[:80])) from None
    zh = [s for s in lines if runs.HAN.search(s)]
    return zh, [s for s in lines if not runs.HAN.search(s)], Path(corpus).name


def pieces(tok, text: str) -> list[Piece]:
    out = []
    for i in tok.encode(text):
        raw = tok.token_bytes(i)
        try:
            raw.decode("utf-8")
            partial = False
        except UnicodeDecodeError:
            partial = True
        out.append(Piece(i, tok.decode([i]), raw.hex(" "), partial))
    return out


def wordpieces(text: str) -> tuple[list[WordPiece] | None, int | None, int | None]:
    tok = runs.wordpiece()
    if tok is None:
        return None, None, None
    out = []
    for word in dict.fromkeys([*runs.COURSE_WORDS, text.strip()]):  # in order, `text` once, last
        if word:
            tokens = tok.encode_full(word, specials=False).tokens
            out.append(WordPiece(word, tokens, " · ".join(tokens), tokens.count("[UNK]")))
    return out, tok.vocab_size, runs.wordpiece_han(tok)


def claims_of(r: BpeResult, lang: str) -> list[Claim]:
    i = len(r.sizes) - 1
    zh0, zh = r.tokens_per_char["zh"][0], r.tokens_per_char["zh"][i]
    words, words_null = r.multi_han["text"][i], r.multi_han["shuffled"][i]
    return [
        within(
            "bytes_only",
            t("explain.bpe.claim.bytes", lang, tpc=zh0, bpc=r.bytes_per_char["zh"]),
            lang,
            measured=zh0,
            expected=r.bytes_per_char["zh"],
            tol=1e-12,
            control=t("explain.bpe.control.utf8", lang),
            values={"tokens_per_char": zh0, "bytes_per_char": r.bytes_per_char["zh"]},
        ),
        lead(
            "shorter",
            t("explain.bpe.claim.shorter", lang, v=r.sizes[i], tpc=zh, bytes=zh0, margin=SHORTER_MARGIN),
            lang,
            measured=zh,
            baseline=zh0,
            margin=SHORTER_MARGIN,
            lower=True,
            control=t("explain.bpe.control.bytes", lang),
            values={"tokens_per_char": zh, "bytes_only": zh0, "vocab": r.sizes[i]},
        ),
        lead(
            "words",
            t("explain.bpe.claim.words", lang, v=r.sizes[i], n=words, shuffled=words_null, margin=WORDS_MARGIN),
            lang,
            measured=words,
            baseline=words_null,
            margin=WORDS_MARGIN,
            control=t("explain.bpe.control.shuffled", lang),
            values={"text": words, "shuffled": words_null, "vocab": r.sizes[i]},
        ),
    ]


@lesson
def bpe(
    vocab: int = 1024,
    text: str = "变压器 注意力 床前明月光 Transformer attention",
    shuffle: bool = False,
    corpus: str = "",
    *,
    lang: str = "zh",
) -> BpeResult:
    """Tokens per character against vocabulary size, words from the order, and `text` cut token by token."""
    p = check(PARAMS, dict(vocab=vocab, text=text, shuffle=shuffle, corpus=corpus))
    zh, en, name = texts(p["corpus"])
    if not zh and not en:
        raise ParamError("corpus: no text in it", "corpus", "explain.bpe.error.corpus", got=repr(p["corpus"]))
    data = runs.split(zh, en)
    train = tuple(shuffled_chars(list(data.train), 0)) if p["shuffle"] else data.train
    twin = tuple(shuffled_chars(list(train), 1))  # the order removed from whatever is trained on
    sizes = runs.sizes(p["vocab"])
    tpc: dict[str, list[float]] = {k: [] for k in ("zh", "en", "zh_shuffled", "en_shuffled")}
    multi: dict[str, list[int]] = {"text": [], "shuffled": []}
    for v in sizes:
        tok, other = runs.tokenizer(train, v), runs.tokenizer(twin, v)
        for held, key in ((data.zh, "zh"), (data.en, "en")):
            tpc[key].append(runs.tokens_per_char(tok, held))
            tpc[key + "_shuffled"].append(runs.tokens_per_char(other, held))
        multi["text"].append(runs.multi_han(tok))
        multi["shuffled"].append(runs.multi_han(other))
    tok = runs.tokenizer(train, sizes[-1])
    longest = sorted(
        (tok.decode([i]) for i in range(tok.vocab_size) if len(runs.HAN.findall(tok.decode([i]))) >= 2),
        key=lambda s: (-len(s), s),
    )[:8]
    n_train = sum(map(len, train))
    note = t(
        "explain.bpe.note" + ("_shuffled" if p["shuffle"] else ""),
        lang,
        corpus=t("explain.bpe.our_words", lang) if name == "our words" else name,
        n=n_train,
        zh=len(data.zh),
        en=len(data.en),
    )
    r = BpeResult(
        "bpe",
        p,
        name,
        sizes,
        tpc,
        {"zh": runs.bytes_per_char(data.zh), "en": runs.bytes_per_char(data.en)},
        multi,
        [v * D_MODEL for v in sizes],
        pieces(tok, p["text"]),
        tok.decode(tok.encode(p["text"])),
        [[s] for s in longest],
        n_train,
        note,
        *wordpieces(p["text"]),
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "BpeResult", "bpe", "cost"]
