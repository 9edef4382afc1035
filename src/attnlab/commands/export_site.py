"""`attnlab export-site DIR [--lang zh|en|both] [--force]`: the lab as a static site (see attnlab.web.export.site)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from attnlab.commands.signals import exit_code, terminating


class Lang(str, Enum):
    zh = "zh"
    en = "en"
    both = "both"


def register(app: typer.Typer) -> None:
    @app.command("export-site")
    def export_site(
        directory: Path = typer.Argument(..., metavar="DIR", help="New or empty folder for the site."),
        lang: Lang = typer.Option(Lang.both, "--lang", help="both = Chinese at the root, English under en/."),
        force: bool = typer.Option(False, "--force", help="Replace everything in DIR if it is not empty."),
        states: bool = typer.Option(
            True,
            "--states/--no-states",
            help="Also render what a learner clicks to (/toy's queries, mask, answers, "
            "presets and v2 guesses, each part of the page on its own; a few "
            "values of each explain topic; a poem model trained now and its "
            "generations). --no-states: each page in its default state.",
        ),
    ) -> None:
        """Write the lab as a static site a teacher can host or open from file://: every page, in Chinese and
        English, with its figures and its API's JSON, and the states the pages' choices lead to, as linked
        pages. Typing your own numbers and training need the live lab (attnlab serve)."""
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from attnlab.web.export.site import ExportError, check_destination
        from attnlab.web.export.site import export_site as run

        langs = ("zh", "en") if lang is Lang.both else (lang.value,)
        console = Console(stderr=True)
        try:
            check_destination(directory, force)  # before the app and torch load
            with (
                terminating(),
                Progress(
                    TextColumn("[bold]export-site[/]"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.description}", style="dim"),
                    TimeElapsedColumn(),
                    console=console,
                    transient=True,
                ) as bar,
            ):
                task = bar.add_task("", total=None)
                report = run(
                    directory,
                    langs,
                    force=force,
                    states=states,
                    progress=lambda done, total, what: bar.update(task, completed=done, total=total, description=what),
                )
        except KeyboardInterrupt as err:  # Ctrl+C or SIGTERM: the site is written whole at the end, or not at all
            typer.echo(f"attnlab export-site: stopped; nothing was written to {directory}", err=True)
            raise typer.Exit(exit_code(err)) from None
        except ExportError as err:
            typer.echo(f"attnlab export-site: {err}", err=True)
            raise typer.Exit(1) from None
        except OSError as err:
            typer.echo(f"attnlab export-site: cannot write {directory}: {err.strerror or err}", err=True)
            raise typer.Exit(1) from None
        typer.echo(
            f"attnlab export-site: {len(report.pages)} pages, {len(report.assets)} figures and styles, "
            f"{len(report.api)} JSON answers in {report.dir}"
        )
        typer.echo(f"open {report.dir / 'index.html'} or put the folder on any static web host")
