"""`attnlab explain TOPIC [--json] [--plot FILE.png|.svg] [--<param> VALUE ...]`: one concept lesson in the terminal.

`attnlab explain` alone lists the topics. Each topic's parameters are options of the same names as the
API's query parameters (d_k -> --d-k). The options are built from the lesson's parameter specs when the
topic is asked for, so `attnlab --help` imports neither torch nor the lessons.
"""

from __future__ import annotations

import json

import click
import typer

COMMON = ("json", "plot", "lang")


def register(app: typer.Typer) -> None:
    @app.command(
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
        add_help_option=False,
    )
    def explain(ctx: typer.Context) -> None:
        """Check a claim of the course with numbers you choose: attnlab explain TOPIC [--json] [--plot FILE]."""
        group = ExplainGroup(
            name="explain",
            invoke_without_command=True,
            callback=_list_topics,
            help="Concept lessons. `attnlab explain TOPIC --help` shows a topic's options.",
        )
        group.main(args=list(ctx.args), prog_name="attnlab explain", standalone_mode=True)


class ExplainGroup(click.Group):
    """The topics as subcommands, built on demand from attnlab.lessons.explain.TOPICS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from attnlab.lessons.explain import TOPICS

        return list(TOPICS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from attnlab.lessons.explain import TOPICS

        topic = TOPICS.get(name.replace("_", "-"))
        return None if topic is None else _topic_command(topic)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        from attnlab.lessons.explain import TOPICS

        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            raise click.UsageError(f"no topic {args[0]!r}; the topics are {', '.join(TOPICS)}", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from attnlab.i18n import t
        from attnlab.lessons.explain import TOPICS

        rows = [(name, t(f"explain.{topic.slug}.summary", "en")) for name, topic in TOPICS.items()]
        with formatter.section("Topics"):
            formatter.write_dl(rows)


def _list_topics() -> None:
    ctx = click.get_current_context()
    if ctx.invoked_subcommand is not None:
        return
    from rich.console import Console
    from rich.table import Table

    from attnlab.i18n import t
    from attnlab.lessons.explain import TOPICS

    table = Table(title="attnlab explain TOPIC", title_style="bold", show_lines=False)
    table.add_column("TOPIC", style="bold red", no_wrap=True)
    table.add_column("主题", overflow="fold")
    table.add_column("topic", overflow="fold")
    for name, topic in TOPICS.items():
        table.add_row(name, t(f"explain.{topic.slug}.title", "zh"), t(f"explain.{topic.slug}.title", "en"))
    Console().print(table)
    Console().print("attnlab explain TOPIC --help  ·  --json  ·  --plot FILE.png|.svg  ·  --lang zh|en", style="dim")


def _topic_command(topic) -> click.Command:
    params: list[click.Parameter] = []
    for p in topic.params:
        if p.kind == "bool":
            params.append(
                click.Option(
                    [f"{p.option}/--no-{p.option[2:]}", p.name], default=None, help=f"{p.help} [default: {p.default}]"
                )
            )
        else:
            expects = p.expects()
            params.append(
                click.Option(
                    [p.option, p.name],
                    type=str,
                    default=None,
                    metavar=p.kind.upper(),
                    help=f"{p.help}; {expects} [default: {p.default}]",
                )
            )
    params += [
        click.Option(["--json", "as_json"], is_flag=True, help="Print the lesson's result as JSON."),
        click.Option(
            ["--plot", "plot"], type=str, default=None, metavar="FILE", help="Write the figure to FILE (.png or .svg)."
        ),
        click.Option(["--lang", "lang"], type=click.Choice(["zh", "en"]), default="zh", help="Language of the text."),
    ]

    def run(as_json: bool, plot: str | None, lang: str, **raw) -> None:
        values = {k: v for k, v in raw.items() if v is not None}
        if plot is not None and not plot.lower().endswith((".png", ".svg")):
            _fail(topic.name, f"--plot needs a file name ending in .png or .svg, got {plot!r}")
        from attnlab.commands.lesson_progress import shown
        from attnlab.commands.signals import exit_code, terminating
        from attnlab.i18n import t

        try:
            # torch and the lesson load here (or the lab's disk cache answers); the claims' nulls run alike
            with terminating(), shown(topic.name, lang):
                result = topic.explained(lang=lang, **values)
        except KeyboardInterrupt as err:  # Ctrl+C or SIGTERM: a lesson is kept only whole, so nothing was
            click.echo(t("explain.cli.stopped", lang, topic=topic.name), err=True)
            raise SystemExit(exit_code(err)) from None
        except ValueError as err:  # a refused value in the language asked for: English is the message itself
            from attnlab.lessons.common.params import ParamError  # (the API's), Chinese comes from the catalog

            zh = isinstance(err, ParamError) and lang != "en"
            _fail(topic.name, err.localized(lang) if zh else str(err))
        if plot is not None:
            from attnlab.io.atomic import atomic_file

            try:
                with atomic_file(plot) as tmp:  # a full disk leaves the old file, or none, never an empty one
                    topic.plot(result, tmp, lang=lang)
            except (OSError, ValueError) as err:
                why = err.strerror if isinstance(err, OSError) and err.strerror else err
                _fail(topic.name, f"cannot write the figure to {plot!r}: {why}")
        if as_json:
            from attnlab.lessons.explain import as_dict

            click.echo(json.dumps(as_dict(result), ensure_ascii=False, indent=1))
        else:
            show(topic, result, lang)
        if plot is not None:
            click.echo(f"figure: {plot}", err=as_json)

    from attnlab.i18n import t

    return click.Command(
        topic.name,
        params=params,
        callback=run,
        help=t(f"explain.{topic.slug}.summary", "en"),
        short_help=t(f"explain.{topic.slug}.summary", "en"),
    )


def _fail(topic: str, message: str) -> None:
    click.echo(f"attnlab explain {topic}: {message}", err=True)
    raise SystemExit(2)


# ---------------------------------------------------------------------------------------------------- view
def show(topic, result, lang: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from attnlab.i18n import t
    from attnlab.lessons.common.view import claim_mark, claim_text

    console = Console()
    console.rule()  # the title on a line of its own below: a rule cuts a title longer than the terminal
    console.print(t(f"explain.{topic.slug}.title", lang), style="bold", highlight=False)
    console.print(t(f"explain.{topic.slug}.summary", lang), style="dim")
    console.print("  ".join(f"{k} = {v}" for k, v in result.params.items() if k != "answer"), style="cyan")
    topic.view(console, result, lang, t)  # the lesson's own view.py
    claims = Table(title=t("explain.ui.claims", lang), title_style="bold", show_header=False, show_lines=False)
    claims.add_column("", no_wrap=True)
    claims.add_column("", overflow="fold")
    for c in result.claims:
        claims.add_row(claim_mark(c), claim_text(c))
    console.print(claims)
