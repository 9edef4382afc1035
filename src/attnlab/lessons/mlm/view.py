"""Terminal views of the topics that check the texts' missing claims (norms, context-vectors, one-hot) and mlm;
attnlab.commands.explain adds them to its VIEWS. The lessons computed every number; these only format."""

from __future__ import annotations


def _norms(console, r, lang, t) -> None:
    from attnlab.commands.explain import _table

    names = ("ln_alone", "ln_in_a", "ln_in_b", "bn_in_a", "bn_in_b", "bn_eval_a", "bn_eval_b")
    rows = [[str(k), r.sample[k], *[getattr(r, n)[k] for n in names]] for k in range(min(len(r.sample), 16))]
    console.print(_table(t("explain.norms.table", lang), [t("explain.norms.feature", lang), "x"]
                         + [t(f"explain.plot.norms.{n}", lang) for n in names], rows))


def _context_vectors(console, r, lang, t) -> None:
    from attnlab.commands.explain import _table

    console.print(f"{''.join(r.tokens_a)}  |  {''.join(r.tokens_b)}   →  {r.word} (position {r.position})")
    keys = ("causal_l2", "causal_cos", "causal_max", "encoder_l2", "encoder_cos", "encoder_min")
    rows = [[str(x.layer), x.causal_l2, x.causal_cos, x.causal_max_l2, x.encoder_l2, x.encoder_cos, x.encoder_min_l2] for x in r.layers]
    console.print(_table(t("explain.context_vectors.table", lang), [t("explain.context_vectors.layer", lang)]
                         + [t(f"explain.context_vectors.{k}", lang) for k in keys], rows))
    console.print(r.note, style="yellow")


def _one_hot(console, r, lang, t) -> None:
    from attnlab.commands.explain import _table, g

    console.print(f"{t('explain.one_hot.corpus', lang)} {r.corpus} · |V| = {r.vocab_size} · d = {r.d_model} · "
                  f"{t('explain.one_hot.loss', lang)} {g(r.loss_first)} → {g(r.loss_last)}")

    for q in r.queries:
        rows = [[n.char, n.cos, n.cos_init, n.context] for n in q.neighbours]
        console.print(_table(f"{q.char} ({t('explain.one_hot.count', lang)} {q.count})",
                             [t(f"explain.one_hot.{k}", lang) for k in ("neighbour", "cos", "cos_init", "context")], rows))
    console.print(r.note, style="yellow")


def _mlm(console, r, lang, t) -> None:
    from attnlab.commands.explain import _table, g

    console.print(f"{t('explain.mlm.corpus', lang)} {r.corpus} · {t('explain.mlm.poems', lang)} {r.n_train_poems} / "
                  f"{r.n_test_poems} · |V| = {r.vocab_size} · {t('explain.mlm.context', lang)} {r.context} · "
                  f"{t('explain.mlm.n_params', lang)} {' / '.join(g(n) for n in r.n_params.values())}")
    kinds = ("bidirectional", "causal", "causal_fill", "baseline")
    rows = [[t(f"explain.mlm.model.{k}", lang), r.correct[k], r.n_masked, r.accuracy[k], r.held_out_loss.get(k),
             r.final_loss.get(k), r.by_verse[k]["first"], r.by_verse[k]["second"]] for k in kinds]
    console.print(_table(t("explain.mlm.h.accuracy", lang), [t(f"explain.mlm.{k}", lang) for k in
                                                            ("model", "correct", "masked", "accuracy", "held_out_loss", "loss")]
                         + [f"{t(f'explain.mlm.verse.{v}', lang)} ({r.n_by_verse[v]})" for v in ("first", "second")], rows))
    console.print(f"{t('explain.mlm.unseen', lang)}: {r.n_unseen} · {t('explain.mlm.right_change', lang)}: "
                  f"{g(r.causal_right_change)} / {g(r.encoder_right_change)}")
    f = r.fill
    models = ("bidirectional", "causal", "causal_fill")
    rows = [[k + 1, *[v for c in cands for v in (c.char, c.p)]]
            for k, cands in enumerate(zip(*[getattr(f, m) for m in models]))]
    console.print(_table(f"{t('explain.mlm.h.fill', lang)}: {f.text}",
                         ["#", *[h for m in models for h in (t(f"explain.mlm.model.{m}", lang), "p")]], rows))
    for ex in r.examples:
        rows = [[x.char, *[getattr(x, m) for m in models]] for x in ex.guesses]
        console.print(_table(ex.poem, [t("explain.mlm.char", lang), *[t(f"explain.mlm.model.{m}", lang) for m in models]], rows))


VIEWS = {"norms": _norms, "context_vectors": _context_vectors, "one_hot": _one_hot, "mlm": _mlm}




def _break_it(console, r, lang, t) -> None:
    from attnlab.commands.explain_break_view import break_it

    break_it(console, r, lang, t)


VIEWS["break_it"] = _break_it
