"""The terminal view of `attnlab explain word2vec`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    k = "explain.word2vec."
    console.print(
        f"{t(k + 'corpus', lang)} {r.corpus} · {t(k + 'n_chars', lang)} {r.n_chars:,} · |V| = {r.vocab_size}"
        f" · {t(k + 'n_pairs', lang)} {r.n_pairs:,}",
        highlight=False,
    )
    console.print(
        f"{t(k + 'loss', lang)} {g(r.loss_first)} → {g(r.loss_last)} ({t(k + 'loss_chance', lang)} "
        f"{g(r.loss_chance)}) · {t(k + 'gpt_loss', lang)} {g(r.gpt_loss_first)} → {g(r.gpt_loss_last)} · "
        f"{t(k + 'grad_err', lang)} {r.gradient_error:.2e}",
        highlight=False,
    )
    console.print(
        table(
            t(k + "h.training", lang),
            [t(k + "col." + c, lang) for c in ("char", "count", "unigram", "noise")],
            [[x.char, x.count, x.unigram, x.noise] for x in r.noise],
        )
    )
    for q in r.queries:
        console.print(
            table(
                f"{q.char} ({t(k + 'col.count', lang)} {q.count})",
                [t(k + "col." + c, lang) for c in ("neighbour", "cos", "cos_init", "context")],
                [[n.char, n.cos, n.cos_init, n.context] for n in q.neighbours],
            )
        )
    none = t(k + "undefined", lang)
    rows = [
        [
            t(k + "m.neighbours", lang),
            r.neighbour_score,
            r.neighbour_score_shuffled,
            r.neighbour_score_init,
            r.neighbour_score_random,
            r.neighbour_score_random_sd,
            r.neighbour_score_onehot,
        ],
        [
            t(k + "m.distributional", lang),
            r.context_corr,
            r.context_corr_shuffled,
            r.context_corr_init,
            r.context_corr_random,
            r.context_corr_random_sd,
            none,
        ],
        [
            t(k + "m.gpt", lang),
            r.gpt_corr,
            r.gpt_corr_shuffled,
            r.gpt_corr_init,
            r.gpt_corr_random,
            r.gpt_corr_random_sd,
            none,
        ],
    ]
    console.print(
        table(
            t(k + "h.measures", lang),
            [
                t(k + "col." + c, lang)
                for c in ("measure", "trained", "shuffled", "start", "random", "random_sd", "onehot")
            ],
            rows,
        )
    )
    console.print(
        table(
            t(k + "h.analogies", lang),
            [
                t(k + "col." + c, lang)
                for c in ("analogy", "answers", "rank", "rank_init", "rank_random", "chance", "n", "works")
            ],
            [
                [a.text, a.answers, a.rank, a.rank_init, a.rank_random, a.chance_rank, a.n_candidates, a.works]
                for a in r.analogies
            ],
        )
    )
    console.print(r.note, style="yellow", highlight=False)
