"""The terminal view of `attnlab explain mlm`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    console.print(
        f"{t('explain.mlm.corpus', lang)} {r.corpus} · {t('explain.mlm.poems', lang)} {r.n_train_poems} / "
        f"{r.n_test_poems} · |V| = {r.vocab_size} · {t('explain.mlm.context', lang)} {r.context} · "
        f"{t('explain.mlm.n_params', lang)} {' / '.join(g(n) for n in r.n_params.values())}"
    )
    kinds = ("bidirectional", "causal", "causal_fill", "baseline")
    rows = [
        [
            t(f"explain.mlm.model.{k}", lang),
            r.correct[k],
            r.n_masked,
            r.accuracy[k],
            r.held_out_loss.get(k),
            r.final_loss.get(k),
            r.by_verse[k]["first"],
            r.by_verse[k]["second"],
        ]
        for k in kinds
    ]
    console.print(
        table(
            t("explain.mlm.h.accuracy", lang),
            [t(f"explain.mlm.{k}", lang) for k in ("model", "correct", "masked", "accuracy", "held_out_loss", "loss")]
            + [f"{t(f'explain.mlm.verse.{v}', lang)} ({r.n_by_verse[v]})" for v in ("first", "second")],
            rows,
        )
    )
    console.print(
        f"{t('explain.mlm.unseen', lang)}: {r.n_unseen} · {t('explain.mlm.right_change', lang)}: "
        f"{g(r.causal_right_change)} / {g(r.encoder_right_change)}"
    )
    f = r.fill
    models = ("bidirectional", "causal", "causal_fill")
    rows = [
        [k + 1, *[v for c in cands for v in (c.char, c.p)]]
        for k, cands in enumerate(zip(*[getattr(f, m) for m in models]))
    ]
    console.print(
        table(
            f"{t('explain.mlm.h.fill', lang)}: {f.text}",
            ["#", *[h for m in models for h in (t(f"explain.mlm.model.{m}", lang), "p")]],
            rows,
        )
    )
    for ex in r.examples:
        rows = [[x.char, *[getattr(x, m) for m in models]] for x in ex.guesses]
        console.print(
            table(ex.poem, [t("explain.mlm.char", lang), *[t(f"explain.mlm.model.{m}", lang) for m in models]], rows)
        )
