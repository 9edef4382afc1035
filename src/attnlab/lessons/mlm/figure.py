"""Figures of the topics that check the course texts' missing claims (norms, context-vectors, one-hot).
Same conventions as attnlab.plots (which re-exports these as plots.plot_<slug>)."""

from __future__ import annotations

import numpy as np

from attnlab.plots import BLUE, GREY, INK, RED, Labels, _heat


# ------------------------------------------------------------------------------------------------- norms
def plot_norms(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    k = np.arange(len(r.sample))
    for ax, series in ((ax1, (("ln_alone", "o", INK, 9), ("ln_in_a", "x", BLUE, 7), ("ln_in_b", "+", RED, 9))),
                       (ax2, (("bn_in_a", "x", BLUE, 7), ("bn_in_b", "+", RED, 9), ("bn_eval_a", "s", GREY, 4),
                              ("bn_eval_b", "d", INK, 3)))):
        ax.plot(k, r.sample, "-", color=GREY, lw=0.8, label="x")
        for name, marker, color, size in series:
            ax.plot(k, getattr(r, name), marker, color=color, ms=size, ls="none", label=tr(f"norms.{name}"))
        ax.set(xlabel=tr("norms.feature"))
        ax.legend(fontsize=8)
    ax1.set(ylabel=tr("norms.output"), title=f"LayerNorm · max Δ = {r.ln_diff:.1e}")
    ax2.set(title=f"BatchNorm1d · max Δ = {r.bn_diff:.3f} (eval {r.bn_eval_diff:.1e})")
    fig.suptitle(tr("norms.title"), fontsize=13)
    fig.tight_layout()


# --------------------------------------------------------------------------------------- context-vectors
def plot_context_vectors(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2)
    layers = [x.layer for x in r.layers]
    for ax, key, gpt, enc in ((ax1, "l2", "causal_l2", "encoder_l2"), (ax2, "cos", "causal_cos", "encoder_cos")):
        ax.plot(layers, [getattr(x, gpt) for x in r.layers], "o-", color=BLUE, lw=2, label=tr("ctx.gpt"))
        ax.plot(layers, [getattr(x, enc) for x in r.layers], "s--", color=RED, lw=2, label=tr("ctx.encoder"))
        ax.set(xlabel=tr("ctx.layer"), ylabel=tr(f"ctx.{key}"))
        ax.set_xticks(layers)
        ax.legend(fontsize=9)
    fig.suptitle(tr("ctx.title", word=r.word, a="".join(r.tokens_a), b="".join(r.tokens_b)), fontsize=12)
    fig.tight_layout()


# ------------------------------------------------------------------------------------------------ one-hot
def plot_one_hot(r, fig, tr: Labels) -> None:
    ax1, ax2, ax3 = fig.subplots(1, 3)
    V = r.vocab_size
    shown = min(V, 40)
    _heat(ax1, np.eye(shown), vmin=-1, vmax=1, cmap="RdBu_r")
    ax1.set_title(tr("oh.onehot", V=V), fontsize=10)
    chars = [q.char for q in r.queries] + [n.char for q in r.queries for n in q.neighbours]
    order = list(dict.fromkeys(chars))[:24]
    index = {q.char: {n.char: n.cos for n in q.neighbours} for q in r.queries}
    grid = np.full((len(r.queries), len(order)), np.nan)
    for i, q in enumerate(r.queries):
        for j, c in enumerate(order):
            grid[i, j] = 1.0 if c == q.char else index[q.char].get(c, np.nan)
    _heat(ax2, grid, xticks=order, yticks=[q.char for q in r.queries], vmin=-1, vmax=1, cmap="RdBu_r")
    ax2.set_title(tr("oh.dense", d=r.d_model), fontsize=10)
    for q, color in zip(r.queries, (BLUE, RED, INK, GREY, "#27ae60", "#e67e22", "#8e44ad", "#16a085")):
        ax3.scatter([n.context for n in q.neighbours], [n.cos for n in q.neighbours], color=color, label=q.char)
        for n in q.neighbours:
            ax3.annotate(n.char, (n.context, n.cos), fontsize=8, xytext=(3, 2), textcoords="offset points")
    ax3.set(xlabel=tr("oh.context"), ylabel=tr("oh.cos"), title=tr("oh.scatter"))
    ax3.legend(fontsize=8)
    fig.suptitle(tr("oh.title", corpus=r.corpus), fontsize=12)
    fig.tight_layout()


# -------------------------------------------------------------------------------------------------- mlm
def plot_mlm(r, fig, tr: Labels) -> None:
    from attnlab.i18n import t

    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.2, 1.2, 2]})
    kinds = ("bidirectional", "causal", "causal_fill", "baseline")
    colors = (RED, BLUE, "#8e44ad", GREY)
    acc = [r.accuracy[k] or 0.0 for k in kinds]
    bars = ax1.bar(range(4), acc, color=colors)
    for bar, k in zip(bars, kinds):
        ax1.annotate(f"{r.correct[k]}/{r.n_masked}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                     ha="center", va="bottom", fontsize=8, color=INK)
    ax1.set_xticks(range(4), [t(f"explain.mlm.model.{k}", tr.lang) for k in kinds], fontsize=6, rotation=25)
    ax1.set(ylabel=tr("mlm.acc"), ylim=(0, 1.1))
    for i, (k, color) in enumerate(zip(kinds[:3], colors[:3])):  # by verse: first and second, side by side
        vals = [r.by_verse[k][v] or 0.0 for v in ("first", "second")]
        ax2.bar(np.arange(2) + (i - 1) * 0.27, vals, 0.27, color=color, label=t(f"explain.mlm.model.{k}", tr.lang))
    if r.chance is not None:
        ax2.axhline(r.chance, color=GREY, ls="--", lw=1, label=t("explain.mlm.chance", tr.lang))
    ax2.set_xticks(range(2), [t(f"explain.mlm.verse.{v}", tr.lang) for v in ("first", "second")], fontsize=7)
    ax2.set(ylim=(0, 1.1), title=tr("mlm.verse"))
    ax2.legend(fontsize=7, loc="upper left")
    ax3.axis("off")
    ax3.set_title(tr("mlm.example"), fontsize=10)
    guesses = [g for ex in r.examples for g in ex.guesses][:20]
    rows = (("char", INK), ("bidirectional", RED), ("causal", BLUE), ("causal_fill", "#8e44ad"))
    for i, (name, color) in enumerate(rows):
        label = t("explain.mlm.char", tr.lang) if name == "char" else t(f"explain.mlm.model.{name}", tr.lang)
        ax3.text(-0.02, 1 - (i + 1) * 0.12, label, ha="right", va="center", fontsize=8, color=color, transform=ax3.transAxes)
        for j, g in enumerate(guesses):
            ch = getattr(g, name)
            right = name != "char" and ch == g.char
            ax3.text(j / 20, 1 - (i + 1) * 0.12, ch, ha="left", va="center", fontsize=11, transform=ax3.transAxes,
                     color="#27ae60" if right else (INK if name == "char" else GREY), weight="bold" if right else "normal")
    fig.suptitle(tr("mlm.title", corpus=r.corpus, n=r.n_masked), fontsize=12)
    fig.tight_layout()
