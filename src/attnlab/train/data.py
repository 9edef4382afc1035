"""Training data: texts -> one stream of token ids -> (input, target) windows shifted by one.

Every text ends with the end-of-text mark, so the model learns where a text stops. The target of position
i is the token at i + 1: the text supplies its own answers (self-supervision).
"""

from __future__ import annotations

import glob
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from attnlab.text import BUILTIN_TEXTS, read_poems_json
from attnlab.text.poetry import is_poetry_collection, poetry_files
from attnlab.train.storage.integrity import sha256_file
from attnlab.train.token_cache import MIN_CACHED_CHARS, cached_token_stream, token_stream  # noqa: F401 (token_stream: re-exported)

# The default --max-corpus-mb. Reading and tokenizing a corpus takes many times its size in memory (README gives
# the factor), so this keeps a run within an ordinary machine's memory and still holds all of 全唐诗 (12 MB) many
# times over.
MAX_CORPUS_MB = 256
MB = 1_000_000
SYSTEM_FOLDERS = ("/dev", "/proc", "/sys")  # their "files" never end, block, or change as they are read
CHUNK = 1 << 20


@dataclass
class TokenData:
    """A train stream and an optional validation stream (the last fraction of the corpus, as nanoGPT splits)."""

    train: Tensor  # (N_train,)
    val: Tensor | None  # (N_val,) or None when there is nothing to hold out (a single poem)
    train_starts: Tensor | None = None  # where windows may start (each text's end-of-text mark); None: anywhere
    val_starts: Tensor | None = None

    @classmethod
    def from_texts(
        cls, texts: list[str], tokenizer, val_fraction: float = 0.1, min_val_tokens: int = 2, *, cache: bool = False
    ) -> TokenData:
        """cache=True: a large corpus (MIN_CACHED_CHARS or more) is tokenized once and its ids kept in a uint16
        file (attnlab.train.token_cache) that later runs read instead of tokenizing again."""
        if not 0.0 <= val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
        large = cache and sum(len(text) for text in texts) >= MIN_CACHED_CHARS
        stream = cached_token_stream(texts, tokenizer) if large else token_stream(texts, tokenizer)
        n_val = int(len(stream) * val_fraction)
        if n_val < min_val_tokens or len(stream) - n_val < 2:
            return cls(stream, None)
        return cls(stream[:-n_val], stream[-n_val:])

    @classmethod
    def from_split(
        cls, train_texts: list[str], val_texts: list[str], tokenizer, align: bool = False, context_length: int = 0
    ) -> TokenData:
        """Streams from texts already split (by poem: split_texts), so no text is cut in two. With align, each
        stream begins with the end-of-text mark and every window starts at one: a poem's first character is
        always at position 1, as when generation starts a poem (`start_of_text`), so learned positions line up
        with the verses."""
        if not align:
            return cls(token_stream(train_texts, tokenizer), token_stream(val_texts, tokenizer) if val_texts else None)
        eot = torch.tensor([tokenizer.eot_id])
        train = torch.cat([eot, token_stream(train_texts, tokenizer)])
        val = torch.cat([eot, token_stream(val_texts, tokenizer)]) if val_texts else None
        return cls(
            train,
            val,
            text_starts(train, tokenizer.eot_id, context_length),
            text_starts(val, tokenizer.eot_id, context_length) if val is not None else None,
        )


def text_starts(stream: Tensor, eot_id: int, context_length: int) -> Tensor | None:
    """Positions of the end-of-text marks a whole window (context_length + 1 tokens) can start at."""
    marks = (stream == eot_id).nonzero().flatten()  # (n_texts,)
    marks = marks[marks + context_length < len(stream)]
    return marks if len(marks) else None


def eval_windows(stream: Tensor, T: int, most: int = 64) -> tuple[Tensor, Tensor]:
    """Evenly spaced (x, y) windows over a stream, at most `most`: the same for every model measured on it."""
    if len(stream) - 1 <= T:
        return stream[None, :-1], stream[None, 1:]
    starts = torch.linspace(0, len(stream) - T - 1, min(most, len(stream) - T)).long().unique()  # (W,)
    offsets = torch.arange(T)
    return stream[starts[:, None] + offsets], stream[starts[:, None] + offsets + 1]  # (W, T), (W, T)


def split_texts(texts: list[str], val_fraction: float = 0.1, seed: int = 0) -> tuple[list[str], list[str]]:
    """(train, val): whole texts held out, drawn by a seeded shuffle (a collection is ordered by poet and
    era, so its last tenth would be another distribution); each list keeps the texts' order."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    n_val = int(round(len(texts) * val_fraction))
    if n_val == 0 or n_val == len(texts):
        return list(texts), []
    order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(seed)).tolist()
    held = set(order[:n_val])
    return [t for i, t in enumerate(texts) if i not in held], [t for i, t in enumerate(texts) if i in held]


def get_batch(
    stream: Tensor,
    context_length: int,
    batch_size: int,
    generator: torch.Generator,
    *,
    rank: int = 0,
    world_size: int = 1,
    allowed: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """(x, y), each (B, T): random windows of the stream, y = x shifted one to the left.

    A stream that fits in one window (a poem memorized by heart) is always the one whole window, from
    position 0, so the model learns each character at the position generation will ask for it.
    With several processes (DDP) every rank draws the same global batch of world_size * B windows from the
    same seeded generator and keeps its own B: different windows on each rank, one generator state to save.
    """
    if len(stream) < 2:
        raise ValueError(f"need at least 2 tokens to train on, got {len(stream)}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size={world_size}), got {rank}")
    if len(stream) - 1 <= context_length:
        return stream[None, :-1], stream[None, 1:]  # (1, N-1)
    if allowed is not None:  # windows that start at a text's beginning (TokenData.from_split(align=True))
        starts = allowed[torch.randint(0, len(allowed), (world_size * batch_size,), generator=generator)]
    else:
        starts = torch.randint(0, len(stream) - context_length, (world_size * batch_size,), generator=generator)
    starts = starts[rank * batch_size : (rank + 1) * batch_size]  # (W*B,) -> (B,) this rank's share
    # The generator stays on the CPU (the same windows for a seed on every device, and a state any device can
    # resume); only the B start positions travel, and the windows are gathered where the stream lives.
    starts = starts.to(stream.device, non_blocking=True)
    offsets = torch.arange(context_length, device=stream.device)  # (T,)
    x = stream[starts[:, None] + offsets]  # (B, T)
    y = stream[starts[:, None] + offsets + 1]  # (B, T)
    return x, y


# ------------------------------------------------------------------------------------------ corpus files
def check_corpus(corpus: str, max_corpus_mb: float | None = None, script: str | None = None) -> int:
    """The bytes a corpus file, folder or glob holds (0 for a built-in text), after checking, by stat alone
    (nothing is opened: a FIFO would block the read forever, /dev/zero would never end), that each of its
    files is a regular file outside /dev, /proc and /sys and that together they fit in max_corpus_mb.
    Otherwise a one-line ValueError naming the file and what to do."""
    if corpus in BUILTIN_TEXTS:
        return 0
    limit = corpus_limit(max_corpus_mb)
    if is_poetry_collection(corpus):
        for entry in _collection_entries(corpus):  # every .json there, read or not: none may be special
            _regular_size(entry, allow_dir=True)
        files = poetry_files(corpus, script or "simplified")
    else:
        files = [Path(corpus)]
    total = sum(_regular_size(path) for path in files)
    if total > limit:
        raise ValueError(
            f"corpus {corpus} holds {total / MB:,.1f} MB, over the {_mb(limit)} limit; train on a "
            f"smaller corpus, or raise the limit with --max-corpus-mb if this machine has the memory "
            f"(reading and tokenizing it takes about {18 * total / 1e9:.1f} GB)"
        )
    return total


def corpus_text(path: str, max_chars: int, *, builtins: list[str] | None = None) -> str:
    """A lesson's corpus file (.txt or chinese-poetry .json): its texts joined by newlines, the first max_chars
    characters, after check_corpus. A one-line ValueError for a missing, special or unreadable file (naming the
    built-in texts, when the lesson has some)."""
    from attnlab.text.corpus import read_corpus

    try:
        if not Path(path).is_file():
            what = f"neither a built-in text {builtins} nor a file" if builtins else "not a file"
            raise ValueError(f"corpus {path!r} is {what}")
        check_corpus(path)  # a regular file within the size limit: a FIFO would block forever
        return "\n".join(read_corpus(path))[:max_chars]
    except OSError as err:  # unreadable, or a name too long to be a path
        raise ValueError(f"cannot read the corpus {path!r}: {err}") from None


@dataclass(frozen=True)
class TextData:
    """A lesson's text as character ids (text_data)."""

    name: str
    train: Tensor  # (N_train,) token ids
    val: Tensor  # (N_val,) the ids a lesson measures on: the train ids again for a built-in poem
    held_out: bool
    vocab_size: int
    tokenizer: object


def text_data(name: str, max_chars: int, least: int = 1) -> TextData:
    """A built-in poem whole, trained and measured on itself (24 characters leave nothing to hold out), or a corpus
    file's first max_chars characters with its last tenth held out (at least `least` tokens)."""
    tok, ids = char_stream(named_text(name, max_chars))  # (N,)
    held_out = name not in BUILTIN_TEXTS
    train, val = last_tenth(ids, least) if held_out else (ids, ids)
    return TextData(name, train, val, held_out, tok.vocab_size, tok)


def poem_or_file(corpus: str, max_chars: int) -> tuple[str, str]:
    """(name, text): the built-in 静夜思 for an empty corpus, else the file's name and its first max_chars characters."""
    if not corpus:
        return "静夜思", BUILTIN_TEXTS["jingyesi"]
    return Path(corpus).name, corpus_text(corpus, max_chars)


def named_text(name: str, max_chars: int) -> str:
    """A built-in text by its name, whole (each is a short poem), else the corpus file's first max_chars characters
    (corpus_text, whose errors name the built-in texts)."""
    if name in BUILTIN_TEXTS:
        return BUILTIN_TEXTS[name]
    return corpus_text(name, max_chars, builtins=sorted(BUILTIN_TEXTS))


def char_stream(text: str) -> tuple[object, Tensor]:
    """(tokenizer, ids): a character tokenizer learned from `text`, and the text's ids (N,), its end mark last."""
    from attnlab.text.tokenizer import train_tokenizer

    tok = train_tokenizer("char", [text])
    return tok, token_stream([text], tok)


def last_tenth(ids: Tensor, least: int = 1) -> tuple[Tensor, Tensor]:
    """(train, val): the stream with its last tenth held out, and at least `least` tokens, as nanoGPT splits."""
    n_val = max(least, len(ids) // 10)
    return ids[:-n_val], ids[-n_val:]  # (N - n_val,), (n_val,)


def read_corpus_file(path: str | Path, max_corpus_mb: float | None = None) -> tuple[list[str], str]:
    """(texts, sha256) of one checked .txt or chinese-poetry .json file. A .txt is read no further than the
    limit, even if it grows while being read."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".json":
            return read_poems_json(path), sha256_file(path)
        data = read_bounded(path, corpus_limit(max_corpus_mb))
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"corpus {path} is not UTF-8 text") from None
    if not text.strip():
        raise ValueError(f"corpus {path} is empty")
    return [text], hashlib.sha256(data).hexdigest()


def read_bounded(path: Path, max_bytes: int) -> bytes:
    """A regular file's bytes, never more than max_bytes in memory. Opened without blocking and checked again
    once open, so a file swapped for a FIFO or a device since check_corpus is refused, not waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"corpus {path} is not a regular file any more; give a .txt or .json file")
        chunks, size = [], 0
        while block := os.read(fd, min(CHUNK, max_bytes + 1 - size)):
            chunks.append(block)
            size += len(block)
            if size > max_bytes:
                raise ValueError(
                    f"corpus {path} grew past the {_mb(max_bytes)} limit while it was read; train on "
                    f"a copy that is not being written, or raise the limit with --max-corpus-mb"
                )
    finally:
        os.close(fd)
    return b"".join(chunks)


@contextmanager
def corpus_memory(corpus: str, max_corpus_mb: float | None = None) -> Iterator[None]:
    """Out of memory while reading or tokenizing a corpus is the corpus's size, not the model's: say so."""
    try:
        yield
    except (MemoryError, RuntimeError) as err:
        if isinstance(err, RuntimeError) and "allocate memory" not in str(err):
            raise
        raise ValueError(
            f"corpus {corpus} is too big for this machine's memory once read and tokenized; train on "
            f"a smaller corpus, or lower --max-corpus-mb (now {_mb(corpus_limit(max_corpus_mb))}) so "
            f"that such a corpus is refused before it is read"
        ) from None


def corpus_limit(max_corpus_mb: float | None) -> int:
    """The limit in bytes (MB = 10**6 bytes); None: the default."""
    mb = MAX_CORPUS_MB if max_corpus_mb is None else max_corpus_mb
    if not 0 < mb <= 10**7:
        raise ValueError(f"--max-corpus-mb must be a number of megabytes above 0 (at most 10000000), got {mb}")
    return int(mb * MB)


def _mb(limit: int) -> str:
    return f"{limit / MB:g} MB"


def _collection_entries(spec: str) -> list[Path]:
    """What a folder (its .json entries) or a glob names, before poetry_files keeps the regular files."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return [p for p in path.iterdir() if p.suffix.lower() == ".json"]
    return [Path(p) for p in glob.glob(str(path), recursive=False)]


def _regular_size(path: Path, allow_dir: bool = False) -> int:
    """st_size of a regular file (links followed), else a ValueError saying what it is; 0 for a folder when
    allow_dir (a glob may match one; poetry_files skips it)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(
            f"corpus {str(path)!r} is neither a built-in text {sorted(BUILTIN_TEXTS)} nor an existing file"
        ) from None
    except OSError as err:
        raise ValueError(f"cannot read corpus {path}: {err.strerror or err}") from None
    if allow_dir and stat.S_ISDIR(st.st_mode):
        return 0
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(
            f"corpus {path} is not a regular file (it is {_kind(st.st_mode)}); give a .txt or "
            f".json file, or a folder of them"
        )
    resolved = path.resolve()
    if os.name == "posix" and any(resolved.is_relative_to(folder) for folder in SYSTEM_FOLDERS):
        raise ValueError(
            f"corpus {path} is a system file ({resolved}), not text to train on; give a .txt or .json file"
        )
    return st.st_size


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO, a named pipe"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")
