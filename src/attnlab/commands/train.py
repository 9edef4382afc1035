"""`attnlab train`: train a small GPT on a built-in poem or a corpus file and write a checkpoint directory.

Under `torchrun --nproc_per_node N -m attnlab train ...` the same command trains one model in N processes
with DDP (attnlab.train.distributed); rank 0 prints and writes the checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from attnlab.commands import lang_option
from attnlab.commands.train_progress import PROGRESS_EVERY

DEVICES = ("auto", "cpu", "cuda", "mps")
MAX_SEED = 2**31 - 1  # as the web lab; torch.manual_seed overflows past 64 bits


def check_seed(command: str, seed: int | None) -> None:
    if seed is not None and seed > MAX_SEED:
        fail(command, f"--seed must be a whole number from 0 to {MAX_SEED} (2**31 - 1), got {seed}")


def fail(command: str, message: str, code: int = 2) -> None:
    """Print `attnlab <command>: message` to stderr and exit non-zero, without a traceback."""
    typer.echo(f"attnlab {command}: {message}", err=True)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    @app.command()
    def train(
        corpus: str = typer.Option(
            None,
            "--corpus",
            "-c",
            help="poem (床前明月光), jingyesi (静夜思), a .txt / chinese-poetry .json file, or a folder or glob of chinese-poetry .json files (e.g. 全唐诗). Default: poem, or the checkpoint's corpus with --resume.",
        ),
        out: Path = typer.Option(
            ..., "--out", "-o", help="Checkpoint directory to write (config.json, model.safetensors, tokenizer.json)."
        ),
        tokenizer: str = typer.Option(
            "char", "--tokenizer", help="char (one id per character) or bpe (byte-level BPE)."
        ),
        bpe_vocab: int = typer.Option(512, "--bpe-vocab", min=257, help="Vocabulary size for --tokenizer bpe."),
        steps: int = typer.Option(
            None,
            "--steps",
            min=1,
            help="Optimizer steps in all (at most 5000 for poem and jingyesi, as on the web). Default by corpus: poem 60, jingyesi 150, files 2000.",
        ),
        layers: int = typer.Option(None, "--layers", min=1, help="Transformer blocks (default by corpus)."),
        heads: int = typer.Option(None, "--heads", min=1, help="Attention heads per block; must divide --d-model."),
        d_model: int = typer.Option(None, "--d-model", min=1, help="Width of every token vector."),
        context: int = typer.Option(None, "--context", min=1, help="Context length: the most tokens the model reads."),
        batch_size: int = typer.Option(None, "--batch-size", min=1, help="Windows per step (default 12)."),
        lr: float = typer.Option(
            None, "--lr", help="Peak learning rate, in (0, 1] (default: 1e-2 for the poems, 1e-3 for files)."
        ),
        seed: int = typer.Option(
            None, "--seed", min=0, help="Seed for the initial weights and the batches (default 0)."
        ),
        device: str = typer.Option("auto", "--device", help="auto, cpu, cuda or mps."),
        precision: str = typer.Option(
            None,
            "--precision",
            help="auto (bf16 autocast on CUDA, fp32 on the CPU, where bf16 measured slower), fp32 or bf16. Default: auto, or the checkpoint's with --resume.",
        ),
        compile_: bool = typer.Option(
            None,
            "--compile/--no-compile",
            help="torch.compile the model: faster steps after a first one that waits for the compiler (about half a minute on a CPU). Default off.",
        ),
        resume: bool = typer.Option(
            False,
            "--resume",
            help="Continue the checkpoint in --out up to --steps (same model, tokenizer, optimizer state).",
        ),
        ablate: list[str] = typer.Option(
            None,
            "--ablate",
            help="Switch a part off (repeatable): no-causal-mask, no-positions, no-scale, no-residual, no-layernorm, ffn-first, one-head, attention-only, ffn-only. Recorded in the checkpoint.",
        ),
        script: str = typer.Option(
            None,
            "--script",
            help="For a folder or glob of poems: simplified (default, the *.simplified.json files) or traditional.",
        ),
        form: str = typer.Option(
            None,
            "--form",
            help="For a folder or glob of poems: wujue (五绝), qijue (七绝), wulv (五律), qilv (七律), a comma-separated list, regular (all four; the default) or all (every poem).",
        ),
        minutes: float = typer.Option(
            None,
            "--minutes",
            help="Stop after this many minutes (the learning-rate decay ends on time); default 10 for a folder of poems.",
        ),
        patience: int = typer.Option(
            None,
            "--patience",
            min=0,
            help="Stop after this many validation estimates without a new best (0: never; default 5 for a folder of poems).",
        ),
        keep_best: bool = typer.Option(
            None,
            "--keep-best/--keep-last",
            help="Save the weights of the best validation estimate (default for a folder of poems) or the last step's.",
        ),
        max_corpus_mb: float = typer.Option(
            None,
            "--max-corpus-mb",
            help="Refuse a corpus (file, or all the files of a folder or glob) bigger than this many MB (10^6 bytes), before reading it. Default 256: reading and tokenizing takes about 18 times the corpus's size in memory.",
        ),
        progress_every: float = typer.Option(
            PROGRESS_EVERY,
            "--progress-every",
            min=0,
            help="When the output is not a terminal (a file, a pipe), print a progress line every this many seconds (0: at every logged step).",
        ),
        lang: str = typer.Option("zh", "--lang", help="zh or en.", callback=lang_option),
    ) -> None:
        """Train a tiny GPT (AdamW, cross-entropy) and save it; generate with `attnlab generate`."""
        if tokenizer not in ("char", "bpe"):
            fail("train", f"--tokenizer must be char or bpe, got {tokenizer!r}")
        if device not in DEVICES:
            fail("train", f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
        if lr is not None and not 0 < lr <= 1:
            fail("train", f"--lr must be in (0, 1], got {lr}")
        if precision is not None and precision not in ("auto", "fp32", "bf16"):
            fail("train", f"--precision must be auto, fp32 or bf16, got {precision!r}")
        check_seed("train", seed)
        from attnlab.nn.ablations import check_ablations  # no torch

        try:
            ablations = check_ablations(ablate or ())
        except ValueError as err:
            fail("train", f"--ablate: {err}")
        if minutes is not None and not 0 < minutes <= 60 * 24 * 365:
            fail("train", f"--minutes must be > 0, got {minutes}")
        if script is not None and script not in ("simplified", "traditional"):
            fail("train", f"--script must be simplified or traditional, got {script!r}")
        if max_corpus_mb is not None and not 0 < max_corpus_mb <= 10**7:
            fail(
                "train",
                f"--max-corpus-mb must be a number of megabytes above 0 (at most 10000000), got {max_corpus_mb}",
            )

        from attnlab.train import distributed, new_run, resume_run  # torch loads here, not for `attnlab --help`
        from attnlab.train.storage.checkpoint import check_out_dir

        if resume and (any(v is not None for v in (layers, heads, d_model, context)) or ablations):
            fail("train", "--resume keeps the checkpoint's model; drop --layers/--heads/--d-model/--context/--ablate")
        if resume and (script is not None or form is not None):
            fail("train", "--resume reads the poems the checkpoint was trained on; drop --script/--form")
        settings = dict(
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            seed=seed,
            precision=precision,
            compile=compile_,
            minutes=minutes,
            patience=patience,
            keep_best=keep_best,
            max_corpus_mb=max_corpus_mb,
        )
        try:
            where = distributed.setup(device) if distributed.launched() else device  # torchrun: this rank's device
        except ValueError as err:
            _fail_once(str(err))
        try:
            try:
                _check_writable(check_out_dir(out))  # before training: a run is never lost for want of a place to go
                if resume:
                    run = resume_run(out, corpus=corpus, device=where, **settings)
                else:
                    run = new_run(
                        corpus or "poem",
                        tokenizer=tokenizer,
                        bpe_vocab_size=bpe_vocab,
                        layers=layers,
                        heads=heads,
                        d_model=d_model,
                        context=context,
                        device=where,
                        ablations=ablations,
                        script=script,
                        form=form,
                        **settings,
                    )
            except ValueError as err:  # bad corpus, sizes (too big included), checkpoint, unseen characters ...
                _fail_once(str(err))
            _train(run, out, lang, progress_every)
        except typer.Exit:  # click's Exit is a RuntimeError too: let it through
            raise
        except (RuntimeError, MemoryError) as err:  # out of memory on the device, a CUDA error ...
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            _fail_once(
                f"{type(err).__name__}: {first} (try a smaller model: --layers/--d-model/--context/--batch-size)",
                code=1,
            )
        finally:
            distributed.teardown()


def _first_update(run, console, lang: str) -> None:
    """Step ⑤'s first update before training starts: the text's plain gradient step on −log p(光) beside the
    real first AdamW step, each on a copy of the untrained model (attnlab.lessons.pipeline.first_step).
    Only where the corpus holds the text's example (床前明月光): elsewhere the probe is a line of the corpus
    (attnlab.train.run.make_probe), and one step moves one character's p among thousands by nothing worth
    reading, so a line says why it is skipped instead."""
    from rich.markup import escape

    from attnlab.display.fmt import prob
    from attnlab.i18n import t
    from attnlab.lessons.common.view import print_claims
    from attnlab.lessons.pipeline.first_step import first_step, neg_log
    from attnlab.train.run import PROBE_CONTEXT, PROBE_TARGET

    probe = run.trainer.probe
    if (probe.context, probe.target) != (PROBE_CONTEXT, PROBE_TARGET):
        console.print(
            escape(t("train.cli.first.skipped", lang, target=PROBE_TARGET, context=PROBE_CONTEXT)),
            style="dim",
            highlight=False,
            soft_wrap=True,
        )
        return
    r = first_step(run, seeds=0, lang=lang)
    text = neg_log(0.12)
    console.print(
        escape(
            t(
                "train.cli.first",
                lang,
                target=r.target,
                p=prob(r.arithmetic.p),
                neg_log=f"{r.arithmetic.neg_log:.4f}",
                text_p=text.p,
                text_neg_log=f"{text.neg_log:.4f}",
            )
        )
    )
    print_claims(console, r.claims)
    console.print(escape(t("pipeline.step5.first.why", lang, target=r.target)), style="dim", highlight=False)


def _check_writable(out: Path) -> None:
    """Write a probe where the checkpoint will go (a permission check alone passes /proc as root)."""
    from attnlab.io.atomic import check_writable

    try:
        check_writable(out)
    except OSError as err:
        _fail_once(f"cannot write a checkpoint to {out}: {err.strerror or err}; choose another --out folder")


def _fail_once(message: str, code: int = 2) -> None:
    """Under torchrun every rank meets the same error: rank 0 says it, the others just exit."""
    from attnlab.train import distributed

    if distributed.launched() and os.environ["RANK"] != "0":
        raise typer.Exit(code)
    fail("train", message, code)


def _train(run, out: Path, lang: str, every: float) -> None:
    import signal
    import threading

    from rich.console import Console

    from attnlab.train import distributed

    main = distributed.is_main()  # with torchrun, only rank 0 prints and saves
    console = Console(stderr=True, quiet=not main)
    console.print(_header(run, lang), highlight=False, markup=False, soft_wrap=True)
    for warning in run.warnings if main else []:
        typer.echo(f"attnlab train: warning: {warning}", err=True)
    if main and not distributed.active() and run.trainer.step == 0 and run.trainer.probe is not None:
        _first_update(run, console, lang)
    before = run.trainer.probe_prob()

    stop = {"asked": False}

    def interrupt(signum, frame):  # finish the current step, then save: Ctrl+C never loses the run
        stop["asked"] = True

    main_thread = threading.current_thread() is threading.main_thread()  # signals can only be caught there
    # SIGTERM (kill, timeout, systemd, and torchrun passing on a terminal's Ctrl+C to every rank) is a request
    # to stop like Ctrl+C: finish the step, save, exit. Both stay caught until the checkpoint is written, so a
    # second one cannot cut the save short.
    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}
    try:
        _train_and_save(run, out, console, main, stop, before, lang, every)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _header(run, lang: str = "zh") -> str:
    """The corpus, the tokenizer, the model and where it trains, in one line."""
    from attnlab.i18n import t

    trainer, cfg, m = run.trainer, run.config, run.model.config
    line = t("train.cli.corpus", lang, corpus=run.corpus, n=len(run.data.train))
    if run.data.val is not None:
        line += t("train.cli.held_out", lang, n=len(run.data.val))
    if run.corpus_options:
        line += t(
            "train.cli.poems",
            lang,
            n=len(run.texts),
            script=run.corpus_options["script"],
            form=run.corpus_options["form"],
            held=len(run.held_out),
        )
    line += t(
        "train.cli.model",
        lang,
        kind=run.tokenizer.kind,
        vocab=run.tokenizer.vocab_size,
        layers=m.n_layers,
        heads=m.n_heads,
        d_model=m.d_model,
        context=m.context_length,
        params=f"{sum(p.numel() for p in run.model.parameters()):,}",
        device=trainer.device,
        precision=trainer.precision,
    )
    line += " + compile" if cfg.compile else ""
    line += t("train.cli.ablations", lang, names=", ".join(m.ablations)) if m.ablations else ""
    if trainer.world_size > 1:
        line += t("train.cli.ddp", lang, n=trainer.world_size, batch=cfg.batch_size)
    return line


def _train_and_save(run, out: Path, console, main: bool, stop: dict, before, lang: str, every: float) -> None:
    import threading

    from attnlab.commands.train_progress import Bar, Lines, View
    from attnlab.i18n import t
    from attnlab.train import distributed

    trainer, cfg, probe = run.trainer, run.config, run.trainer.probe
    distributed.barrier()  # every rank catches Ctrl+C before the hint says so
    if threading.current_thread() is threading.main_thread():
        console.print(t("train.cli.hint", lang), style="dim", highlight=False, markup=False)
    label = f"p({probe.target}|{probe.context})" if probe else None
    view = View(cfg.steps, 60 * cfg.minutes if cfg.minutes is not None else None, label, lang)
    if console.is_terminal:  # a live bar; elsewhere it would draw nothing until the end
        with Bar(view, console, trainer.step, enabled=main) as bar:
            result = trainer.run(callback=bar, should_stop=lambda: stop["asked"])
    else:
        lines = Lines(view, lambda text: console.print(text, highlight=False, markup=False, soft_wrap=True), every)
        result = trainer.run(callback=lines, should_stop=lambda: stop["asked"])

    error = None
    if main:
        try:
            path = run.save(out)
        except (ValueError, OSError) as err:  # a full disk, no permission: one line, the folder as it was
            error = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
    # every rank leaves together: a rank that tore down gloo while rank 0 still saved sometimes aborted
    # (SIGABRT, "terminate called without an active exception") on a busy machine
    distributed.barrier()
    if error is not None:
        fail(
            "train",
            f"could not write the checkpoint to {out}: {error}; nothing there was changed, and this "
            f"run's training is lost",
            1,
        )
    if main:
        _report(console, label, before, result, path, cfg, lang)


def _report(console, label: str | None, before, result, path, cfg, lang: str) -> None:
    from attnlab.commands.train_progress import summary
    from attnlab.display.fmt import fixed, prob
    from attnlab.i18n import t

    if label is not None and before is not None and result.p_probe is not None:
        # the course's number: how sure the model is of 光 after 床前明月 (or of a corpus line's 5th character)
        console.print(  # honest rounding: an untrained p of 0.0003 is not "0.000", −log p of 2e-5 not "0.000"
            f"{label}: {prob(before)} → {prob(result.p_probe)}   "
            f"(-log p: {fixed(-_log(before))} → {fixed(-_log(result.p_probe))})",
            highlight=False,
            markup=False,
        )
    typer.echo(t("train.cli.saved", lang, path=path, summary=summary(result, cfg.steps, cfg.minutes, lang)))


def _log(p: float) -> float:
    import math

    return math.log(p) if p > 0 else float("-inf")
