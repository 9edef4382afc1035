"""A folder of checkpoints (`attnlab serve --runs DIR`): list them, and open one by name, never outside DIR.

A name is one folder directly inside DIR, as `attnlab train --out DIR/NAME` writes it. Anything else is
refused before the disk is touched (a separator, `..`, an absolute path, a drive, a NUL), and a name that
is a link to somewhere outside DIR is refused after resolving it; so is a checkpoint whose files (config.json,
the weights, the tokenizer ...) are links leading outside DIR. Links that stay inside DIR are followed. A link
that loops is no checkpoint at all (NoSuchRun: 404 on the web). Loading goes through
`train.storage.checkpoint.load_checkpoint` (its size and checksum checks); a loaded model is kept while its files
are unchanged, so opening the same checkpoint again costs nothing.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from attnlab.train.storage.checkpoint import (
    CONFIG,
    MODEL,
    OWN_FILES,
    TOKENIZER,
    Checkpoint,
    CheckpointError,
    load_checkpoint,
    read_meta,
)
from attnlab.train.storage.links import LinkLoop, real_path

MAX_NAME = 200  # characters of a checkpoint folder's name
MAX_LISTED = 500  # folders a listing looks at (a runs folder holds a few dozen)
KEEP_LOADED = 4  # models kept in memory


class OutsideRuns(ValueError):
    """The name does not stay inside the runs folder (refused, whether or not such a place exists)."""


class NoSuchRun(LookupError):
    """No checkpoint of that name inside the runs folder."""


@dataclass
class RunEntry:
    """One checkpoint folder as the listing shows it (from its config.json only: no weight is read)."""

    name: str
    corpus: str | None
    tokenizer: str | None
    layers: int | None
    heads: int | None
    d_model: int | None
    context: int | None
    vocab_size: int | None
    step: int | None
    loss: float | None
    val_loss: float | None
    problem: str | None  # why it cannot be opened (an incomplete or damaged folder), else None


def check_name(name: str) -> str:
    """`name` if it can only mean a folder directly inside the runs folder, else OutsideRuns saying why."""
    if not name or name in (".", ".."):
        raise OutsideRuns(f"{name!r} is not a checkpoint name: give the name of one folder inside the runs folder")
    if len(name) > MAX_NAME:
        raise OutsideRuns(f"a checkpoint name has at most {MAX_NAME} characters, got {len(name)}")
    bad = [c for c in ("/", "\\", "\x00", ":") if c in name]
    if bad or not name.isprintable():
        raise OutsideRuns(
            f"{name[:80]!r} is not a checkpoint name: a name is one folder inside the runs folder, "
            "without / or \\ or ':' (no paths, no '..')"
        )
    return name


def _real(path: Path) -> Path:
    """`path` resolved; a link that loops is NoSuchRun (nothing can be opened there)."""
    try:
        return real_path(path)
    except LinkLoop as err:
        raise NoSuchRun(str(err)) from None


def resolve(root: str | Path, name: str) -> Path:
    """The checkpoint folder `root/name`, resolved, or OutsideRuns / NoSuchRun."""
    check_name(name)
    base = _real(Path(root))
    path = _real(base / name)
    if not path.is_relative_to(base):
        raise OutsideRuns(
            f"{name!r} leads outside the runs folder (a link elsewhere); the lab opens only checkpoints inside {base}"
        )
    if path == base:
        raise OutsideRuns(f"{name!r} is the runs folder itself, not a checkpoint inside it")
    if not path.is_dir():
        raise NoSuchRun(f"no checkpoint named {name!r} in {base} (train one with `attnlab train --out {base / name}`)")
    return path


def check_files(root: str | Path, path: Path) -> None:
    """OutsideRuns when a file the loader opens in the checkpoint folder `path` is a link leading outside the
    runs folder (links inside it are fine); NoSuchRun when one loops. A missing file is the loader's to say."""
    base = _real(Path(root))
    for name in OWN_FILES:
        file = path / name
        if os.path.lexists(file) and not _real(file).is_relative_to(base):
            raise OutsideRuns(
                f"{path.name!r}: {name} leads outside the runs folder (a link elsewhere); the lab "
                f"opens only files inside {base}"
            )


def _int(model: dict, key: str) -> int | None:
    v = model.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(meta: dict, key: str) -> float | None:
    v = meta.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _entry(base: Path, path: Path) -> RunEntry:
    try:
        if not _real(path).is_relative_to(base):
            raise OutsideRuns("a link to a folder outside the runs folder (not opened)")
        check_files(base, path)
        meta = read_meta(path)
        problem = None
    except (CheckpointError, OutsideRuns, NoSuchRun, OSError) as err:
        meta, problem = {}, str(err)
    model = meta.get("model") if isinstance(meta.get("model"), dict) else {}
    return RunEntry(
        name=path.name,
        corpus=meta.get("corpus"),
        tokenizer=meta.get("tokenizer") if isinstance(meta.get("tokenizer"), str) else None,
        layers=_int(model, "n_layers"),
        heads=_int(model, "n_heads"),
        d_model=_int(model, "d_model"),
        context=_int(model, "context_length"),
        vocab_size=_int(model, "vocab_size"),
        step=_int(meta, "step"),
        loss=_num(meta, "loss"),
        val_loss=_num(meta, "val_loss"),
        problem=problem,
    )


def _looks_like_checkpoint(path: Path) -> bool:
    return any((path / f).exists() for f in (CONFIG, MODEL, TOKENIZER))


def list_runs(root: str | Path) -> list[RunEntry]:
    """The checkpoint folders directly inside `root`, by name (folders without any checkpoint file are left
    out; an incomplete or damaged one is listed with its problem). A missing `root` lists nothing."""
    try:
        base = real_path(Path(root))
    except LinkLoop:
        return []
    if not base.is_dir():
        return []
    entries = []
    for path in sorted(base.iterdir(), key=lambda p: p.name)[:MAX_LISTED]:
        try:
            check_name(path.name)
            if path.name.startswith(".") or not path.is_dir():
                continue
            # a link out of the folder is listed (so its owner learns why it does not open), never looked into
            if real_path(path).is_relative_to(base) and not _looks_like_checkpoint(path):
                continue
        except (OSError, OutsideRuns):
            continue
        entries.append(_entry(base, path))
    return entries


_LOADED: OrderedDict[tuple, Checkpoint] = OrderedDict()
_LOCK = threading.Lock()


def _signature(path: Path) -> tuple:
    """What changes when the checkpoint is saved again (atomically: new files, new inodes and times)."""
    out = [str(path)]
    for name in (CONFIG, MODEL, TOKENIZER):
        st = (path / name).stat()
        out += [st.st_ino, st.st_mtime_ns, st.st_size]
    return tuple(out)


def open_run(root: str | Path, name: str) -> Checkpoint:
    """The checkpoint `name` inside `root`, loaded on the CPU and checked (OutsideRuns, NoSuchRun,
    CheckpointError); kept in memory while its files stay the same."""
    path = resolve(root, name)
    check_files(root, path)  # before the cache: a file may have become a link since it was loaded
    try:
        key = _signature(path)
    except OSError:
        key = None  # incomplete: load_checkpoint says what is missing
    with _LOCK:
        if key in _LOADED:
            _LOADED.move_to_end(key)
            return _LOADED[key]
    ckpt = load_checkpoint(path, device="cpu")
    if key is not None:
        with _LOCK:
            _LOADED[key] = ckpt
            while len(_LOADED) > KEEP_LOADED:
                _LOADED.popitem(last=False)
    return ckpt
