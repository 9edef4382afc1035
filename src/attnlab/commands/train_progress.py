"""What `attnlab train` prints while it trains and when it has saved, in the lab's language (--lang).

On a terminal a live bar; anywhere else (a file, a pipe, a notebook cell) a live bar draws nothing until the
run ends, so a plain line is printed at the first logged step and then every `every` seconds. A run with a
time budget (--minutes) counts its time, not steps: its step total (100,000 for a folder of poems) is only a
cap, so it shows the time left instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.display.fmt import prob
from attnlab.i18n import t

PROGRESS_EVERY = 30.0  # seconds between progress lines when the output is not a terminal


def clock(seconds: float) -> str:
    """1234.5 -> '0:20:34' (the way rich's elapsed column writes it)."""
    s = max(0, int(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


@dataclass
class View:
    """What one run's progress shows: its step cap, its time budget (seconds; None: none), the watched
    probability's label (None: no probe), and the language."""

    steps: int
    budget: float | None
    probe: str | None
    lang: str

    def step(self, step: int) -> str:
        if self.budget is not None:  # the steps are a cap, not the goal: show the step alone
            return t("train.cli.step", self.lang, step=step)
        return t("train.cli.step_of", self.lang, step=step, steps=self.steps)

    def parts(self, event: dict) -> list[str]:
        """The numbers of one step event, each worded: step, loss, val loss, best, the probe."""
        lang = self.lang
        out = [self.step(event["step"]), t("train.cli.loss", lang, loss=f"{event['loss']:.4f}")]
        if event.get("val_loss") is not None:
            out.append(t("train.cli.val", lang, loss=f"{event['val_loss']:.4f}"))
        if event.get("best_val_loss") is not None:
            out.append(t("train.cli.best", lang, loss=f"{event['best_val_loss']:.4f}"))
        if self.probe is not None and event.get("p_probe") is not None:
            out.append(f"{self.probe} {prob(event['p_probe'])}")  # 3 significant digits: 0.000312, not 0.000
        return out

    def left(self, seconds: float) -> str:
        return t("train.cli.left", self.lang, time=clock(self.budget - seconds)) if self.budget is not None else ""

    def times(self, seconds: float) -> str:
        """'0:03:00 elapsed' or, with a budget, '0:03:00 elapsed, 0:07:00 left'."""
        if self.budget is None:
            return t("train.cli.elapsed", self.lang, time=clock(seconds))
        return t("train.cli.elapsed_left", self.lang, time=clock(seconds), left=clock(self.budget - seconds))

    def line(self, event: dict) -> str:
        return " · ".join([t("train.cli.bar", self.lang), *self.parts(event), self.times(event["seconds"])])


class Lines:
    """Progress as plain lines: the first logged step, then one whenever `every` seconds (the trainer's clock,
    event["seconds"]) have passed since the last line (0: every logged step)."""

    def __init__(self, view: View, write, every: float = PROGRESS_EVERY):
        self.view, self.write, self.every = view, write, every
        self.last: float | None = None

    def __call__(self, event: dict) -> None:
        if event["type"] != "step":
            return
        if self.last is not None and event["seconds"] - self.last < self.every:
            return
        self.last = event["seconds"]
        self.write(self.view.line(event))


class Bar:
    """Progress as rich's live bar (a terminal): it fills with steps, or with time under a budget."""

    def __init__(self, view: View, console, start_step: int, enabled: bool = True):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.view = view
        self.total = view.budget if view.budget is not None else view.steps
        self.progress = Progress(
            TextColumn(f"[bold]{t('train.cli.bar', view.lang)}"),
            BarColumn(),
            TextColumn("{task.fields[text]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("{task.fields[left]}", markup=False),
            console=console,
            transient=False,
            disable=not enabled,
        )
        timed = view.budget is not None
        self.task = self.progress.add_task(
            "train",
            total=self.total,
            completed=0 if timed else start_step,
            text=view.step(start_step),
            left=view.left(0.0),
        )

    def __enter__(self) -> Bar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, event: dict) -> None:
        if event["type"] != "step":
            return
        done = min(event["seconds"], self.total) if self.view.budget is not None else event["step"]
        self.progress.update(
            self.task, completed=done, text=" · ".join(self.view.parts(event)), left=self.view.left(event["seconds"])
        )


def summary(result, steps: int, minutes: float | None, lang: str) -> str:
    """The saved run in one line: steps (or steps and time, under a budget), losses, the best, why it stopped."""
    loss = f"{result.loss:.4f}" if result.loss is not None else "-"
    if minutes is not None:
        out = t(
            "train.cli.summary.timed",
            lang,
            step=result.step,
            time=clock(result.seconds),
            minutes=f"{minutes:g}",
            loss=loss,
        )
    else:
        out = t("train.cli.summary.steps", lang, step=result.step, steps=steps, loss=loss)
    if result.val_loss is not None:
        out += t("train.cli.summary.val", lang, loss=f"{result.val_loss:.4f}")
    if result.best_val_loss is not None and result.best_step is not None and result.best_step != result.step:
        out += t("train.cli.summary.best", lang, loss=f"{result.best_val_loss:.4f}", step=result.best_step)
        out += t("train.cli.summary.best_saved", lang) if result.restored_best else ""
    if result.stopped:
        reason = result.stop_reason if result.stop_reason in ("asked", "time", "patience") else "asked"
        out += t("train.cli.summary.stopped", lang, reason=t("train.cli.stopped." + reason, lang))
    return out
