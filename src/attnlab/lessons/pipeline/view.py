"""The terminal views of `attnlab generate --explain`: steps ① to ④ for the prompt, where 月 looks (③ checked),
and every generated token's candidates under the filters (⑥). The lessons computed every number; this only formats."""

from __future__ import annotations


def show_pipeline(ckpt, prompt: str, lang: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from attnlab.display.fmt import num
    from attnlab.i18n import t
    from attnlab.lessons.pipeline.lesson import pipeline
    from attnlab.sampling import prob_text

    view = pipeline(ckpt.model, ckpt.tokenizer, text=prompt, context=prompt, target=None)
    console = Console()

    console.rule(t("pipeline.step1.title", lang))
    ids = Table(show_edge=False)
    for tok in view.tokens.tokens:
        ids.add_column(escape(tok), justify="center", overflow="fold")
    ids.add_row(*[str(i) for i in view.tokens.ids])
    console.print(ids)
    console.print(t("pipeline.step1.vocab", lang, n=view.tokens.vocab_size), style="dim")

    e = view.embedding
    console.rule(t("pipeline.step2.title", lang))
    shown = min(6, e.d_model)
    emb = Table(show_edge=False, title=t("pipeline.step2.table", lang, shown=shown, d=e.d_model))
    emb.add_column("", overflow="fold")
    emb.add_column(escape("E[id]"), overflow="fold")
    emb.add_column(escape("P[pos]") if e.position_rows is not None else "P (RoPE)", overflow="fold")
    emb.add_column("x = E + P", overflow="fold")
    for i, tok in enumerate(e.tokens):
        pos = " ".join(num(v, 2) for v in e.position_rows[i][:shown]) if e.position_rows is not None else "—"
        emb.add_row(
            f"{escape(tok)} ({i})",
            " ".join(num(v, 2) for v in e.token_rows[i][:shown]),
            pos,
            " ".join(num(v, 2) for v in e.sums[i][:shown]),
        )
    console.print(emb)

    a = view.attention
    console.rule(t("pipeline.step3.title", lang))
    for m in a.maps:
        # the title on a line of its own: as a table title it wraps to the width of a 5-column map
        console.print(t("pipeline.step3.head", lang, layer=m.layer + 1, head=m.head + 1), style="italic")
        heat = Table(show_edge=False)
        heat.add_column("q \\ k", overflow="fold")
        for tok in a.tokens:
            heat.add_column(escape(tok), justify="right", overflow="fold")
        for i, (tok, row) in enumerate(zip(a.tokens, m.weights)):
            heat.add_row(escape(tok), *[num(w, 2) if j <= i else "·" for j, w in enumerate(row)])  # causal: j <= i
        console.print(heat)
    show_focus(console, ckpt, a.tokens, lang)

    n = view.next
    console.rule(t("pipeline.step4.title", lang))
    dist = Table(show_edge=False, title=t("pipeline.step4.after", lang, context=n.context))
    dist.add_column(t("pipeline.token", lang), overflow="fold")
    dist.add_column("p", justify="right", overflow="fold")
    for c in n.top:
        dist.add_row(escape(c.token), prob_text(c.prob))
    console.print(dist)
    console.print(t("pipeline.step4.uniform", lang, p=num(n.uniform)), style="dim")


def show_focus(console, ckpt, tokens: list[str], lang: str) -> None:
    """③ checked: where 月 (or else the prompt's last token) looks, per layer and head (attnlab.lessons.pipeline.focus)."""
    from rich.markup import escape
    from rich.table import Table

    from attnlab.i18n import t
    from attnlab.lessons.common.view import print_claims
    from attnlab.lessons.pipeline.focus import DEFAULT_EXPECTED, DEFAULT_QUERY, focus

    query = DEFAULT_QUERY if DEFAULT_QUERY in tokens else tokens[-1]
    f = focus(
        ckpt.model,
        ckpt.tokenizer,
        "".join(tokens),
        query,
        DEFAULT_EXPECTED if query == DEFAULT_QUERY else None,
        lang=lang,
    )
    console.print(t("pipeline.focus.h", lang, query=f.query), style="bold")
    table = Table(show_edge=False)
    table.add_column(t("pipeline.focus.head", lang), overflow="fold")
    for tok in f.tokens:
        table.add_column(escape(tok), justify="right", overflow="fold")
    table.add_column(t("pipeline.focus.top", lang), overflow="fold")
    for h in f.heads:
        table.add_row(f"{h.layer + 1} / {h.head + 1}", *[f"{w:.4f}" for w in h.weights], escape(h.top_token))
    console.print(table)
    print_claims(console, f.claims)
    console.print(t("pipeline.focus.honest", lang), style="dim")


def show_steps(gen, lang: str, form: str | None = None) -> None:
    """One row per candidate: p (the model's softmax), p′ (after temperature / top-k / top-p), and a mark that
    reads without colour: ✓ kept, × and the filter that cut it, ← the one drawn."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from attnlab.display.fmt import num
    from attnlab.i18n import t
    from attnlab.sampling import prob_text

    console = Console()
    console.rule(t("pipeline.step6.title", lang))
    s = gen.settings
    console.print(
        t(
            "pipeline.step6.settings",
            lang,
            temperature=num(s["temperature"]),
            top_k=s["top_k"] or "—",
            top_p=s["top_p"] or "—",
        ),
        style="dim",
    )
    places = verse_places(gen) if form else None
    if form:
        from attnlab.text.forms import FORMS

        verses, chars = FORMS[form]
        console.print(
            t("poems.form", lang, name=t(f"poems.name.{form}", lang), verses=verses, chars=chars), style="dim"
        )
    table = Table(show_edge=False)
    table.add_column("#", justify="right", overflow="fold")
    if places:
        table.add_column(t("poems.position", lang), justify="center", overflow="fold")
    table.add_column(t("pipeline.token", lang), overflow="fold")
    table.add_column("p", justify="right", overflow="fold")
    table.add_column("p′", justify="right", overflow="fold")
    table.add_column(t("pipeline.cli.filter", lang), overflow="fold")
    for step in gen.steps:
        for i, c in enumerate(step.candidates):
            mark = (
                f"✓ {t('pipeline.cli.kept', lang)}"
                if c.kept
                else f"× {t('pipeline.cli.cut.' + (c.cut_by or 'greedy'), lang)}"
            )
            if c.id == step.chosen.id:
                mark += f"  ← {t('pipeline.step6.chosen', lang)}"
            where = [places[step.index] if i == 0 else ""] if places else []
            table.add_row(
                str(step.index + 1) if i == 0 else "",
                *where,
                escape(c.token),
                prob_text(c.prob),
                prob_text(c.filtered_prob),
                mark,
                style=None if c.kept else "dim",
                end_section=i == len(step.candidates) - 1,
            )
    console.print(table)
    console.print(t("pipeline.cli.legend", lang), style="dim")
    if places:
        console.print(t("poems.position.legend", lang), style="dim")


def verse_places(gen) -> list[str]:
    """'verse·char' of every step: where in the poem the token it chooses goes (attnlab.text.forms.position)."""
    from attnlab.text.forms import position

    out, text = [], gen.prompt
    for step in gen.steps:
        p = position(text)
        out.append(f"{p.verse}·{p.char}")
        text += step.chosen.token if step.chosen.token != "<eot>" else ""
    return out
