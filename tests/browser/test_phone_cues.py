"""Two things a learner hit on a phone (issue 36, item 6), in a real Chromium at 390 px, JavaScript on and off:
/toy's "s₂ =" stays on the line of its box, and a table that scrolls sideways shows that it does (its content
fades at the edge with more beyond it; a table that fits shows no fade)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from results import quick_query

PHONE = {"width": 390, "height": 800}
POSITIONAL = "/explain/positional?" + urlencode(quick_query("positional"))  # its rotation table is wide at 390 px

# label and box of each score share a line: each one's vertical middle lies within the other's box
SAME_LINE = """() => ['s1', 's2'].map(n => {
  const [l, b] = [document.querySelector(`label[for=in-${n}]`), document.getElementById(`in-${n}`)]
    .map(e => e.getBoundingClientRect());
  const mid = r => (r.top + r.bottom) / 2;
  return {n, together: mid(l) > b.top && mid(l) < b.bottom && mid(b) > l.top && mid(b) < l.bottom,
          beside: l.right <= b.left + 1, label: [l.top, l.bottom], box: [b.top, b.bottom]};
})"""

# every shown table box: does it scroll sideways, and its mask (the cue), '' for none
BOXES = """() => [...document.querySelectorAll('main .scroll, main table')].filter(e => e.checkVisibility()).map(e => {
  const cs = getComputedStyle(e);
  return {id: e.id || e.className, scrolls: ['auto', 'scroll'].includes(cs.overflowX) && e.scrollWidth > e.clientWidth + 1,
          mask: cs.maskImage === 'none' ? '' : cs.maskImage};
})"""
CUED = f"() => ({BOXES})().every(b => b.scrolls === Boolean(b.mask))"


@pytest.mark.parametrize("js", [True, False])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_score_labels_stay_with_their_boxes_at_phone_width(open_page, js, lang):
    page = open_page(f"/toy?lang={lang}", js=js, viewport=PHONE)
    for pair in page.evaluate(SAME_LINE):
        assert pair["together"] and pair["beside"], pair


@pytest.mark.parametrize("js", [True, False])
def test_a_table_that_scrolls_shows_it_and_one_that_fits_does_not(open_page, js):
    page = open_page(POSITIONAL, js=js, viewport=PHONE)
    page.locator("#rotation-table").scroll_into_view_if_needed()  # where the learner meets it
    if js:
        page.wait_for_function(CUED)  # the cue follows layout: one frame
    boxes = page.evaluate(BOXES)
    wide = [b for b in boxes if b["scrolls"]]
    assert any(b["id"] == "rotation-table" for b in wide), boxes  # the case this is about
    assert all(b["mask"] for b in wide), boxes  # each box that scrolls fades at its edge
    assert all(not b["mask"] for b in boxes if not b["scrolls"]), boxes  # and no box that fits does
    assert any(not b["scrolls"] for b in boxes), "a box that fits, to show it gets no cue"
    rotation = next(b for b in wide if b["id"] == "rotation-table")
    at_start = rotation["mask"]  # at the start, only the right edge fades: more lies that way
    assert at_start.startswith("linear-gradient(to right, rgb(0, 0, 0)") and at_start.endswith("rgba(0, 0, 0, 0))")
    if js:  # scrolled to its end, the fade moves to the left edge alone
        page.evaluate("() => { const t = document.getElementById('rotation-table'); t.scrollLeft = t.scrollWidth; }")
        page.wait_for_function(
            "() => getComputedStyle(document.getElementById('rotation-table')).maskImage"
            ".startsWith('linear-gradient(to right, rgba(0, 0, 0, 0)')"
        )
        mask = page.evaluate("() => getComputedStyle(document.getElementById('rotation-table')).maskImage")
        assert not mask.endswith("rgba(0, 0, 0, 0))"), mask  # nothing more to the right: that edge is clear


def test_at_desktop_width_the_same_table_fits_and_shows_no_cue(open_page):
    page = open_page(POSITIONAL, viewport={"width": 1300, "height": 900})
    boxes = {b["id"]: b for b in page.evaluate(BOXES)}
    assert not boxes["rotation-table"]["scrolls"] and not boxes["rotation-table"]["mask"], boxes
