"""`attnlab real`: a real pretrained model (all-MiniLM-L6-v2) on your sentence, in the terminal or as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer

from attnlab.commands import lang_option


def register(app: typer.Typer) -> None:
    @app.command()
    def real(
        text: str = typer.Option(
            "The animal didn't cross the street because it was too tired.",
            "--text",
            "-t",
            help="Your sentence (the model was trained on English).",
        ),
        layer: int = typer.Option(None, "--layer", "-l", help="Show one head's full map: its layer, 1..6."),
        head: int = typer.Option(None, "--head", "-H", help="... and the head, 1..12."),
        word: str = typer.Option(
            None, "--word", "-w", help="Nearest neighbours of this word in the input table (and king − man + woman)."
        ),
        coref: bool = typer.Option(
            False,
            "--coref",
            help="The coreference question on minimal pairs: does 'it' follow the meant noun or the first noun? Counts beside chance, ties apart.",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the lesson's result as JSON."),
        lang: str = typer.Option("zh", "--lang", help="zh or en.", callback=lang_option),
    ) -> None:
        """Every layer × head of a real pretrained model on your sentence: WordPiece tokens, head patterns, one head's map."""
        from attnlab.commands.signals import exit_code, terminating
        from attnlab.lessons.real import lesson  # torch loads here, not for `attnlab --help`

        try:
            with terminating():  # SIGTERM stops it as Ctrl+C does
                if word is not None:
                    result = lesson.embeddings(word, lang=lang)
                elif coref:
                    result = lesson.coreference(lang)
                else:
                    result = lesson.analyse(text, layer, head)
        except KeyboardInterrupt as err:
            typer.echo("attnlab real: stopped before the model answered; nothing was printed", err=True)
            raise typer.Exit(exit_code(err)) from None
        except lesson.ModelMissing as err:
            typer.echo(f"attnlab real: {err.text(lang)}", err=True)
            raise typer.Exit(1) from None
        except ValueError as err:
            msg = err.text(lang) if hasattr(err, "text") and callable(err.text) else str(err)
            typer.echo(f"attnlab real: {msg}", err=True)
            raise typer.Exit(2) from None
        if as_json:
            typer.echo(json.dumps(asdict(result), ensure_ascii=False))
            return
        from attnlab.lessons.real.view import show, show_coref, show_embeddings

        if word is not None:
            show_embeddings(result, lang)
        elif coref:
            show_coref(result, lang)
        else:
            show(result, lang)
