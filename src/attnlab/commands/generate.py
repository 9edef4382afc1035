"""`attnlab generate`: continue a prompt one token at a time with a trained checkpoint (step ⑥)."""

from __future__ import annotations

from pathlib import Path

import typer

from attnlab.commands.train import DEVICES, check_seed, fail

LANGS = ("zh", "en")


def register(app: typer.Typer) -> None:
    @app.command()
    def generate(
        checkpoint: Path = typer.Option(..., "--checkpoint", "-k", help="A directory written by `attnlab train`."),
        prompt: str = typer.Option(..., "--prompt", "-p", help="The beginning to continue, e.g. 床前."),
        max_new_tokens: int = typer.Option(
            100,
            "--max-new-tokens",
            "-n",
            min=1,
            max=100_000,
            help="Stop after this many new tokens (or earlier, at the end-of-text mark).",
        ),
        temperature: float = typer.Option(
            1.0, "--temperature", "-t", help="softmax(logits / T); 0 = greedy. Must be >= 0."
        ),
        top_k: int = typer.Option(None, "--top-k", help="Draw only from the k most probable tokens (k >= 1)."),
        top_p: float = typer.Option(
            None, "--top-p", help="Draw only from the smallest set of tokens holding probability p, in (0, 1]."
        ),
        greedy: bool = typer.Option(False, "--greedy", help="Always take the most probable token (= --temperature 0)."),
        seed: int = typer.Option(None, "--seed", min=0, help="Seed for sampling, so a run can be repeated."),
        explain: bool = typer.Option(
            False,
            "--explain",
            help="Show the pipeline: ① ids, ② embeddings, ③ attention, ④ next-token probabilities, then every step's candidates.",
        ),
        device: str = typer.Option("cpu", "--device", help="auto, cpu, cuda or mps."),
        lang: str = typer.Option("zh", "--lang", help="zh or en (for --explain and the --form verdict)."),
        form: str = typer.Option(
            None,
            "--form",
            help="Write a poem of this form from the prompt as its start: wujue (五绝), qijue (七绝), wulv (五律) or qilv (七律); stops after the form's last verse, and --explain shows each step's verse and character.",
        ),
        poem_start: bool = typer.Option(
            None,
            "--poem-start/--no-poem-start",
            help="Read the end-of-text mark before the prompt, so the prompt begins a poem as every poem began in training. Default: on for a checkpoint trained on a folder or glob of poems (its config.json has corpus_options) and with --form; off otherwise (the built-in poems are learned without the mark).",
        ),
    ) -> None:
        """Generate text from a checkpoint, one token at a time (KV cache), greedy or sampled."""
        if temperature < 0 or temperature != temperature:
            fail("generate", f"--temperature must be >= 0 (0 = greedy), got {temperature}")
        if top_k is not None and top_k < 1:
            fail("generate", f"--top-k must be >= 1, got {top_k}")
        if top_p is not None and not 0 < top_p <= 1:
            fail("generate", f"--top-p must be in (0, 1], got {top_p}")
        if device not in DEVICES:
            fail("generate", f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
        check_seed("generate", seed)
        if lang not in LANGS:
            fail("generate", f"--lang must be zh or en, got {lang!r}")
        if not prompt:
            fail("generate", "--prompt is empty; give the beginning of a text, e.g. --prompt 床前")
        from attnlab.text.forms import FORMS

        if form is not None and form not in FORMS:
            fail("generate", f"--form must be one of {', '.join(FORMS)}, got {form!r}")

        from attnlab.commands.signals import exit_code, terminating
        from attnlab.lessons.pipeline.view import show_pipeline, show_steps
        from attnlab.sampling import generate_from  # torch loads here
        from attnlab.train import load_checkpoint, pick_device

        try:
            ckpt = load_checkpoint(checkpoint, device=pick_device(device))
            for warning in ckpt.warnings:
                typer.echo(f"attnlab generate: warning: {warning}", err=True)
            if ckpt.model.config.ablations:  # a model trained with a part switched off generates with it off
                typer.echo(
                    f"attnlab generate: note: this checkpoint was trained with "
                    f"{', '.join(ckpt.model.config.ablations)} switched off",
                    err=True,
                )
            unknown = ckpt.tokenizer.unknown(prompt)
            if unknown:
                fail(
                    "generate",
                    f"the prompt has characters this checkpoint never saw: {''.join(unknown)!r} "
                    f"(it was trained on {ckpt.meta.get('corpus', '?')})",
                )
            context = ckpt.model.config.context_length
            n_prompt = len(ckpt.tokenizer.encode(prompt))
            if n_prompt > context:  # said once, here, not at every step
                typer.echo(
                    f"attnlab generate: the prompt is {n_prompt} tokens, longer than the context "
                    f"({context}); the model reads only its last {context}",
                    err=True,
                )
            if explain:
                show_pipeline(ckpt, prompt, lang)
            # a poem checkpoint starts the prompt as a poem, as its training windows did (sampling.starts_poems)
            written: list[str] = []  # the tokens so far: what Ctrl+C or SIGTERM keeps
            with terminating():
                gen = generate_from(
                    ckpt,
                    prompt,
                    poem_start=poem_start,
                    form=form,
                    max_new_tokens=max_new_tokens,
                    temperature=temperature,
                    top_k=top_k,
                    top_p=top_p,
                    greedy=greedy,
                    seed=seed,
                    n_candidates=5,
                    on_step=lambda step: written.append(step.chosen.token),
                )
        except KeyboardInterrupt as err:
            typer.echo(prompt + "".join(written))
            typer.echo(f"attnlab generate: stopped after {len(written)} new tokens; the text so far is above", err=True)
            raise typer.Exit(exit_code(err)) from None
        except ValueError as err:
            fail("generate", str(err))
        if explain:
            show_steps(gen, lang, form)
        typer.echo(gen.text)
        if form is not None:
            _check_form(gen.text, form, lang)


def _check_form(text: str, form: str, lang: str) -> None:
    """Say (on stderr) whether the poem came out in the form asked for: only the stopping is imposed."""
    from attnlab.i18n import t
    from attnlab.text.forms import FORMS, classify

    verses, chars = FORMS[form]
    key = "poems.check.holds" if classify(text) == form else "poems.check.fails"
    # a blank line first: the verdict is not a line of the poem, even where stdout and stderr are shown joined
    typer.echo("\n" + t(key, lang, name=t(f"poems.name.{form}", lang), verses=verses, chars=chars), err=True)
