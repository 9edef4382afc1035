"""The terminal views of `attnlab real`: a sentence's heads, the coreference check and a word's neighbours (the
lesson computed every number; this only formats)."""

from __future__ import annotations

from attnlab.display.fmt import num  # honest: 0.99980 reads 0.9998, never 1; 4e-5 never 0 (as on the page)


def show(r, lang: str) -> None:
    """The sentence's tokens, the top heads per pattern, and (with --layer and --head) one head's two maps in column
    blocks that fit the terminal ($COLUMNS when set): every number shown, none cut to an ellipsis."""
    from rich.console import Console

    from attnlab.i18n import t
    from attnlab.lessons.real.term import blocks, pack

    console = Console(highlight=False)
    width = console.width

    def say(line: str, **kw) -> None:
        console.print(line, markup=False, **kw)

    console.rule(f"[bold]{t('real.title', lang)}")
    say(t("real.english", lang), style="dim")
    say(f"{t('real.tokens.h', lang)}: " + " ".join(r.tokens))
    patterns = r.patterns
    say(t("real.pat.h", lang) + " · " + t("real.cli.top", lang), style="bold")
    for p in patterns.patterns:
        items = [f"L{h.layer}·H{h.head} {num(h.score)}" for h in patterns.ranking[p][:5]]
        for line in pack(t(f"real.pat.name.{p}", lang) + ":", items, width):
            say(line, no_wrap=True)
    d = r.detail
    if d is None:
        say("--layer L --head H: " + t("real.grid.note", lang), style="dim")
        return
    maps = ((t("real.detail.weights", lang), d.weights, 3), (t("real.detail.contrib", lang), d.contribution_norms, 2))
    for title, m, digits in maps:  # the page's digits for each map
        say("")
        say(f"{t('real.detail.h', lang, l=d.layer, h=d.head)} — {title}", style="bold")
        parts = blocks([[num(x, digits) for x in row] for row in m], r.tokens, r.tokens, width)
        say(t("real.cli.rows", lang), style="dim")
        for start, end, lines in parts:
            if len(parts) > 1:
                say(t("real.cli.cols", lang, a=start + 1, b=end, n=len(r.tokens)), style="dim")
            for line in lines:
                say(line, no_wrap=True)
    say("")
    say(t("real.detail.note", lang, n=d.disagreements, T=len(r.tokens)))
    say(t("real.cli.more", lang), style="dim")


def show_coref(co, lang: str) -> None:
    from rich.console import Console

    from attnlab.i18n import t
    from attnlab.lessons.common.view import print_claims

    console = Console(highlight=False)
    console.rule(f"[bold]{t('real.coref.h', lang)}")
    console.print(t("real.coref.intro", lang), style="dim", markup=False)
    for case in co.cases:
        console.print(case.text, style="bold", markup=False)
        console.print(
            "  "
            + t(
                "real.coref.count",
                lang,
                n=case.n_prefer_implied,
                of=case.n_heads,
                implied=case.implied,
                other=case.n_prefer_other,
                rival=case.other,
                ties=case.n_ties,
                last=case.last_layer_prefer_implied,
                heads=case.n_heads // 6,
            ),
            markup=False,
        )
        console.print(
            "  "
            + t(
                "real.coref.chance",
                lang,
                expected=num(case.chance_expected),
                untied=case.n_untied,
                need=case.chance_needed,
            )
            + " "
            + t("real.coref.first", lang, first=case.first_noun, n=case.n_prefer_first),
            markup=False,
        )
        console.print(
            "  " + t("real.coref.mean", lang) + ": " + ", ".join(f"{c} {num(w)}" for c, w in case.mean_weight.items()),
            markup=False,
        )
    console.rule(t("real.coref.pairs.h", lang))
    for p in co.pairs:
        console.print(
            t("real.coref.pair.h", lang, a=p.cases[0], b=p.cases[1])
            + ": "
            + t(
                "real.coref.pair.text",
                lang,
                a=p.cases[0],
                b=p.cases[1],
                first=p.candidates[0],
                second=p.candidates[1],
                untied=p.untied,
                fa=p.first_a,
                fb=p.first_b,
                with_=p.switched_with,
                against=p.switched_against,
                kept_first=p.kept_first,
                kept_second=p.kept_second,
            ),
            markup=False,
        )
    console.print(co.finding, style="bold", markup=False)
    print_claims(console, co.claims)
    console.print(co.caveat, style="dim", markup=False)


def show_embeddings(e, lang: str) -> None:
    from rich.console import Console

    from attnlab.i18n import t
    from attnlab.lessons.common.view import print_claims

    console = Console(highlight=False)
    console.rule(f"[bold]{t('real.emb.h', lang)}")
    console.print(
        t("real.emb.near", lang, word=e.word) + ": " + ", ".join(f"{n.token} {num(n.cosine)}" for n in e.neighbours),
        markup=False,
    )
    console.print(
        t("real.emb.analogy", lang)
        + ": "
        + t("real.emb.analogy.rank", lang, rank=e.analogy_rank, cos=num(e.analogy_cosine)),
        markup=False,
    )
    console.print(t("real.emb.onehot.text", lang, onehot=num(e.onehot_cosine), dense=num(e.dense_cosine)), markup=False)
    print_claims(console, e.claims)
