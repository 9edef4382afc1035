"""The `attnlab` command. Each command lives in `attnlab/commands/<name>.py` and registers itself here."""

from __future__ import annotations

import typer

from attnlab import __version__

app = typer.Typer(
    name="attnlab",
    help="注意力实验室 attnlab — see, compute by hand, run, train and break a Transformer.",
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"attnlab {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """注意力实验室 attnlab — see, compute by hand, run, train and break a Transformer."""


# Commands register themselves; one line per command module.
from attnlab.commands import serve  # noqa: E402

serve.register(app)
from attnlab.commands import toy  # noqa: E402

toy.register(app)
from attnlab.commands import train  # noqa: E402

train.register(app)
from attnlab.commands import generate  # noqa: E402

generate.register(app)
from attnlab.commands import explain  # noqa: E402

explain.register(app)
from attnlab.commands import export_site  # noqa: E402

export_site.register(app)
from attnlab.commands import real  # noqa: E402

real.register(app)
from attnlab.commands import scale  # noqa: E402

scale.register(app)
