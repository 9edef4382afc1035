"""A chinese-poetry collection as a corpus: a folder or glob of its JSON files, one script, optionally one form.

The repository stores each file twice: `poet.tang.0.json` (traditional, as 全唐诗 was printed) and
`poet.tang.0.simplified.json`. A folder or glob is filtered to one script, so no poem is read in both;
identical poems (唐诗三百首 repeats some of 全唐诗) are kept once, so the held-out split cannot hold a
copy of a training poem. Forms are read from line lengths and counts (attnlab.text.forms).
"""

from __future__ import annotations

import glob
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from attnlab.io import safe_read
from attnlab.text.corpus import CORPUS_LIMIT, read_poems_json
from attnlab.text.forms import FORMS, classify

SCRIPTS = ("simplified", "traditional")
MAX_FILES = 10_000


def is_poetry_collection(spec: str) -> bool:
    """A folder, or a glob pattern (*, ?, [), rather than a single file or a built-in name."""
    return Path(spec).is_dir() or any(ch in spec for ch in "*?[")


def _script_of(path: Path) -> str:
    return "simplified" if path.name.endswith(".simplified.json") else "traditional"


def poetry_files(spec: str, script: str = "simplified") -> list[Path]:
    """The JSON files of one script in a folder (not its sub-folders) or matching a glob, sorted by name."""
    if script not in SCRIPTS:
        raise ValueError(f"script must be one of {', '.join(SCRIPTS)}, got {script!r}")
    path = Path(spec).expanduser()
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() == ".json" and p.is_file())
    else:
        found = sorted(Path(p) for p in glob.glob(str(path), recursive=False) if Path(p).is_file())
    if not found:
        raise ValueError(f"no .json files in {spec!r}")
    files = [p for p in found if _script_of(p) == script]
    if not files:
        raise ValueError(
            f"none of the {len(found)} .json file(s) in {spec!r} is in {script} script "
            f"(simplified copies end in .simplified.json)"
        )
    if len(files) > MAX_FILES:
        raise ValueError(f"{spec!r} names {len(files)} files; at most {MAX_FILES}")
    return files


@dataclass
class PoetryCorpus:
    poems: list[str]  # one text per poem, lines joined by newlines, duplicates dropped, in file order
    files: list[Path]
    script: str
    forms: tuple[str, ...] | None  # the forms kept, or None for every poem
    read: int = 0  # poems read before dropping duplicates and other forms
    counts: dict[str, int] = field(default_factory=dict)  # poems kept per form ('other' for the rest)

    def sha256(self) -> str:
        """One checksum over the files read (names and contents), so --resume knows the corpus is unchanged."""
        h = hashlib.sha256()
        for f in self.files:
            data = safe_read.read_bytes(f, CORPUS_LIMIT)  # as read_poems_json read it: a regular file, bounded
            h.update(f.name.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest()


def read_poetry(spec: str, script: str = "simplified", forms: tuple[str, ...] | None = None) -> PoetryCorpus:
    """Every poem of one script in a folder or glob of chinese-poetry JSON files, sliced to `forms`."""
    if forms is not None and (bad := [f for f in forms if f not in FORMS]):
        raise ValueError(f"unknown form(s) {bad}; choose from {', '.join(FORMS)}")
    files = poetry_files(spec, script)
    read = [poem for f in files for poem in read_poems_json(f)]
    unique = list(dict.fromkeys(read))
    kinds = [classify(p) for p in unique]
    kept = [(p, k) for p, k in zip(unique, kinds) if forms is None or k in forms]
    if not kept:
        raise ValueError(f"no poem in {spec!r} ({script}) has the form {', '.join(forms or ())}")
    counts: dict[str, int] = {}
    for _, k in kept:
        counts[k or "other"] = counts.get(k or "other", 0) + 1
    return PoetryCorpus([p for p, _ in kept], files, script, forms, len(read), counts)
