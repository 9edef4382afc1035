"""What every lesson's result shares: plain-data types, `tolist` for tensors, and `Shown`, which makes a
result show itself in a notebook. A result's fields are lists of floats, ints, strings and bools, so
`dataclasses.asdict(result)` is JSON."""

from __future__ import annotations

Vector = list[float]
Matrix = list[list[float]]


def tolist(tensor) -> list:
    """A torch tensor (or numpy array) as nested Python floats, for a lesson's dataclass fields."""
    return tensor.detach().cpu().double().tolist() if hasattr(tensor, "detach") else tensor.astype(float).tolist()


class Shown:
    """Mixin for a lesson's result dataclass: a notebook cell shows it as self-contained HTML, the glyphs of its
    text included (the view is attnlab.display, imported only when a notebook asks). A lesson with a view of its
    own overrides `notebook_html`."""

    def notebook_html(self) -> str:
        from attnlab.display import html_of

        return html_of(self)

    def _repr_html_(self) -> str:
        from attnlab.display.glyphs import with_glyphs

        return with_glyphs(self.notebook_html())
