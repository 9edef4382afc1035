"""What `attnlab explain` shows on stderr while a lesson trains, and how Ctrl+C or SIGTERM stops it.

The lessons report each model's steps (train/progress.py) as they do to the web's progress page. Here a thread
watches those reports: the first one prints a line saying what trains and that Ctrl+C stops it; on a terminal a
bar per model follows the steps, and where stderr is a file or a pipe a line every EVERY_S seconds does. Nothing
is printed for a lesson that computes in a moment or comes from the lab's cache (nothing reports).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from attnlab.train.progress import Progress, reporting

TICK_S = 0.25  # how often the bars follow the steps
EVERY_S = 30.0  # a progress line this often when stderr is not a terminal


def _line(models: list[dict]) -> str:
    return ", ".join(f"{m['name']} {m['step']}/{m['steps']}" for m in models)


def _watch(progress: Progress, topic: str, lang: str, done: threading.Event) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
    from rich.progress import Progress as Bars

    from attnlab.i18n import t

    while not progress.started:
        if done.wait(TICK_S):
            return
    console = Console(stderr=True)
    console.print(t("explain.cli.training", lang, topic=topic), highlight=False)
    if not console.is_terminal:
        while not done.wait(EVERY_S):
            console.print(f"  {_line(progress.snapshot())}", highlight=False)
        return
    with Bars(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    ) as bars:
        tasks: dict[str, int] = {}
        while not done.wait(TICK_S):
            for m in progress.snapshot():
                if m["name"] not in tasks:
                    tasks[m["name"]] = bars.add_task(m["name"], total=m["steps"])
                bars.update(tasks[m["name"]], completed=m["step"], total=m["steps"])


@contextmanager
def shown(topic: str, lang: str) -> Iterator[Progress]:
    """Within the block, the lesson's training steps are shown on stderr (module doc)."""
    progress, done = Progress(), threading.Event()
    watcher = threading.Thread(target=_watch, args=(progress, topic, lang, done), daemon=True, name="explain-progress")
    watcher.start()
    try:
        with reporting(progress):
            yield progress
    finally:
        done.set()
        watcher.join(5)
        sys.stderr.flush()
