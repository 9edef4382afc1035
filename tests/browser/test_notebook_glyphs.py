"""Notebook outputs draw their Chinese and symbols with the fonts they carry, in a Chromium that has no Chinese
font (issue 36 §5): the same bare fontconfig as test_font.py (DejaVu only), the outputs set as the page's whole
content, offline. Chromium says which fonts drew a node (DevTools' CSS.getPlatformFontsForNode): every
non-ASCII character must come from an embedded (custom) font, none from the system's, so none is a box."""

from __future__ import annotations

from test_font import bare_chromium  # noqa: F401 - the fixture, used by name

from attnlab.display import Weights
from attnlab.lessons.toy.hand_calc import hand_calc
from attnlab.lessons.toy.lesson import check_prediction, toy_lab

# (which output, a node of it whose text holds Chinese or symbols)
NODES = [
    ("toy", ".attnlab-toy > p"),  # the title line: ToyLab · 四个 token、两个头……
    ("toy", 'table[data-name="masked_scores"] th[scope=col]'),  # a token as a column label
    ("toy", 'table[data-name="masked_scores"] td.masked'),  # −∞ in a hatched cell
    ("hand", 'table[data-name="mix"] caption'),
    ("verdict", ".attnlab-verdict p:nth-of-type(2) span"),  # ✗: DejaVu's glyph, carried in the output
    ("verdict", ".attnlab-verdict p:nth-of-type(2)"),  # 不对，答案是「否」。
    ("weights", "svg text.row"),  # a token label inside the SVG heatmap
]


def own_text_and_fonts(page, selector: str) -> tuple[str, list[dict]]:
    """The node's own text (its text children; an SVG <text> too) and the fonts Chromium drew it with."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    assert node, f"no {selector} in the output"
    text = page.locator(selector).first.evaluate(
        "el => [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('')"
    )
    return text, cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]


def test_notebook_outputs_draw_every_character_with_their_own_fonts(bare_chromium, new_watch, patience_ms, artifacts):  # noqa: F811
    lab = toy_lab("它", causal=True)
    outputs = {
        "toy": lab._repr_html_(),
        "hand": hand_calc()._repr_html_(),
        "verdict": check_prediction("heads", "yes")._repr_html_(),
        "weights": Weights([h.weights for h in lab.heads], lab.tokens, mask=lab.mask)._repr_html_(),
    }
    context = bare_chromium.new_context(viewport={"width": 1000, "height": 700})
    context.set_default_timeout(patience_ms)
    watch = new_watch()
    watch.attach(context)  # nothing may leave the page: the fonts are data: URLs inside it
    page = context.new_page()
    for name, selector in NODES:
        page.set_content(f"<!doctype html><meta charset=utf-8><body>{outputs[name]}</body>")
        page.evaluate("() => document.fonts.ready")
        text, fonts = own_text_and_fonts(page, selector)
        wanted = sum(ord(c) > 0x7E and not c.isspace() for c in text)
        custom = sum(f["glyphCount"] for f in fonts if f["isCustomFont"])
        case = f"{name} {selector}: {text!r} drawn with {fonts}"
        assert wanted > 0, case
        assert custom >= wanted, case  # every non-ASCII glyph from a font the output embeds
        assert all(f["isCustomFont"] or f["familyName"].startswith("DejaVu") for f in fonts), case
    page.set_content(f"<!doctype html><meta charset=utf-8><body>{outputs['toy']}</body>")
    page.evaluate("() => document.fonts.ready")
    page.screenshot(path=artifacts / "notebook-toy-bare.png", full_page=True)
    context.close()
    assert not watch.problems(), "\n".join(watch.problems())
