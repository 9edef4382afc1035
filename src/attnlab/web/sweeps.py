"""Scaling sweeps in the lab (issue 24, item 3): the corpora of `attnlab serve --data DIR`, offered by name, the
finished sweeps of the runs folder, and one small sweep at a time started from the page.

A request names a corpus or a sweep; the name is looked up among the folder's own entries, so no path from a
request is ever opened. A sweep started here is `attnlab scale` with a few minutes' budget, run in a background
thread into RUNS/scale-CORPUS-N, holding one of the lab's training slots (web/runs.RUNS) until it ends; its latest
progress event is kept for the page.
"""

from __future__ import annotations

import itertools
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from attnlab.io import safe_read
from attnlab.train.background import Busy

MAX_MINUTES = 10.0  # the page's sweeps are small: the CLI runs the long ones
CORPUS_SUFFIXES = (".txt", ".json")


class NotFound(KeyError):
    """No corpus or sweep of that name in the server's folder."""


@dataclass
class Job:
    name: str  # its folder inside the runs folder
    corpus: str
    minutes: float
    command: str  # the same sweep from a terminal
    status: str = "running"  # running | done | failed
    event: dict = field(default_factory=dict)  # the latest progress event of run_sweep
    error: str | None = None
    started: float = field(default_factory=time.time)


JOBS: dict[str, Job] = {}
_LOCK = threading.Lock()


def corpora(data_dir: Path | None) -> list[str]:
    """The corpora in the data folder by name: its folders (of chinese-poetry JSON) and its regular .txt / .json
    files. An entry whose links lead outside the folder (or loop) is not offered, nor a FIFO or a device."""
    if data_dir is None or not data_dir.is_dir():
        return []
    out = []
    for p in data_dir.iterdir():
        if p.name.startswith("."):
            continue
        try:
            real = safe_read.inside(p, data_dir)
        except (safe_read.ReadRefused, OSError):
            continue
        if real.is_dir() or (real.is_file() and p.suffix in CORPUS_SUFFIXES):
            out.append(p.name)
    return sorted(out)


def corpus_path(data_dir: Path | None, name: str) -> Path:
    if name not in corpora(data_dir):
        raise NotFound(f"no corpus named {name!r} in this lab's data folder (attnlab serve --data DIR)")
    return data_dir / name


def finished(runs_dir: Path | None) -> list[dict]:
    """The finished sweeps in the runs folder: each folder with a scale.json, summarized. A scale.json is read
    with io.safe_read (a regular file inside the runs folder, bounded in size and nesting): a FIFO, a link out of
    the folder, a huge or deeply nested file is left out, never waited on. Hidden folders (a save's leftover
    `.NAME.old`) are not sweeps."""
    if runs_dir is None or not runs_dir.is_dir():
        return []
    out = []
    for folder in sorted(runs_dir.iterdir(), key=lambda p: p.name):
        if folder.name.startswith("."):
            continue
        try:
            data = safe_read.read_json(folder / "scale.json", root=runs_dir)
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
            continue
        fit = data.get("fit") if isinstance(data.get("fit"), dict) else {}
        out.append(
            {
                "name": folder.name,
                "corpus": data.get("corpus"),
                "runs": len(data["runs"]),
                "command": data.get("command"),
                "shown": bool(fit.get("shown")),
                "reason": fit.get("reason"),
            }
        )
    return out


def sweep_path(runs_dir: Path | None, name: str) -> Path:
    if name not in {s["name"] for s in finished(runs_dir)}:
        raise NotFound(f"no finished sweep named {name!r} in this lab's runs folder")
    return runs_dir / name


def running() -> list[Job]:
    return [j for j in JOBS.values() if j.status == "running"]


def start(runs_dir: Path | None, data_dir: Path | None, corpus: str, minutes: float) -> Job:
    """Start a sweep of `corpus` (a name) for `minutes` (at most MAX_MINUTES) in a new folder of the runs folder.
    NotFound for an unknown corpus, ValueError for bad minutes or no runs folder, Busy when a sweep runs already
    or every training slot is taken."""
    from attnlab.web.runs import RUNS

    path = corpus_path(data_dir, corpus)
    if runs_dir is None:
        raise ValueError("this lab was started without a runs folder to write the sweep to (attnlab serve --runs DIR)")
    if not 0 < minutes <= MAX_MINUTES:
        raise ValueError(f"minutes must be more than 0 and at most {MAX_MINUTES:g} here (the CLI runs longer sweeps)")
    with _LOCK:
        if running():
            raise Busy("a sweep is running already; wait for it to finish", retry_after=30)
        slot = RUNS.reserve()  # Busy when the lab's training slots are taken: a sweep is training too
        # the first free name: a folder of the runs folder, or a sweep of this server whose folder is not made yet
        name = next(
            n for i in itertools.count(1) if not (runs_dir / (n := f"scale-{corpus}-{i}")).exists() and n not in JOBS
        )
        out = runs_dir / name
        command = f"attnlab scale --corpus {shlex.quote(str(path))} --out {shlex.quote(str(out))} --minutes {minutes:g}"
        job = JOBS[name] = Job(name, corpus, minutes, command)
    threading.Thread(target=_run, args=(job, path, out, slot), name=f"sweep-{name}", daemon=True).start()
    return job


def _run(job: Job, path: Path, out: Path, slot) -> None:
    from attnlab.lessons.scale.planning import CONTEXT
    from attnlab.lessons.scale.sweep import run_sweep
    from attnlab.text import train_tokenizer
    from attnlab.text.poetry import is_poetry_collection
    from attnlab.train.run import load_corpus

    try:
        source = load_corpus(str(path), form="all" if is_poetry_collection(str(path)) else None)
        tokenizer = train_tokenizer("char", source.texts)
        data = source.token_data(tokenizer, CONTEXT)
        run_sweep(
            (source.name, source.sha256, tokenizer, data),
            out,
            minutes=job.minutes,
            progress=lambda event: setattr(job, "event", event),
            command=job.command,
        )
        job.status = "done"
    except Exception as err:  # a corpus that cannot be read, a sweep that does not fit: the page says why
        job.status, job.error = "failed", f"{type(err).__name__}: {err}"
    finally:
        slot.release()
