"""The figure of `attnlab explain vit` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it
computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels, seed_curves

STYLE = {"vit": (RED, "o"), "cnn": (BLUE, "s"), "mlp": (INK, "^")}  # model -> (colour, marker)


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2, width_ratios=[2.2, 1])
    ax1 = fig.add_subplot(grid[:, 0])
    image, heat = fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])
    for name, (colour, marker) in STYLE.items():
        seed_curves(ax1, r.n_train, r.per_seed[name], r.accuracy[name], colour, marker, tr(f"vit.{name}"))
    ax1.axhline(0.1, color=GREY, lw=0.9, ls="--", label=tr("vit.chance"))
    ax1.set_xscale("log")
    ax1.set_xticks(r.n_train, [str(n) for n in r.n_train])
    ax1.set_xlabel(tr("vit.n_train"))
    ax1.set_ylabel(tr("vit.acc"))
    ax1.set_ylim(0, 1.02)
    ax1.set_title(tr("vit.title"))
    ax1.legend(fontsize=8, loc="lower right")
    p = r.picture
    pixels = np.asarray(p.pixels)  # (8, 8)
    attention = np.asarray(p.attention)  # (4, 4): one value a patch
    cell = pixels.shape[0] // attention.shape[0]
    image.imshow(pixels, cmap="Greys", vmin=0, vmax=1)
    heat.imshow(np.kron(attention, np.ones((cell, cell))), cmap="Reds", vmin=0)  # each patch's value on its pixels
    for ax in (image, heat):
        for k in range(1, attention.shape[0]):  # the patches' borders
            ax.axhline(k * cell - 0.5, color=GREY, lw=0.5)
            ax.axvline(k * cell - 0.5, color=GREY, lw=0.5)
        ax.set_xticks([])
        ax.set_yticks([])
    image.set_title(tr("vit.digit", label=p.label), fontsize=9)
    heat.set_title(tr("vit.attention"), fontsize=9)
