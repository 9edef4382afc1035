"""The figure of `attnlab explain forms` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import INK, Labels


def plot(r, fig, tr: Labels) -> None:
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
