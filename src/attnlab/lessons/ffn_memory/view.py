"""The terminal view of `attnlab explain ffn-memory`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

SHOWN_WINDOWS = 3  # of each key's K contexts, the strongest few fit a terminal row (the page and --json have all)


def show(console, r, lang, t) -> None:
    k = "explain.ffn_memory."
    console.print(r.note, highlight=False)
    console.print(
        table(
            t(k + "h.counts", lang),
            [t(k + "col." + c, lang) for c in ("model", "alive", "shared", "readable", "loss")],
            [
                [t(k + "row.trained", lang), r.trained.alive, r.trained.shared, r.trained.readable, r.loss],
                [
                    t(k + "row.untrained", lang),
                    r.untrained.alive,
                    r.untrained.shared,
                    r.untrained.readable,
                    r.loss_untrained,
                ],
                [
                    t(k + "row.chance", lang),
                    "—",
                    f"{100 * r.trained.shared_chance:.1f}%",
                    f"{100 * r.trained.readable_chance:.1f}%",
                    "—",
                ],
            ],
        )
    )
    console.print(
        table(
            t(k + "h.layers", lang),
            [
                t(k + "col." + c, lang)
                for c in (
                    "layer",
                    "neurons",
                    "alive",
                    "shared",
                    "readable",
                    "hurt_fire",
                    "hurt_quiet",
                    "hurt_top",
                    "hurt_random",
                )
            ],
            [
                [
                    x.layer,
                    x.neurons,
                    x.alive,
                    x.shared,
                    x.readable,
                    f"{x.hurt_fire:.4f}",
                    f"{x.hurt_quiet:.4f}",
                    f"{x.hurt_top:.4f}",
                    f"{x.hurt_random:.4f}",
                ]
                for x in r.layers
            ],
        )
    )
    console.print(
        table(
            t(k + "h.neurons", lang),
            [t(k + "col." + c, lang) for c in ("neuron", "key", "key_next", "value", "match", "hurt_fire", "example")],
            [
                [
                    f"L{x.layer}·{x.neuron}",
                    " / ".join(f"{w.before}[{w.fire}]{w.next}" for w in x.windows[:SHOWN_WINDOWS]),
                    f"{x.key_next} {100 * x.key_share:.0f}%",
                    x.value,
                    "✓" if x.readable else "✗",
                    f"{x.hurt_fire:.4f}",
                    x.example,
                ]
                for x in r.rows
            ],
        )
    )
    console.print(t(k + "untrained_note", lang), highlight=False)
