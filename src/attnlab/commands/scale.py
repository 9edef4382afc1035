"""`attnlab scale`: a scaling sweep on a corpus, written to OUT/scale.json (attnlab.lessons.scale.sweep)."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

import typer

from attnlab.commands import lang_option
from attnlab.commands.signals import exit_code, terminating
from attnlab.commands.train import DEVICES, check_seed, fail
from attnlab.commands.train_progress import clock


def _g(x: float) -> str:
    return f"{x:.3g}"


def show_result(result: dict, lang: str) -> None:
    from attnlab.i18n import t

    for r in result["runs"]:
        typer.echo(
            t(
                "scale.cli.row",
                lang,
                run=r["name"],
                n=f"{r['n_params']:,}",
                d=f"{r['tokens']:,}",
                loss=f"{r['val_loss']:.4f}",
            )
        )
    fit = result["fit"]
    if fit is not None:
        typer.echo(
            t(
                "scale.cli.law",
                lang,
                alpha=_g(fit["alpha"]),
                alpha_lo=_g(fit["alpha_interval"][0]),
                alpha_hi=_g(fit["alpha_interval"][1]),
                beta=_g(fit["beta"]),
                beta_lo=_g(fit["beta_interval"][0]),
                beta_hi=_g(fit["beta_interval"][1]),
                E=_g(fit["E"]),
                n_lo=f"{fit['n_range'][0]:,.0f}",
                n_hi=f"{fit['n_range'][1]:,.0f}",
                d_lo=f"{fit['d_range'][0]:,.0f}",
                d_hi=f"{fit['d_range'][1]:,.0f}",
            )
        )
    reason = fit["reason"] if fit is not None else "too-few-runs"
    typer.echo(
        t("scale.cli.law_shown", lang)
        if fit is not None and fit["shown"]
        else t("scale.cli.law_not_shown", lang, reason=reason)
    )
    for row in result["optimum"]:
        fitted, measured = row.get("fitted"), row.get("measured")
        if fitted and measured:
            typer.echo(
                t(
                    "scale.cli.optimum" if fitted["in_range"] else "scale.cli.optimum_outside",
                    lang,
                    flops=_g(row["flops"]),
                    n=f"{fitted['n_params']:,.0f}",
                    tpp=_g(fitted["tokens_per_param"]),
                    mn=f"{measured['n_params']:,.0f}",
                    mtpp=_g(measured["tokens_per_param"]),
                )
            )
        elif measured:
            typer.echo(
                t(
                    "scale.cli.optimum_measured",
                    lang,
                    flops=_g(row["flops"]),
                    mn=f"{measured['n_params']:,.0f}",
                    mtpp=_g(measured["tokens_per_param"]),
                )
            )


def show_emergence(result: dict, lang: str) -> None:
    """Each size's exact and smooth scores, and the shape of each score across sizes (lessons/scale/emergence.py)."""
    from attnlab.i18n import t
    from attnlab.lessons.scale.view import shape_text

    em = result.get("emergence") or {}
    if not em.get("rows"):
        return
    typer.echo(t("explain.scale.emergence_table", lang))
    metrics = ("val_loss", "form_score", "form_prob", "exact_recall", "recall_prob")
    typer.echo("  N | " + " | ".join(t(f"explain.scale.metric.{m}", lang) for m in metrics))
    for row in em["rows"]:
        typer.echo(f"  {row['n_params']:,} | " + " | ".join("—" if row[m] is None else _g(row[m]) for m in metrics))
    for metric, sh in em["shapes"].items():
        typer.echo("  " + shape_text(metric, sh, lang, t))


def register(app: typer.Typer) -> None:
    @app.command()
    def scale(
        corpus: str = typer.Option(
            ...,
            "--corpus",
            "-c",
            help="A folder or glob of chinese-poetry .json files (e.g. 全唐诗), or a .txt / .json corpus file.",
        ),
        out: Path = typer.Option(
            ...,
            "--out",
            "-o",
            help="The sweep's folder: plan.json, runs/NAME.json (one per finished run) and scale.json. Run again with the same folder to resume a killed sweep.",
        ),
        minutes: float = typer.Option(
            30.0,
            "--minutes",
            min=0.01,
            help="Time budget: the plan picks compute budgets whose runs fit it, by each size's measured step time.",
        ),
        device: str = typer.Option("cpu", "--device", help="cpu, cuda, mps or auto."),
        seed: int = typer.Option(0, "--seed", min=0, help="Seed of every run's initial weights and batches."),
        form: str = typer.Option(
            "all", "--form", help="For a folder of poems: which forms (all, regular, wujue, ...)."
        ),
        lang: str = typer.Option("zh", "--lang", help="zh or en.", callback=lang_option),
    ) -> None:
        """A family of GPTs on one corpus at several compute budgets: held-out loss against parameters and tokens, the fitted law L(N, D) = E + A/N^α + B/D^β with bootstrap intervals, the compute-optimal size per budget beside Chinchilla's ~20 tokens per parameter, and a fixed-window MLP baseline. Writes OUT/scale.json."""
        from attnlab.i18n import t
        from attnlab.lessons.scale.planning import CONTEXT
        from attnlab.lessons.scale.sweep import run_sweep
        from attnlab.text import train_tokenizer
        from attnlab.text.poetry import is_poetry_collection
        from attnlab.train.device import pick_device
        from attnlab.train.run import load_corpus

        check_seed("scale", seed)
        if not math.isfinite(minutes):
            fail("scale", f"--minutes must be a finite number of minutes, got {minutes:g}")
        if out.exists() and not out.is_dir():
            fail("scale", f"--out {out} is a file; give a new or empty folder for the sweep (or one to resume)")
        if device not in DEVICES:
            fail("scale", f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
        try:
            source = load_corpus(corpus, form=form if is_poetry_collection(corpus) else None)
            tokenizer = train_tokenizer("char", source.texts)
            data = source.token_data(tokenizer, CONTEXT)
            dev = str(pick_device(device))
        except (OSError, ValueError) as err:
            fail("scale", str(err))
        held = len(data.val) if data.val is not None else 0
        typer.echo(
            t(
                "scale.cli.corpus",
                lang,
                corpus=source.name,
                n=f"{len(data.train):,}",
                held=f"{held:,}",
                vocab=f"{tokenizer.vocab_size:,}",
            )
        )

        def progress(event: dict) -> None:
            phase = event["phase"]
            if phase == "calibrate":
                typer.echo(t("scale.cli.calibrate", lang))
            elif phase == "plan":
                if event["done"]:
                    typer.echo(t("scale.cli.resume", lang, out=str(out), done=event["done"]))
                typer.echo(
                    t(
                        "scale.cli.plan",
                        lang,
                        runs=event["runs"],
                        sizes=event["sizes"],
                        budgets=len(event["budgets"]),
                        low=_g(event["budgets"][0]),
                        high=_g(event["budgets"][-1]),
                        time=clock(event["left_s"]),
                    )
                )
            elif phase == "run":
                typer.echo(
                    t(
                        "scale.cli.run",
                        lang,
                        i=event["done"] + 1,
                        n=event["of"],
                        run=event["run"],
                        left=clock(event["left_s"]),
                    )
                )
            elif phase in ("baseline", "fit"):
                typer.echo(t(f"scale.cli.{phase}", lang))

        try:
            command = " ".join(
                [
                    "attnlab",
                    "scale",
                    "--corpus",
                    shlex.quote(corpus),
                    "--out",
                    shlex.quote(str(out)),
                    "--minutes",
                    f"{minutes:g}",
                    "--device",
                    device,
                    "--seed",
                    str(seed),
                    "--form",
                    form,
                ]
            )
            with terminating():
                result = run_sweep(
                    (source.name, source.sha256, tokenizer, data),
                    out,
                    minutes=minutes,
                    device=dev,
                    seed=seed,
                    progress=progress,
                    command=command,
                )
        except ValueError as err:
            fail("scale", str(err))
        except KeyboardInterrupt as err:  # Ctrl+C or SIGTERM: the finished runs are on disk already
            kept = len(list((Path(out) / "runs").glob("*.json")))
            typer.echo(t("scale.cli.stopped", lang, kept=kept, out=str(out)), err=True)
            raise typer.Exit(exit_code(err)) from None
        show_result(result, lang)
        show_emergence(result, lang)
        typer.echo(t("scale.cli.wrote", lang, path=str(Path(out) / "scale.json")))
