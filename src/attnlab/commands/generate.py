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
        max_new_tokens: int = typer.Option(100, "--max-new-tokens", "-n", min=1, max=100_000, help="Stop after this many new tokens (or earlier, at the end-of-text mark)."),
        temperature: float = typer.Option(1.0, "--temperature", "-t", help="softmax(logits / T); 0 = greedy. Must be >= 0."),
        top_k: int = typer.Option(None, "--top-k", help="Draw only from the k most probable tokens (k >= 1)."),
        top_p: float = typer.Option(None, "--top-p", help="Draw only from the smallest set of tokens holding probability p, in (0, 1]."),
        greedy: bool = typer.Option(False, "--greedy", help="Always take the most probable token (= --temperature 0)."),
        seed: int = typer.Option(None, "--seed", min=0, help="Seed for sampling, so a run can be repeated."),
        explain: bool = typer.Option(False, "--explain", help="Show the pipeline: ① ids, ② embeddings, ③ attention, ④ next-token probabilities, then every step's candidates."),
        device: str = typer.Option("cpu", "--device", help="auto, cpu, cuda or mps."),
        lang: str = typer.Option("zh", "--lang", help="zh or en (for --explain)."),
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

        from attnlab.sampling import generate as run_generation  # torch loads here
        from attnlab.train import load_checkpoint, pick_device

        try:
            ckpt = load_checkpoint(checkpoint, device=pick_device(device))
            for warning in ckpt.warnings:
                typer.echo(f"attnlab generate: warning: {warning}", err=True)
            unknown = ckpt.tokenizer.unknown(prompt)
            if unknown:
                fail("generate", f"the prompt has characters this checkpoint never saw: {''.join(unknown)!r} "
                                 f"(it was trained on {ckpt.meta.get('corpus', '?')})")
            context = ckpt.model.config.context_length
            n_prompt = len(ckpt.tokenizer.encode(prompt))
            if n_prompt > context:  # said once, here, not at every step
                typer.echo(f"attnlab generate: the prompt is {n_prompt} tokens, longer than the context "
                           f"({context}); the model reads only its last {context}", err=True)
            if explain:
                _explain_pipeline(ckpt, prompt, lang)
            gen = run_generation(ckpt.model, ckpt.tokenizer, prompt, max_new_tokens=max_new_tokens,
                                 temperature=temperature, top_k=top_k, top_p=top_p, greedy=greedy, seed=seed,
                                 n_candidates=5)
        except ValueError as err:
            fail("generate", str(err))
        if explain:
            _explain_steps(gen, lang)
        typer.echo(gen.text)


def _explain_pipeline(ckpt, prompt: str, lang: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from attnlab.i18n import t
    from attnlab.lessons.pipeline import pipeline
    from attnlab.sampling import prob_text
    from attnlab.web.render import num

    view = pipeline(ckpt.model, ckpt.tokenizer, text=prompt, context=prompt, target=None)
    console = Console()

    console.rule(t("pipeline.step1.title", lang))
    ids = Table(show_edge=False)
    for tok in view.tokens.tokens:
        ids.add_column(escape(tok), justify="center")
    ids.add_row(*[str(i) for i in view.tokens.ids])
    console.print(ids)
    console.print(t("pipeline.step1.vocab", lang, n=view.tokens.vocab_size), style="dim")

    e = view.embedding
    console.rule(t("pipeline.step2.title", lang))
    shown = min(6, e.d_model)
    emb = Table(show_edge=False, title=t("pipeline.step2.table", lang, shown=shown, d=e.d_model))
    emb.add_column("")
    emb.add_column(escape("E[id]"))
    emb.add_column(escape("P[pos]") if e.position_rows is not None else "P (RoPE)")
    emb.add_column("x = E + P")
    for i, tok in enumerate(e.tokens):
        pos = " ".join(num(v, 2) for v in e.position_rows[i][:shown]) if e.position_rows is not None else "—"
        emb.add_row(f"{escape(tok)} ({i})", " ".join(num(v, 2) for v in e.token_rows[i][:shown]), pos,
                    " ".join(num(v, 2) for v in e.sums[i][:shown]))
    console.print(emb)

    a = view.attention
    console.rule(t("pipeline.step3.title", lang))
    for m in a.maps:
        # the title on a line of its own: as a table title it wraps to the width of a 5-column map
        console.print(t("pipeline.step3.head", lang, layer=m.layer + 1, head=m.head + 1), style="italic")
        heat = Table(show_edge=False)
        heat.add_column("q \\ k")
        for tok in a.tokens:
            heat.add_column(escape(tok), justify="right")
        for i, (tok, row) in enumerate(zip(a.tokens, m.weights)):
            heat.add_row(escape(tok), *[num(w, 2) if j <= i else "·" for j, w in enumerate(row)])  # causal: j <= i
        console.print(heat)
    _explain_focus(console, ckpt, a.tokens, lang)

    n = view.next
    console.rule(t("pipeline.step4.title", lang))
    dist = Table(show_edge=False, title=t("pipeline.step4.after", lang, context=n.context))
    dist.add_column(t("pipeline.token", lang))
    dist.add_column("p", justify="right")
    for c in n.top:
        dist.add_row(escape(c.token), prob_text(c.prob))
    console.print(dist)
    console.print(t("pipeline.step4.uniform", lang, p=num(n.uniform)), style="dim")


def _explain_focus(console, ckpt, tokens: list[str], lang: str) -> None:
    """③ checked: where 月 (or else the prompt's last token) looks, per layer and head (attnlab.lessons.focus)."""
    from rich.markup import escape
    from rich.table import Table

    from attnlab.i18n import t
    from attnlab.lessons.focus import DEFAULT_EXPECTED, DEFAULT_QUERY, focus

    query = DEFAULT_QUERY if DEFAULT_QUERY in tokens else tokens[-1]
    f = focus(ckpt.model, ckpt.tokenizer, "".join(tokens), query, DEFAULT_EXPECTED if query == DEFAULT_QUERY else None,
              lang=lang)
    console.print(t("pipeline.focus.h", lang, query=f.query), style="bold")
    table = Table(show_edge=False)
    table.add_column(t("pipeline.focus.head", lang))
    for tok in f.tokens:
        table.add_column(escape(tok), justify="right")
    table.add_column(t("pipeline.focus.top", lang))
    for h in f.heads:
        table.add_row(f"{h.layer + 1} / {h.head + 1}", *[f"{w:.4f}" for w in h.weights], escape(h.top_token))
    console.print(table)
    for c in f.claims:
        console.print(("✓ " if c.holds else "✗ ") + escape(c.text), highlight=False)
    console.print(t("pipeline.focus.honest", lang), style="dim")


def _explain_steps(gen, lang: str) -> None:
    """One row per candidate: p (the model's softmax), p′ (after temperature / top-k / top-p), and a mark that
    reads without colour: ✓ kept, × and the filter that cut it, ← the one drawn."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from attnlab.i18n import t
    from attnlab.sampling import prob_text
    from attnlab.web.render import num

    console = Console()
    console.rule(t("pipeline.step6.title", lang))
    s = gen.settings
    console.print(t("pipeline.step6.settings", lang, temperature=num(s["temperature"]),
                    top_k=s["top_k"] or "—", top_p=s["top_p"] or "—"), style="dim")
    table = Table(show_edge=False)
    table.add_column("#", justify="right")
    table.add_column(t("pipeline.token", lang))
    table.add_column("p", justify="right")
    table.add_column("p′", justify="right")
    table.add_column(t("pipeline.cli.filter", lang))
    for step in gen.steps:
        for i, c in enumerate(step.candidates):
            mark = (f"✓ {t('pipeline.cli.kept', lang)}" if c.kept
                    else f"× {t('pipeline.cli.cut.' + (c.cut_by or 'greedy'), lang)}")
            if c.id == step.chosen.id:
                mark += f"  ← {t('pipeline.step6.chosen', lang)}"
            table.add_row(str(step.index + 1) if i == 0 else "", escape(c.token), prob_text(c.prob),
                          prob_text(c.filtered_prob), mark, style=None if c.kept else "dim",
                          end_section=i == len(step.candidates) - 1)
    console.print(table)
    console.print(t("pipeline.cli.legend", lang), style="dim")
