"""Keyword retrieval in a real on-disk index: SQLite's FTS5 with its trigram tokenizer (every three consecutive
characters a term: it needs no word segmentation, so it works on Chinese), ranked by FTS5's BM25,

    score(D, Q) = Σ_{t ∈ Q} idf(t) · f(t, D) · (k1 + 1) / (f(t, D) + k1 · (1 − b + b · |D| / avgdl)),
    idf(t) = ln((N − n(t) + 0.5) / (n(t) + 0.5)),  k1 = 1.2, b = 0.75,

the query's trigrams OR-ed, so a document sharing only some of them still ranks. The index is one file in the lab's
cache folder (lessons/common/disk_cache.py), named by a digest of the documents: built once, rebuilt when the corpus
changes, written beside and renamed in place (a crash leaves no half index). With the cache off it lives in memory.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import threading
from pathlib import Path

SUBFOLDER = "search-index"
_lock = threading.Lock()


class IndexError_(ValueError):
    """The index folder or file is not what the lab writes there (a FIFO, a link, a file for a folder)."""


def trigrams(text: str) -> list[str]:
    """The distinct trigrams of `text`, in order."""
    return list(dict.fromkeys(text[i : i + 3] for i in range(len(text) - 2)))


def digest(documents: list[str]) -> str:
    h = hashlib.sha256()
    for d in documents:
        h.update(d.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _checked(path: Path, kind: str) -> bool:
    """Whether `path` exists, having checked by lstat alone (nothing opened: a FIFO would block) that it is a real
    folder or a regular file, not a link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    ok = stat.S_ISDIR(st.st_mode) if kind == "folder" else stat.S_ISREG(st.st_mode)
    if not ok:
        raise IndexError_(f"the index {kind} {path} is not a plain {kind} (a link, a FIFO or another kind): remove it")
    return True


def _fill(conn: sqlite3.Connection, documents: list[str]) -> None:
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='trigram')")
    conn.executemany("INSERT INTO docs(rowid, text) VALUES (?, ?)", [(i, d) for i, d in enumerate(documents)])
    conn.commit()


def open_index(documents: list[str], cache: Path | None) -> sqlite3.Connection:
    """An index of `documents` (row i = documents[i]): the cached file when it is there, else built (in memory when
    `cache` is None)."""
    if cache is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        _fill(conn, documents)
        return conn
    folder = Path(cache) / SUBFOLDER
    with _lock:
        if not _checked(folder, "folder"):
            folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{digest(documents)}.sqlite"
        if not _checked(path, "file"):
            partial = folder / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
            partial.unlink(missing_ok=True)
            conn = sqlite3.connect(partial)
            try:
                _fill(conn, documents)
            finally:
                conn.close()
            os.replace(partial, path)
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)


def search(conn: sqlite3.Connection, query: str, k: int) -> list[tuple[int, float]]:
    """The k best documents for `query` by BM25: (row, score), best first; [] for a query of under 3 characters."""
    terms = trigrams(query)
    if not terms:
        return []
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)  # each trigram a quoted phrase
    rows = conn.execute(
        "SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?", (match, k)
    ).fetchall()
    return [(int(r), -float(s)) for r, s in rows]  # FTS5's bm25() is negated: lower is better
