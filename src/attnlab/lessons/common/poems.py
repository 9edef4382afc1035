"""Poems to search (the rag and agent lessons): four-line poems of five characters (五绝), each a document to
retrieve; in rag a query is a poem's first line, its answer the second.

By default the lab writes its own: 400 poems of characters drawn at random from attnlab.text.couplets' 40, so no
model can know a line it was not shown (the point of retrieval). Given a corpus file (a 全唐诗 .json, a .txt) or a
folder of them, the 五绝 in it. A fixed fifth of the poems, by CRC32, is held out: the generator never trains on them, the index holds
them all (knowledge outside the weights).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from attnlab.text.couplets import CHARS

N_BUILTIN = 400
LINE = 5
MIN_POEMS = 40  # fewer 五绝 than this in a corpus and too few are held out to measure


@dataclass(frozen=True)
class Poem:
    text: str  # 床前明月光，疑是地上霜。举头望明月，低头思故乡。
    lines: tuple[str, ...]  # the four lines without marks

    @property
    def query(self) -> str:
        return self.lines[0]

    @property
    def answer(self) -> str:
        return self.lines[1]

    @property
    def held_out(self) -> bool:
        return zlib.crc32(self.text.encode()) % 5 == 0


def of_lines(lines: list[str]) -> Poem:
    return Poem(f"{lines[0]}，{lines[1]}。{lines[2]}，{lines[3]}。", tuple(lines))


def builtin(seed: int = 0) -> list[Poem]:
    """N_BUILTIN poems of random characters, the same every time; no two share a first line."""
    rng = random.Random(seed)
    poems: dict[str, Poem] = {}
    while len(poems) < N_BUILTIN:
        lines = ["".join(rng.choice(CHARS) for _ in range(LINE)) for _ in range(4)]
        poems.setdefault(lines[0], of_lines(lines))
    return list(poems.values())


def from_file(path: str) -> list[Poem]:
    """The 五绝 of a corpus file, or of a folder or glob of 全唐诗-style JSON files (attnlab.text: regular files,
    size-limited), first lines distinct."""
    from attnlab.text import read_corpus
    from attnlab.text.forms import classify, verses
    from attnlab.text.poetry import is_poetry_collection, read_poetry
    from attnlab.train.data import check_corpus

    check_corpus(path)  # regular files within the size limit: a FIFO would block forever
    poems: dict[str, Poem] = {}
    for text in read_poetry(path).poems if is_poetry_collection(path) else read_corpus(path):
        if classify(text) == "wujue":
            lines = verses(text)
            poems.setdefault(lines[0], of_lines(list(lines)))
    if len(poems) < MIN_POEMS:
        raise ValueError(
            f"corpus {Path(path).name} holds {len(poems)} 五绝 (five-character quatrains); need {MIN_POEMS}"
        )
    return list(poems.values())


def split(poems: list[Poem]) -> tuple[list[Poem], list[Poem]]:
    """(training, held out)."""
    return [p for p in poems if not p.held_out], [p for p in poems if p.held_out]


def corpus_error(corpus: str, err: Exception):
    """The ParamError (parameter `corpus`) for a corpus that cannot be read, in one line."""
    from attnlab.lessons.common.params import ParamError

    short = corpus if len(corpus) <= 80 else corpus[:77] + "..."
    message = f"cannot read the corpus {short!r}: {err.strerror}" if isinstance(err, OSError) else str(err)
    return ParamError(message, "corpus", "explain.error.corpus", corpus=short)


def check(corpus: str) -> None:
    """Refuse, before anything runs, a corpus path that is not a regular file within the size limit."""
    if corpus.strip():
        from attnlab.train.data import check_corpus

        try:
            check_corpus(corpus.strip())
        except (ValueError, OSError) as err:
            raise corpus_error(corpus, err) from None


@lru_cache(maxsize=4)
def poems_of(corpus: str) -> tuple[Poem, ...]:
    """The corpus's 五绝, or the lab's own poems for an empty name; a ParamError for one that cannot be read."""
    try:
        return tuple(from_file(corpus) if corpus else builtin())
    except (ValueError, OSError) as err:  # OSError: a name too long, a folder without permission
        raise corpus_error(corpus, err) from None
