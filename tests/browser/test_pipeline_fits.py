"""/pipeline fits its window in the trained state too (issue 22, item 4).

After training 静夜思 the page was 1,543 px wide in a 1280 px window (its 24 x 24 attention heatmaps spilled
out of their cards; also at 1024 and 1600 px) and 13,900 px tall. A run trained once (静夜思 at the page's
hint, HINT_STEPS steps: the same 24-character text, so the same 24 x 24 maps) is opened with a generation
shown, in zh and en, JavaScript on and off, and measured at four widths on the same page.
"""

from __future__ import annotations

import time

import pytest
from test_page_width import overflow

from attnlab.lessons.pipeline.samples import HINT_CORPUS, HINT_STEPS, HINT_TEMPERATURE

WIDTHS = (390, 1024, 1280, 1600)
TALLEST = 10_000  # px at 1280: was 12,500-13,900 (eight 24 x 24 maps, one under another); now about 8,200


@pytest.fixture(scope="module")
def run_id(api) -> str:
    rid = api("/api/train", {"corpus": HINT_CORPUS, "steps": HINT_STEPS})["id"]
    deadline = time.monotonic() + 300  # a guard against a hang only: the run ends on its own
    while api(f"/api/train/{rid}")["status"] == "training":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return rid


@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_trained_page_fits_every_width(open_page, run_id, lang, js):
    query = f"run={run_id}&prompt=床&temperature={HINT_TEMPERATURE}&gseed=0" + ("&lang=en" if lang == "en" else "")
    page = open_page(f"/pipeline?{query}", js=js, viewport={"width": WIDTHS[0], "height": 900})
    assert page.locator("#attn-1-1 tbody tr").count() == 24  # the 24 x 24 maps are there
    assert page.locator("#gen-samples .sample").count() == 5
    problems = overflow(page, f"/pipeline ({lang}, js {'on' if js else 'off'})", widths=WIDTHS)
    assert not problems, "the trained page scrolls sideways:\n" + "\n".join(problems)
    page.set_viewport_size({"width": 1280, "height": 900})
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < TALLEST, f"the trained page is {height} px tall at 1280 px"
