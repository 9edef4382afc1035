"""A notebook output carries the glyphs it draws (issue 36 §5): every non-ASCII character of its visible text
is drawn by a font embedded in the output itself (decoded here with fontTools, and drawn with an outline, so
not a box), the output's text uses those fonts first, and each font is a subset that holds only that output's
characters, far smaller than the lab's font. With no Chinese font on the machine nothing is left to the
system's fonts, so nothing shows as a box."""

from __future__ import annotations

import pytest
import torch
from notebook_support import embedded_fonts, font_families, missing_glyphs, needs_a_glyph, parse

from attnlab.display import Weights, glyphs, trace_html
from attnlab.display.fonts import FONT_FILE
from attnlab.display.predict import ask
from attnlab.lessons.toy.hand_calc import hand_calc
from attnlab.lessons.toy.lesson import check_prediction, toy_lab
from attnlab.models import GPT, GPTConfig
from attnlab.trace import trace


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    """The kinds of output the course notebook shows, each with Chinese in it."""
    lab = toy_lab("它", causal=True)
    model = GPT(GPTConfig(vocab_size=11, context_length=8, d_model=8, n_heads=2, n_layers=1)).eval()
    return {
        "toy": lab._repr_html_(),
        "hand": hand_calc(["0", "ln 3"], [[2, 0], [0, 4]])._repr_html_(),
        "verdict": check_prediction("heads", "yes")._repr_html_(),  # ✗: a symbol the CJK font lacks
        "waiting": ask(check_prediction, "keys", None, ["1", "2", "3", "4"])._repr_html_(),
        "weights": Weights([h.weights for h in lab.heads], lab.tokens, name="A", mask=lab.mask)._repr_html_(),
        "trace": trace_html(trace(model, torch.tensor([[1, 2, 3, 4]])), list("床前明月")),
    }


def test_every_character_an_output_draws_is_drawn_by_a_font_it_embeds(outputs):
    for name, html in outputs.items():
        fonts = embedded_fonts(html)
        assert fonts, name
        assert missing_glyphs(html) == set(), name
        assert any("\u4e00" <= c <= "\u9fff" for c in parse(html).text()), name  # there was Chinese to cover


def test_the_embedded_fonts_come_first_for_the_text_the_svg_and_the_code(outputs):
    html = outputs["trace"]  # code (names), svg (heatmaps) and text in one output
    fonts = list(embedded_fonts(html))
    for part in ("svg", "code", ""):
        stacks = font_families(html, part)
        assert stacks, part
        assert all(stack[: len(fonts)] == fonts for stack in stacks), (part, stacks, fonts)
    assert "font:11px sans-serif" not in html  # no heatmap names a family of its own over the output's


def test_each_subset_holds_only_the_output_characters_and_is_far_smaller_than_the_font(outputs):
    full = FONT_FILE.stat().st_size
    for name, html in outputs.items():
        text = {c for c in parse(html).text() if needs_a_glyph(c)}
        for family, (font, size) in embedded_fonts(html).items():
            mapped = {chr(c) for c in font.getBestCmap()}
            assert mapped <= text | {" ", "\u00a0", "\u3000"}, (name, family, mapped - text)  # nothing unused
            assert size * 50 < full, (name, family, size, full)


def test_a_subset_is_made_once_per_character_set_and_is_the_same_bytes_each_time():
    html = '<div class="attnlab-repr">注意力 · 权重</div>'
    first = glyphs.with_glyphs(html)
    hits = glyphs.subset.cache_info().hits
    assert glyphs.with_glyphs(html) == first
    assert glyphs.subset.cache_info().hits > hits  # the second output reused the subsets
    glyphs.subset.cache_clear()
    assert glyphs.with_glyphs(html) == first  # made again: the same bytes (no timestamp inside)
    assert glyphs.with_glyphs("<b>plain ASCII</b>") == "<b>plain ASCII</b>"  # nothing to carry, nothing added


def test_a_character_no_font_has_is_reported_missing_not_covered_by_accident():
    # The check itself can fail: an Egyptian hieroglyph is in neither font, and the lab does not pretend it is.
    html = glyphs.with_glyphs("<p>猫 \U00013000</p>")
    assert missing_glyphs(html) == {"\U00013000"}
