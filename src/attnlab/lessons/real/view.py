"""The terminal views of `attnlab real`: a sentence's heads, the coreference check and a word's neighbours (the
lesson computed every number; this only formats)."""

from __future__ import annotations


def show(r, lang: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from attnlab.i18n import t

    console = Console(highlight=False)
    console.rule(f"[bold]{t('real.title', lang)}")
    console.print(t("real.english", lang), style="dim", markup=False)
    console.print(f"{t('real.tokens.h', lang)}: " + " ".join(r.tokens), markup=False)
    patterns = r.patterns
    table = Table(title=t("real.pat.h", lang), show_edge=False)
    for p in patterns.patterns:
        table.add_column(t(f"real.pat.name.{p}", lang))
    for i in range(5):
        table.add_row(*(f"L{h.layer}·H{h.head} {num(h.score)}" for h in (patterns.ranking[p][i] for p in patterns.patterns)))
    console.print(table)
    d = r.detail
    if d is None:
        console.print("--layer L --head H: " + t("real.grid.note", lang), style="dim", markup=False)
        return
    for title, m in ((t("real.detail.weights", lang), d.weights), (t("real.detail.contrib", lang), d.contribution_norms)):
        table = Table(title=f"{t('real.detail.h', lang, l=d.layer, h=d.head)} — {title}", show_edge=False)
        table.add_column("")
        for tok in r.tokens:
            table.add_column(tok, justify="right")
        for tok, row in zip(r.tokens, m):
            table.add_row(tok, *(num(x, 2) for x in row))
        console.print(table)
    console.print(t("real.detail.note", lang, n=d.disagreements, T=len(r.tokens)), markup=False)


def show_coref(co, lang: str) -> None:
    from rich.console import Console

    from attnlab.i18n import t
    from attnlab.lessons.common.view import print_claims

    console = Console(highlight=False)
    console.rule(f"[bold]{t('real.coref.h', lang)}")
    console.print(t("real.coref.intro", lang), style="dim", markup=False)
    for case in co.cases:
        console.print(case.text, style="bold", markup=False)
        console.print("  " + t("real.coref.count", lang, n=case.n_prefer_implied, of=case.n_heads, implied=case.implied,
                                other=case.n_prefer_other, rival=case.other, ties=case.n_ties,
                                last=case.last_layer_prefer_implied, heads=case.n_heads // 6), markup=False)
        console.print("  " + t("real.coref.chance", lang, expected=num(case.chance_expected), untied=case.n_untied,
                                need=case.chance_needed) + " " + t("real.coref.first", lang, first=case.first_noun, n=case.n_prefer_first),
                      markup=False)
        console.print("  " + t("real.coref.mean", lang) + ": " + ", ".join(f"{c} {w:.3f}" for c, w in case.mean_weight.items()), markup=False)
    console.rule(t("real.coref.pairs.h", lang))
    for p in co.pairs:
        console.print(t("real.coref.pair.h", lang, a=p.cases[0], b=p.cases[1]) + ": " + t(
            "real.coref.pair.text", lang, a=p.cases[0], b=p.cases[1], first=p.candidates[0], second=p.candidates[1],
            untied=p.untied, fa=p.first_a, fb=p.first_b, with_=p.switched_with, against=p.switched_against,
            kept_first=p.kept_first, kept_second=p.kept_second), markup=False)
    console.print(co.finding, style="bold", markup=False)
    print_claims(console, co.claims)
    console.print(co.caveat, style="dim", markup=False)


def show_embeddings(e, lang: str) -> None:
    from rich.console import Console

    from attnlab.i18n import t
    from attnlab.lessons.common.view import print_claims

    console = Console(highlight=False)
    console.rule(f"[bold]{t('real.emb.h', lang)}")
    console.print(t("real.emb.near", lang, word=e.word) + ": " + ", ".join(f"{n.token} {n.cosine:.3f}" for n in e.neighbours), markup=False)
    console.print(t("real.emb.analogy", lang) + ": " + t("real.emb.analogy.rank", lang, rank=e.analogy_rank, cos=f"{e.analogy_cosine:.3f}"), markup=False)
    console.print(t("real.emb.onehot.text", lang, onehot=f"{e.onehot_cosine:g}", dense=f"{e.dense_cosine:.3f}"), markup=False)
    print_claims(console, e.claims)


def num(x: float, digits: int = 3) -> str:
    """0.87157 -> '0.872', 0.5 -> '0.5' (the page's format; the CLI does not import from web/)."""
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text.replace("-", "\u2212")
