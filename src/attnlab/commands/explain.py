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
        group = ExplainGroup(name="explain", invoke_without_command=True, callback=_list_topics,
                             help="Concept lessons. `attnlab explain TOPIC --help` shows a topic's options.")
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
    table.add_column("主题")
    table.add_column("topic")
    for name, topic in TOPICS.items():
        table.add_row(name, t(f"explain.{topic.slug}.title", "zh"), t(f"explain.{topic.slug}.title", "en"))
    Console().print(table)
    Console().print("attnlab explain TOPIC --help  ·  --json  ·  --plot FILE.png|.svg  ·  --lang zh|en", style="dim")


def _topic_command(topic) -> click.Command:
    params: list[click.Parameter] = []
    for p in topic.params:
        if p.kind == "bool":
            params.append(click.Option([f"{p.option}/--no-{p.option[2:]}", p.name], default=None, help=f"{p.help} [default: {p.default}]"))
        else:
            expects = p.expects()
            params.append(click.Option([p.option, p.name], type=str, default=None, metavar=p.kind.upper(),
                                       help=f"{p.help}; {expects} [default: {p.default}]"))
    params += [
        click.Option(["--json", "as_json"], is_flag=True, help="Print the lesson's result as JSON."),
        click.Option(["--plot", "plot"], type=str, default=None, metavar="FILE", help="Write the figure to FILE (.png or .svg)."),
        click.Option(["--lang", "lang"], type=click.Choice(["zh", "en"]), default="zh", help="Language of the text."),
    ]

    def run(as_json: bool, plot: str | None, lang: str, **raw) -> None:
        values = {k: v for k, v in raw.items() if v is not None}
        if plot is not None and not plot.lower().endswith((".png", ".svg")):
            _fail(topic.name, f"--plot needs a file name ending in .png or .svg, got {plot!r}")
        try:
            result = topic.run(lang=lang, **values)  # torch and the lesson load here
        except ValueError as err:
            _fail(topic.name, str(err))
        if plot is not None:
            try:
                topic.plot(result, plot, lang=lang)
            except (OSError, ValueError) as err:
                _fail(topic.name, f"cannot write the figure to {plot!r}: {err}")
        if as_json:
            from attnlab.lessons.explain import as_dict

            click.echo(json.dumps(as_dict(result), ensure_ascii=False, indent=1))
        else:
            show(topic, result, lang)
        if plot is not None:
            click.echo(f"figure: {plot}", err=as_json)

    from attnlab.i18n import t

    return click.Command(topic.name, params=params, callback=run, help=t(f"explain.{topic.slug}.summary", "en"),
                         short_help=t(f"explain.{topic.slug}.summary", "en"))


def _fail(topic: str, message: str) -> None:
    click.echo(f"attnlab explain {topic}: {message}", err=True)
    raise SystemExit(2)


# ---------------------------------------------------------------------------------------------------- views
def g(x, digits: int = 4) -> str:
    """A number as the terminal shows it (the lesson computed it; this only formats)."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "✓" if x else "✗"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{digits}g}"


def show(topic, result, lang: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from attnlab.i18n import t

    console = Console()
    console.rule(f"[bold]{t(f'explain.{topic.slug}.title', lang)}")
    console.print(t(f"explain.{topic.slug}.summary", lang), style="dim")
    console.print("  ".join(f"{k} = {v}" for k, v in result.params.items() if k != "answer"), style="cyan")
    VIEWS[topic.slug](console, result, lang, t)
    claims = Table(title=t("explain.ui.claims", lang), title_style="bold", show_header=False, show_lines=False)
    claims.add_column("", no_wrap=True)
    claims.add_column("")
    for c in result.claims:
        claims.add_row("[green]✓[/]" if c.holds else "[red]✗[/]", c.text)
    console.print(claims)


def _table(title: str, columns: list[str], rows: list[list], **kw):
    from rich.table import Table

    table = Table(title=title, title_style="bold", **kw)
    for i, c in enumerate(columns):
        table.add_column(c, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*[r if isinstance(r, str) else g(r) for r in row])
    return table


def _sqrt_dk(console, r, lang, t) -> None:
    rows = [[str(s.d_k), s.mean, s.var, s.scaled_var, m.max_weight_unscaled, m.max_weight_scaled,
             m.grad_norm_unscaled, m.grad_norm_scaled] for s, m in zip(r.sweep, r.softmax_sweep)]
    console.print(_table(t("explain.sqrt_dk.table", lang),
                         ["d_k", f"q·k {t('explain.ui.mean', lang)}", "Var q·k", "Var/d_k", t("explain.ui.max_p", lang),
                          f"{t('explain.ui.max_p', lang)} (√d_k)", "‖∂p/∂s‖", "‖∂p/∂s‖ (√d_k)"], rows))
    s = r.softmax
    console.print(_table(t("explain.sqrt_dk.row", lang, d_k=r.params["d_k"]), ["", "softmax(s)", "softmax(s/√d_k)"], [
        [t("explain.ui.max_weight", lang), s.max_weight_unscaled, s.max_weight_scaled],
        [t("explain.ui.entropy", lang, max=f"{r.max_entropy:.3f}"), s.entropy_unscaled, s.entropy_scaled],
        ["‖∂p/∂s‖_F", s.grad_norm_unscaled, s.grad_norm_scaled],
    ]))


def _positional(console, r, lang, t) -> None:
    rows = [[str(x.i), x.omega, x.angle, f"[[{x.matrix[0][0]:.4f}, {x.matrix[0][1]:.4f}], [{x.matrix[1][0]:.4f}, {x.matrix[1][1]:.4f}]]",
             r.wavelengths[x.i], x.max_error] for x in r.rotations[:8]]
    console.print(_table(t("explain.positional.table", lang, delta=r.params["delta"]),
                         ["i", "ω_i", "ω_i·Δ", "R(Δ)", t("explain.ui.wavelength", lang), t("explain.ui.max_error", lang)], rows))
    console.print(t("explain.ui.more_rows", lang, n=len(r.rotations)), style="dim")
    console.print(r.note, style="yellow")


def _permutation(console, r, lang, t) -> None:
    console.print(f"{''.join(r.tokens)}  →  {''.join(r.shuffled)}   perm = {r.perm}")
    for case in (r.without_positions, r.with_positions):
        key = "explain.permutation.with" if case.with_positions else "explain.permutation.without"
        rows = [[a, ", ".join(g(v, 3) for v in out_a), b, ", ".join(g(v, 3) for v in out_b)]
                for a, out_a, b, out_b in zip(r.tokens, case.outputs, r.shuffled, case.outputs_shuffled)]
        console.print(_table(t(key, lang, diff=f"{case.max_diff:.2e}"),
                             ["", t("explain.ui.out_original", lang), "", t("explain.ui.out_shuffled", lang)], rows))


def _multihead(console, r, lang, t) -> None:
    rows = [[f"{v.n_heads} × d_k={v.d_k}", v.params, v.flops, v.flops_analytic, v.weight_entries] for v in (r.one_head, r.many_heads)]
    console.print(_table(t("explain.multihead.table", lang, n=r.params["n"]),
                         ["", t("explain.ui.params", lang), "FLOPs (counter)", "8nd² + 4n²d", t("explain.ui.weight_entries", lang)], rows))
    rows = [[f"{s} → {y}"] + [h.weights[i][j] for h in r.hand_built_heads for j in range(3)] for i, (s, y) in enumerate(zip(r.inputs, r.targets))]
    console.print(_table(t("explain.multihead.hand_built", lang),
                         ["x₀ x₁ x₂ → y"] + [f"h{h.head}·k{j}" for h in r.hand_built_heads for j in range(3)], rows))
    if r.runs:
        rows = [[run.n_heads, run.d_k, f"{run.solved}/{len(run.accuracies)}", run.best, ", ".join(map(str, run.correct))] for run in r.runs]
        console.print(_table(f"{t('explain.multihead.runs', lang)} ({t('explain.multihead.seeds', lang)} {r.seeds[0]}–{r.seeds[-1]})",
                             [t("explain.ui.heads", lang), "d_k", t("explain.multihead.solved", lang), t("explain.multihead.best", lang),
                              t("explain.multihead.accuracies", lang)], rows))


def _position_wise(console, r, lang, t) -> None:
    for layer in r.layers:
        n = len(layer.block_norms)
        rows = [[f"y_{i}", *[("[dim]" if v == 0 else "[bold]") + g(v, 3) for v in row]] for i, row in enumerate(layer.block_norms)]
        title = f"{t('explain.plot.pw.' + layer.layer, lang)} — {t('explain.plot.pw.off', lang, v=layer.off_diagonal_max)}"
        console.print(_table(title, ["‖∂y_i/∂x_j‖"] + [f"x_{j}" for j in range(n)], rows))


def _rnn_gradients(console, r, lang, t) -> None:
    T = len(r.chosen.distance)
    picks = sorted({1, 2, 5, 10, 20, 50, 100, T} & set(range(1, T + 1)))
    cols = ["t−k"] + [f"λ={c.lam:g}" for c in r.curves] + [f"λ^(t−k), λ={r.chosen.lam:g}", t("explain.rnn_gradients.linear", lang),
                                                        "LSTM ∏f", "LSTM ‖∂c_t/∂c_k‖"]
    rows = [[str(k)] + [c.measured[k - 1] for c in r.curves] + [r.chosen.bound[k - 1], r.linear.measured[k - 1],
                                                               r.lstm.direct_mean[k - 1], r.lstm.full[k - 1]]
            for k in picks]
    console.print(_table(t("explain.rnn_gradients.table", lang), cols, rows))


def _serial_vs_parallel(console, r, lang, t) -> None:
    rows = [[str(p.n), p.rnn_seconds * 1e3, p.attention_seconds * 1e3, p.rnn_ops, p.attention_ops, p.rnn_steps,
             p.attention_steps, p.rnn_path, p.attention_path] for p in r.points]
    console.print(_table(t("explain.serial.table", lang), ["n", "RNN ms", "attn ms", "RNN ops", "attn ops", "RNN steps",
                                                           "attn steps", "RNN path", "attn path"], rows))


def _complexity(console, r, lang, t) -> None:
    rows = [[t(f"explain.plot.cx.{x.name}", lang), x.order, x.flops, x.flops / r.total_flops] for x in r.terms]
    console.print(_table(t("explain.complexity.table", lang, n=r.params["n"], d=r.params["d_model"]),
                         ["", "O(·)", "FLOPs", t("explain.ui.share", lang)], rows))
    rows = [[t(f"explain.plot.cx.{c.part}", lang), c.analytic, c.counted, c.analytic == c.counted] for c in r.checks]
    console.print(_table("FlopCounterMode", ["", t("explain.plot.cx.analytic", lang), "counted", ""], rows))
    console.print(t("explain.complexity.summary_line", lang, block=r.crossover_block, attn=r.crossover_attention,
                    mib=r.weights_bytes / 2**20, one=r.weights_bytes_one_head / 2**20))
    rows = [[str(p.n), p.seconds * 1e3] for p in r.time_points]
    console.print(_table(t("explain.complexity.time", lang, s=f"{r.time_slope:.2f}"), ["n", "ms"], rows))
    rn = r.rnn
    console.print(_table(t("explain.complexity.rnn_table", lang, n=rn.n, d=rn.d), ["", "FLOPs", t("explain.complexity.serial", lang)], [
        [t("explain.complexity.rnn_layer", lang), rn.rnn_flops, rn.rnn_serial_steps],
        [t("explain.complexity.attn_layer", lang), rn.attention_flops, rn.attention_serial_steps],
        [t("explain.complexity.attn_quad", lang), rn.attention_quadratic, ""],
    ]))
    s = r.params_share
    console.print(_table(t("explain.complexity.params_table", lang, d=s.d, d_ff=s.d_ff),
                         ["", t("explain.complexity.with_bias", lang), t("explain.complexity.weights_only", lang)], [
        [t("explain.complexity.attention", lang), s.attention, s.weights_attention], ["FFN", s.ffn, s.weights_ffn],
        [t("explain.complexity.norms", lang), s.norms, ""], [t("explain.complexity.ffn_share", lang), s.ffn_share, s.weights_share],
    ]))



def _forms(console, r, lang, t) -> None:
    for form in r.forms:
        console.rule(form.name)
        console.print(f"{form.attention} · {form.examples}")
        console.print(form.good_for, style="dim")
        for b in form.blocks:
            console.print(f"  {b.where} ({b.module}): {', '.join(b.children)}  —  attention: {', '.join(b.attention_modules)}")
        for m in form.masks:
            grid = "\n".join("    " + " ".join("■" if v else "·" for v in row) for row in m.observed)
            console.print(f"  {t('explain.plot.forms.mask.' + m.name, lang)} ({g(m.matches)}):\n{grid}")


def _glossary(console, r, lang, t) -> None:
    rows = [[s.stage, "(" + ", ".join(map(str, s.shape)) + ")", s.example, s.meaning] for s in r.stages]
    console.print(_table(t("explain.glossary.table", lang), ["", "shape", "", ""], rows, show_lines=True))
    rows = [[c.term, c.meaning, c.example] for c in r.context]
    console.print(_table(t("explain.glossary.context_title", lang), ["", "", ""], rows, show_lines=True))
    for q in r.quizzes:
        console.print(f"[bold]{q.number}.[/] {q.question}")
        for j, choice in enumerate(q.choices, 1):
            console.print(f"   ({j}) {choice}")
        if q.answer is None:
            console.print("   " + t("explain.ui.quiz_hint", lang, n=q.number), style="dim")
        else:
            console.print(f"   [cyan]{t('explain.ui.your_answer', lang)}[/] {q.committed}")
            if q.correct is not None:
                console.print("   " + ("[green]✓[/]" if q.correct else "[red]✗[/]"))
            console.print(f"   [green]{t('explain.ui.model_answer', lang)}[/] {q.answer}")
            if q.numbers:
                console.print("   a_j·‖v_j‖ = " + ", ".join(g(v) for v in q.numbers["contributions"]))


def _seq2seq(console, r, lang, t) -> None:
    kinds = list(r.accuracy)
    rows = [[f"{n}{' *' if longer else ''}", *[r.accuracy[k][i] for k in kinds]] for i, (n, longer) in enumerate(zip(r.lengths, r.longer))]
    console.print(_table(t("explain.plot.seq2seq.accuracy", lang), [t("explain.seq2seq.length", lang)]
                         + [t(f"explain.seq2seq.model.{k}", lang) for k in kinds], rows))
    ex = r.example
    for k in kinds:
        console.print(f"{t(f'explain.seq2seq.model.{k}', lang)}: {ex.source} → {ex.prediction[k]} {g(ex.correct[k])}")
    for title, m in [(t("explain.seq2seq.alpha_caption", lang), ex.bahdanau),
                     *[(t("explain.seq2seq.head", lang, layer=h.layer, head=h.head), h.weights) for h in r.heads]]:
        rows = [[ex.target_tokens[i], *[("[bold red]" if j == ex.truth[i] else "") + g(w, 2) for j, w in enumerate(row)]]
                for i, row in enumerate(m)]
        console.print(_table(title, [""] + ex.source_tokens, rows))


VIEWS = {
    "sqrt_dk": _sqrt_dk, "positional": _positional, "permutation": _permutation, "multihead": _multihead,
    "position_wise": _position_wise, "rnn_gradients": _rnn_gradients, "serial_vs_parallel": _serial_vs_parallel,
    "complexity": _complexity, "forms": _forms, "glossary": _glossary,
    "seq2seq": _seq2seq,
}


def _more_views() -> None:
    from attnlab.commands.explain_views import VIEWS as MORE

    VIEWS.update(MORE)


_more_views()

