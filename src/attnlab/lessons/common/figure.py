"""Figures of the concept lessons (matplotlib, Agg: no display needed), written as PNG or SVG.

Each `plot_<topic>(result, fig, tr)` draws a lesson's returned numbers into `fig`; it computes nothing.
`save(plot, result, path, lang)` makes the figure, picks a font that has Chinese glyphs when one is
installed (falling back to English labels when none is), and writes the file.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from attnlab.i18n import t  # noqa: E402

CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Source Han Sans SC",
             "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC", "Arial Unicode MS")
FORMATS = (".png", ".svg")
RED, BLUE, GREY, INK = "#c0392b", "#2c6fbb", "#8a8a8a", "#222222"
_LOCK = threading.Lock()
LAMBDA_COLORS = {0.5: "#2c6fbb", 0.9: "#27ae60", 1.0: "#e67e22", 1.1: "#c0392b"}


@lru_cache(maxsize=1)
def cjk_font() -> str | None:
    """The first installed font family that has Chinese glyphs, or None."""
    for family in CJK_FONTS:
        try:
            font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
            return family
        except ValueError:
            continue
    return None


class Labels:
    """t() for figure labels, in English when Chinese was asked for but no Chinese font is installed."""

    def __init__(self, lang: str):
        self.lang = lang if (lang == "en" or cjk_font()) else "en"

    def __call__(self, key: str, **fields) -> str:
        return t(f"explain.plot.{key}", self.lang, **fields)


def save(plot, result, path, *, lang: str = "zh"):
    """Draw `result` with `plot` and write it to `path` (.png or .svg), or as PNG into a binary file object."""
    if hasattr(path, "write"):
        fmt = "png"
    else:
        path = Path(path)
        if path.suffix.lower() not in FORMATS:
            raise ValueError(f"a figure is written as .png or .svg, got {path.name!r}")
        fmt = path.suffix.lower()[1:]
    families = ["DejaVu Sans"] + ([cjk_font()] if cjk_font() else [])
    style = {"font.family": families, "axes.unicode_minus": False, "svg.fonttype": "path",
             "axes.spines.top": False, "axes.spines.right": False}
    with _LOCK, plt.rc_context(style):  # rcParams are global: one figure at a time (the web app has threads)
        fig = Figure(figsize=(12, 7.5), dpi=100)  # not pyplot's figure manager: nothing to close or leak
        plot(result, fig, Labels(lang))
        fig.savefig(path, format=fmt, dpi=110, bbox_inches="tight")
    return path


def _heat(ax, matrix, *, xticks=None, yticks=None, cmap="Blues", vmin=None, vmax=None, annotate=False, fmt="{:.2f}"):
    m = np.asarray(matrix, dtype=float)
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    if xticks is not None:
        ax.set_xticks(range(len(xticks)), xticks)
    if yticks is not None:
        ax.set_yticks(range(len(yticks)), yticks)
    if annotate and m.size <= 144:
        lo, hi = im.get_clim()  # white text on the darker 40% of the colour range
        for (i, j), v in np.ndenumerate(m):
            dark = hi > lo and (v - lo) / (hi - lo) > 0.6
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=7, color="white" if dark else INK)
    return im


def _note(fig, text: str) -> None:
    fig.text(0.5, -0.01, text, ha="center", va="top", fontsize=9, color=GREY, wrap=True)


# ----------------------------------------------------------------------------------------------- sqrt-dk
def plot_sqrt_dk(r, fig, tr: Labels) -> None:
    axes = fig.subplots(2, 2)
    dk = [s.d_k for s in r.sweep]
    ax = axes[0, 0]
    ax.loglog(dk, dk, color=GREY, lw=1, ls="--", label=tr("sqrt.var_line"))
    ax.loglog(dk, [s.var for s in r.sweep], "o", color=RED, label=tr("sqrt.var_measured"))
    ax.loglog(dk, [s.scaled_var for s in r.sweep], "s", color=BLUE, label=tr("sqrt.var_scaled"))
    ax.set_xscale("log", base=2)
    ax.set(xlabel="d_k", ylabel="Var", title=tr("sqrt.var_title", n=r.params["n_samples"]))
    ax.legend(fontsize=8)

    ax = axes[0, 1]
    ax.semilogx([s.d_k for s in r.softmax_sweep], [s.max_weight_unscaled for s in r.softmax_sweep], "o-", color=RED,
                label=tr("sqrt.unscaled"), base=2)
    ax.semilogx([s.d_k for s in r.softmax_sweep], [s.max_weight_scaled for s in r.softmax_sweep], "s-", color=BLUE,
                label=tr("sqrt.scaled"), base=2)
    ax.axhline(1.0 / r.params["n_keys"], color=GREY, lw=1, ls=":", label=tr("sqrt.uniform"))
    ax.set(xlabel="d_k", ylabel=tr("sqrt.max_weight"), title=tr("sqrt.max_title", n=r.params["n_keys"]), ylim=(0, 1.02))
    ax.legend(fontsize=8)

    ax = axes[1, 0]
    ax.semilogx([s.d_k for s in r.softmax_sweep], [s.grad_norm_unscaled for s in r.softmax_sweep], "o-", color=RED,
                label=tr("sqrt.unscaled"), base=2)
    ax.semilogx([s.d_k for s in r.softmax_sweep], [s.grad_norm_scaled for s in r.softmax_sweep], "s-", color=BLUE,
                label=tr("sqrt.scaled"), base=2)
    ax.set(xlabel="d_k", ylabel="‖∂p/∂s‖_F", title=tr("sqrt.grad_title"))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)

    ax = axes[1, 1]
    x = np.arange(len(r.example_scores))
    ax.bar(x - 0.2, r.example_unscaled, width=0.4, color=RED, label=tr("sqrt.unscaled"))
    ax.bar(x + 0.2, r.example_scaled, width=0.4, color=BLUE, label=tr("sqrt.scaled"))
    ax.set(xlabel=tr("sqrt.key_index"), ylabel=tr("sqrt.weight"), title=tr("sqrt.row_title", d_k=r.params["d_k"]), ylim=(0, 1.02))
    ax.legend(fontsize=8)
    fig.suptitle(tr("sqrt.title"), fontsize=13)
    fig.tight_layout()


# -------------------------------------------------------------------------------------------- positional
def plot_positional(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2, width_ratios=(1.2, 1))
    ax = fig.add_subplot(grid[:, 0])
    im = _heat(ax, r.table, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set(xlabel=tr("pos.dimension"), ylabel=tr("pos.position"), title=tr("pos.table_title"))
    fig.colorbar(im, ax=ax, fraction=0.046)

    ax = fig.add_subplot(grid[0, 1])
    for dim, values in r.curves.items():
        ax.plot(values, lw=1.4, label=tr("pos.dim", d=dim))
    ax.set(xlabel=tr("pos.position"), ylabel="PE", title=tr("pos.curves_title"))
    ax.legend(fontsize=7, ncol=2, loc="lower left")

    ax = fig.add_subplot(grid[1, 1])
    errors = [max(rot.max_error, 1e-18) for rot in r.rotations]
    ax.semilogy([rot.i for rot in r.rotations], errors, "o", color=BLUE, ms=3)
    ax.axhline(1e-6, color=RED, lw=1, ls="--", label=tr("pos.threshold"))
    ax.set(xlabel=tr("pos.frequency"), ylabel=tr("pos.error"), title=tr("pos.rot_title", delta=r.params["delta"]))
    ax.set_ylim(1e-18, 1e-3)
    ax.legend(fontsize=8)
    fig.suptitle(tr("pos.title"), fontsize=13)
    fig.tight_layout()
    _note(fig, r.note)


# ------------------------------------------------------------------------------------------- permutation
def plot_permutation(r, fig, tr: Labels) -> None:
    axes = fig.subplots(2, 2)
    cases = ((r.without_positions, "perm.without"), (r.with_positions, "perm.with"))
    for row, (case, key) in enumerate(cases):
        for col, (weights, tokens, which) in enumerate(((case.weights, r.tokens, "perm.original"),
                                                        (case.weights_shuffled, r.shuffled, "perm.shuffled"))):
            ax = axes[row, col]
            _heat(ax, weights, xticks=tokens, yticks=tokens, vmin=0, vmax=1, annotate=True)
            ax.set_title(f"{tr(key)} · {tr(which)} {''.join(tokens)}", fontsize=10)
            ax.set(xlabel="key", ylabel="query")
        axes[row, 1].text(1.04, 0.5, tr("perm.diff", diff=case.max_diff), transform=axes[row, 1].transAxes,
                          rotation=90, va="center", fontsize=9, color=RED if case.with_positions else BLUE)
    fig.suptitle(tr("perm.title"), fontsize=13)
    fig.tight_layout()


# --------------------------------------------------------------------------------------------- multihead
def plot_multihead(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 3)
    ax = fig.add_subplot(grid[0, :])
    labels = [tr("mh.params"), "FLOPs: addmm", "FLOPs: bmm", tr("mh.weights")]
    one = [r.one_head.params, r.one_head.flops_by_op.get("addmm", 0), r.one_head.flops_by_op.get("bmm", 0), r.one_head.weight_entries]
    many = [r.many_heads.params, r.many_heads.flops_by_op.get("addmm", 0), r.many_heads.flops_by_op.get("bmm", 0), r.many_heads.weight_entries]
    x = np.arange(len(labels))
    ax.bar(x - 0.2, one, width=0.4, color=BLUE, label=tr("mh.one", d=r.one_head.d_k))
    ax.bar(x + 0.2, many, width=0.4, color=RED, label=tr("mh.many", h=r.many_heads.n_heads, d=r.many_heads.d_k))
    for xi, (a, b) in enumerate(zip(one, many)):
        ax.text(xi - 0.2, a, f"{a:,}", ha="center", va="bottom", fontsize=7)
        ax.text(xi + 0.2, b, f"{b:,}", ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(x, labels)
    ax.set_title(tr("mh.count_title", d=r.params["d_model"], n=r.params["n"]))
    ax.legend(fontsize=8)
    shown = r.heads or r.hand_built_heads  # the trained two heads of the first seed, else the hand-built ones
    for k, head in enumerate(shown):
        ax = fig.add_subplot(grid[1, k])
        _heat(ax, head.weights, xticks=["0", "1", "2"], yticks=r.inputs, vmin=0, vmax=1)
        ax.set_title(tr("mh.head", h=head.head, kind=tr(f"mh.kind.{head.kind}")), fontsize=10)
        ax.set(xlabel="key", ylabel="x₀ x₁ x₂")
    if r.runs:
        ax = fig.add_subplot(grid[1, 2])
        ax.bar([str(run.n_heads) for run in r.runs], [run.solved for run in r.runs], color=[BLUE, RED, RED][: len(r.runs)])
        ax.set_ylim(0, len(r.seeds))
        ax.set(xlabel=tr("mh.heads_axis"), ylabel=tr("mh.solved_axis", n=len(r.seeds)))
    fig.suptitle(tr("mh.title"), fontsize=13)
    fig.tight_layout()


# ----------------------------------------------------------------------------------------- position-wise
def plot_position_wise(r, fig, tr: Labels) -> None:
    axes = fig.subplots(1, len(r.layers))
    for ax, layer in zip(axes, r.layers):
        _heat(ax, layer.block_norms, cmap="Purples", vmin=0, annotate=True, fmt="{:.2g}")
        ax.set_title(f"{tr('pw.' + layer.layer)}\n{tr('pw.off', v=layer.off_diagonal_max)}", fontsize=10,
                     color=RED if layer.mixes_positions else INK)
        ax.set(xlabel="j (x_j)", ylabel="i (y_i)")
    title = tr("pw.title") + ("  ·  " + tr("pw.bug") if r.params["bug"] else "")
    fig.suptitle(title, fontsize=13)
    fig.set_size_inches(15, 4.2)
    fig.tight_layout()


# ----------------------------------------------------------------------------------------- rnn-gradients
def plot_rnn_gradients(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2)
    curves = list(r.curves)
    if all(c.lam != r.chosen.lam for c in curves):
        curves.append(r.chosen)
    for c in curves:
        color = LAMBDA_COLORS.get(c.lam, INK)
        ax1.semilogy(c.distance, c.bound, ls="--", lw=1, color=color)
        ax1.semilogy(c.distance, [max(m, 1e-300) for m in c.measured], "-", lw=2 if c.lam == r.chosen.lam else 1.2,
                     color=color, label=f"λ = {c.lam:g}")
    ax1.semilogy(r.chosen.distance, r.linear.measured, ":", color=INK, lw=2, label=tr("rnn.linear", lam=r.linear.lam))
    ax1.set(xlabel="t − k", ylabel="‖∂h_t/∂h_k‖₂", title=tr("rnn.title"))

    ax1.legend(fontsize=8, title=tr("rnn.legend"), title_fontsize=8)
    ax2.semilogy(r.lstm.distance, r.lstm.direct_mean, "-", color=BLUE, lw=2, label=tr("rnn.direct_mean"))
    ax2.semilogy(r.lstm.distance, r.lstm.direct_max, "--", color=BLUE, lw=1, label=tr("rnn.direct_max"))
    ax2.semilogy(r.lstm.distance, [max(v, 1e-300) for v in r.lstm.full], "-", color=GREY, lw=1.2, label=tr("rnn.full"))
    ax2.semilogy(r.chosen.distance, [max(m, 1e-300) for m in r.chosen.measured], "-", color=RED, lw=1.2,
                 label=tr("rnn.rnn_chosen", lam=r.chosen.lam))
    ax2.set(xlabel="t − k", ylabel="‖∂c_t/∂c_k‖", title=tr("rnn.lstm_title", f=r.lstm.mean_forget))
    ax2.legend(fontsize=8)
    fig.tight_layout()


# ------------------------------------------------------------------------------------ serial-vs-parallel
def _chain_and_star(ax, n: int, tr: Labels) -> None:
    """003 fig 1.1 redrawn: the RNN chain (path n-1) above, attention's direct edges (path 1) below."""
    xs = np.arange(n)
    ax.plot(xs, [1] * n, color=GREY, lw=1, zorder=1)
    for x in xs[:-1]:
        ax.annotate("", (x + 0.78, 1), (x + 0.22, 1), arrowprops=dict(arrowstyle="->", color=INK, lw=1))
    ax.scatter(xs, [1] * n, s=420, color="white", edgecolor=INK, zorder=2)
    for x in xs:
        ax.text(x, 1, f"h{x + 1}" if x < n - 1 else "hₙ", ha="center", va="center", fontsize=8, zorder=3)
    for a in range(n):
        for b in range(a + 1, n):
            rad = 0.35 if (a, b) == (0, n - 1) else 0.15  # arcs bend below the row, away from the chain
            color, lw = (RED, 2) if (a, b) == (0, n - 1) else ("#d9d9d9", 0.8)
            ax.annotate("", (b, 0), (a, 0), arrowprops=dict(arrowstyle="-", color=color, lw=lw,
                                                            connectionstyle=f"arc3,rad={rad}"))
    ax.scatter(xs, [0] * n, s=420, color="white", edgecolor=RED, zorder=2)
    for x in xs:
        ax.text(x, 0, f"t{x + 1}" if x < n - 1 else "tₙ", ha="center", va="center", fontsize=8, zorder=3)
    ax.text(n - 0.3, 1, tr("svp.rnn_path"), va="center", fontsize=9)
    ax.text(n - 0.3, 0, tr("svp.attn_path"), va="center", fontsize=9, color=RED)
    ax.set_xlim(-0.6, n + 2.4)
    ax.set_ylim(-1.3, 1.4)
    ax.axis("off")


def plot_serial_vs_parallel(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2)
    ns = [p.n for p in r.points]
    ax = fig.add_subplot(grid[0, 0])
    ax.loglog(ns, [p.rnn_seconds * 1e3 for p in r.points], "o-", color=BLUE, label="RNN", base=2)
    ax.loglog(ns, [p.attention_seconds * 1e3 for p in r.points], "s-", color=RED, label=tr("svp.attention"), base=2)
    ax.set(xlabel="n", ylabel="ms", title=tr("svp.time_title"))
    ax.legend(fontsize=8)
    ax = fig.add_subplot(grid[0, 1])
    ax.loglog(ns, [p.rnn_ops for p in r.points], "o-", color=BLUE, label="RNN", base=2)
    ax.loglog(ns, [p.attention_ops for p in r.points], "s-", color=RED, label=tr("svp.attention"), base=2)
    ax.set(xlabel="n", ylabel=tr("svp.ops"), title=tr("svp.ops_title"))
    ax.legend(fontsize=8)
    _chain_and_star(fig.add_subplot(grid[1, :]), 7, tr)
    fig.suptitle(tr("svp.title"), fontsize=13)
    fig.tight_layout()


# -------------------------------------------------------------------------------------------- complexity
def plot_complexity(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2)
    ax = fig.add_subplot(grid[0, 0])
    names = [term.name for term in r.terms]
    colors = [RED if term.order == "n^2 d" else BLUE for term in r.terms]
    ax.barh(range(len(names)), [term.flops for term in r.terms], color=colors)
    ax.set_yticks(range(len(names)), [tr(f"cx.{n}") for n in names])
    ax.invert_yaxis()
    for i, term in enumerate(r.terms):
        ax.text(term.flops, i, f" {term.flops:,.3g}", va="center", fontsize=8)
    ax.set(xlabel="FLOPs", title=tr("cx.terms_title", n=r.params["n"], d=r.params["d_model"]))

    ax = fig.add_subplot(grid[0, 1])
    d, d_ff = r.params["d_model"], r.params["d_model"] * r.params["ff_mult"]
    n_grid = np.logspace(0, np.log10(max(8 * r.crossover_block, 2 * r.params["n"])), 200)
    ax.loglog(n_grid, 4 * n_grid**2 * d, color=RED, label="4 n² d")
    ax.loglog(n_grid, 8 * n_grid * d * d + 4 * n_grid * d * d_ff, color=BLUE, label="8 n d² + 4 n d d_ff")
    ax.axvline(r.crossover_block, color=INK, lw=1, ls="--")
    ax.text(r.crossover_block, ax.get_ylim()[0] * 10, f" n = {r.crossover_block}", fontsize=8)
    ax.axvline(r.params["n"], color=GREY, lw=1, ls=":")
    ax.set(xlabel="n", ylabel="FLOPs", title=tr("cx.cross_title"))
    ax.legend(fontsize=8)

    ax = fig.add_subplot(grid[1, 0])
    ns = [p.n for p in r.time_points]
    ax.loglog(ns, [p.seconds * 1e3 for p in r.time_points], "o-", color=INK, base=2)
    if len(ns) >= 2:
        ref = np.array(ns, dtype=float)
        t0 = r.time_points[-1].seconds * 1e3
        for slope, color in ((1, BLUE), (2, RED)):
            ax.loglog(ref, t0 * (ref / ref[-1]) ** slope, ls=":", color=color, lw=1, label=tr("cx.slope_ref", s=slope), base=2)
        ax.legend(fontsize=8)
    ax.set(xlabel="n", ylabel="ms", title=tr("cx.time_title", s=r.time_slope, d=r.params["time_d_model"]))

    ax = fig.add_subplot(grid[1, 1])
    ax.axis("off")
    rows = [[tr(f"cx.{c.part}"), f"{c.analytic:,}", f"{c.counted:,}", "✓" if c.analytic == c.counted else "✗"] for c in r.checks]
    table = ax.table(cellText=rows, colLabels=[tr("cx.part"), tr("cx.analytic"), "FlopCounterMode", ""], loc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1, 1.4)
    ax.set_title(tr("cx.check_title", mib=r.weights_bytes / 2**20), fontsize=10)
    fig.suptitle(tr("cx.title"), fontsize=13)
    fig.tight_layout()


# ------------------------------------------------------------------------------------------------- forms
def plot_forms(r, fig, tr: Labels) -> None:
    panels = [(form, mask) for form in r.forms for mask in form.masks]
    axes = fig.subplots(1, len(panels))
    for ax, (form, mask) in zip(axes, panels):
        m = np.asarray(mask.observed)
        ax.pcolormesh(m, cmap="Greys", vmin=0, vmax=1.6, edgecolors="white", linewidth=1.5)
        ax.invert_yaxis()
        ax.set_aspect("equal")
        ax.set_title(f"{tr('forms.' + form.name)}\n{tr('forms.mask.' + mask.name)}", fontsize=10)
        ax.set(xlabel="key", ylabel="query")
        ax.set_xticks([])
        ax.set_yticks([])
    for form_i, form in enumerate(r.forms):
        lines = [f"{b.where}: {', '.join(b.children)}" for b in form.blocks]
        fig.text(0.02, 0.2 - 0.06 * form_i, f"{tr('forms.' + form.name)} — " + " | ".join(lines), fontsize=8, color=INK)
    fig.suptitle(tr("forms.title"), fontsize=13)
    fig.set_size_inches(15, 5)
    fig.tight_layout(rect=(0, 0.22, 1, 0.95))


# ---------------------------------------------------------------------------------------------- glossary
def plot_glossary(r, fig, tr: Labels) -> None:
    ax = fig.add_subplot(1, 1, 1)
    ax.axis("off")
    n = len(r.stages)
    for i, stage in enumerate(r.stages):
        x = i / n + 0.5 / n
        ax.text(x, 0.62, tr(f"gl.{stage.stage}"), ha="center", va="center", fontsize=12,
                bbox=dict(boxstyle="round,pad=0.6", fc="#fdf2f0" if stage.stage in ("embedding", "block") else "white", ec=RED))
        ax.text(x, 0.45, "(" + ", ".join(map(str, stage.shape)) + ")", ha="center", fontsize=9, color=INK)
        ax.text(x, 0.36, stage.example if len(stage.example) < 26 else stage.example[:24] + "…", ha="center", fontsize=7, color=GREY)
        if i < n - 1:
            ax.annotate("", (x + 1 / n - 0.065, 0.62), (x + 0.065, 0.62), arrowprops=dict(arrowstyle="->", color=INK))
    ax.set_ylim(0.28, 0.72)
    ax.set_title(tr("gl.title", text=r.params["text"]), fontsize=13)
    fig.set_size_inches(15, 2.6)


# ----------------------------------------------------------------------------------------------- seq2seq
SEQ2SEQ_COLORS = {"no_attention": GREY, "bahdanau": BLUE, "transformer": RED}


def _aligned_heat(ax, weights, ex, title: str, tr: Labels) -> None:
    """One attention map (target × source) with the true alignment boxed."""
    from matplotlib.patches import Rectangle

    _heat(ax, weights, xticks=ex.source_tokens, yticks=ex.target_tokens, vmin=0, vmax=1)
    for i, j in enumerate(ex.truth):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=RED, lw=2))
    ax.set(title=title, xlabel=tr("seq2seq.src"), ylabel=tr("seq2seq.tgt"))


def plot_seq2seq(r, fig, tr: Labels) -> None:
    n_maps = 1 + len(r.heads)
    grid = fig.add_gridspec(2, max(2, n_maps))
    ax = fig.add_subplot(grid[0, :])
    ax.axvspan(r.train_lengths[-1] + 0.5, r.lengths[-1] + 0.5, color="#eeeeee", zorder=0)
    for kind, acc in r.accuracy.items():
        ax.plot(r.lengths, acc, "o-", color=SEQ2SEQ_COLORS.get(kind, INK), lw=2, label=t(f"explain.seq2seq.model.{kind}", tr.lang))
    ax.set(xlabel=tr("seq2seq.length"), ylabel=tr("seq2seq.acc"), title=tr("seq2seq.accuracy"), ylim=(-0.03, 1.03),
           xticks=r.lengths)
    ax.legend(fontsize=9)
    ex = r.example
    _aligned_heat(fig.add_subplot(grid[1, 0]), ex.bahdanau, ex, tr("seq2seq.alpha", score=ex.alignment_score["bahdanau"]), tr)
    for k, h in enumerate(r.heads):
        _aligned_heat(fig.add_subplot(grid[1, 1 + k]), h.weights, ex,
                      tr("seq2seq.head", layer=h.layer, head=h.head, score=h.alignment_score), tr)
    fig.tight_layout()


# The figures of the topics added for the texts' missing claims live in their own module.
from attnlab.plots_claims import plot_context_vectors, plot_mlm, plot_norms, plot_one_hot  # noqa: E402,F401
from attnlab.plots_break import plot_break_it  # noqa: E402,F401
