"""`attnlab toy`: the toy attention lab (猫 追 老鼠 它) in the terminal, or as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer

from attnlab.commands import lang_option


def register(app: typer.Typer) -> None:
    @app.command()
    def toy(
        query: str = typer.Option(
            "它", "--query", "-q", help="The query token (猫, 追, 老鼠, 它) or its position 1..4."
        ),
        causal: bool = typer.Option(False, "--causal", help="Apply the causal mask: no key after the query."),
        as_json: bool = typer.Option(False, "--json", help="Print the lesson's result as JSON."),
        lang: str = typer.Option("zh", "--lang", help="zh or en.", callback=lang_option),
    ) -> None:
        """Both toy heads for one query: X, W_Q, W_K, W_V, Q, K, V, S = QK^T/sqrt(2), A = softmax(S), O = AV."""
        from attnlab.lessons.toy.lesson import toy_lab  # torch loads here, not for `attnlab --help`

        try:
            lab = toy_lab(query, causal=causal)
        except ValueError as err:
            typer.echo(f"attnlab toy: {err}", err=True)
            raise typer.Exit(2) from None
        if as_json:
            typer.echo(json.dumps(asdict(lab), ensure_ascii=False, indent=1))
            return
        from attnlab.lessons.toy.view import show

        show(lab, lang)
