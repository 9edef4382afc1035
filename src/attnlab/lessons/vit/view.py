"""The terminal view of `attnlab explain vit`: `show(console, r, lang, t)` prints the lesson's numbers; the lesson
computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

MODELS = ("vit", "cnn", "mlp")


def show(console, r, lang, t) -> None:
    k = "explain.vit."
    console.print(r.note, highlight=False)
    p = r.picture
    said = ", ".join(f"{m.upper()} {p.predicted[m]}" for m in MODELS)
    console.print(f"#{p.index}: {t(k + 'label', lang)} {p.label} · {t(k + 'predicted', lang)}: {said}", highlight=False)
    for row in p.attention:  # the class token's attention on each patch, as the patches lie
        console.print("  " + " ".join(f"{a:.2f}" for a in row), highlight=False)
    console.print(
        f"{t(k + 'on_ink', lang)}: {p.on_ink:.3f} · {t(k + 'ink', lang)}: {p.ink:.3f} · "
        f"{t(k + 'per_seed_ink', lang)}: {', '.join(f'{v:.3f}' for v in r.on_ink)} ({r.ink:.3f})",
        highlight=False,
    )
    console.print(
        table(
            t(k + "table", lang),
            [t(k + "col.n", lang)]
            + [f"{t(k + 'model.' + m, lang)} · {r.n_params[m]:,}" for m in MODELS]
            + [t(k + "col.gap", lang)],
            [
                [str(n)] + [r.accuracy[m][i] for m in MODELS] + [r.accuracy["cnn"][i] - r.accuracy["vit"][i]]
                for i, n in enumerate(r.n_train)
            ],
        )
    )
