"""Issue 22 in Chromium: /runs/NAME opened (steps ① to ⑥) from a checkpoint trained on a corpus with a long path
fits a phone and a desktop, JavaScript on and off, zh and en (the path wraps, wide tables scroll in their own
box); its positions count from 1, as /pipeline and /toy do; and /real numbers its sections as they are shown."""

from __future__ import annotations

import pytest
from real_support import need_minilm
from test_page_width import MEASURE
from typer.testing import CliRunner

from attnlab.cli import app as cli
from attnlab.web.app import create_app
from attnlab.web.server import background

POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。\n"
OPENED = "?text=床前明月光&prompt=床前&max_new_tokens=6&gseed=1"  # ① to ④, 月 in 床前明月光, and ⑥


@pytest.fixture(scope="module")
def runs_lab(tmp_path_factory):
    """A lab whose runs folder holds `tang`, trained (a few steps, a tiny model) on a corpus file whose path is
    long and has nowhere to break, as a downloaded corpus's often is."""
    top = tmp_path_factory.mktemp("fit")
    folder = top / ("chinese-poetry-master_" * 3) / "全唐诗_poet.tang.0-1000-2000-3000-4000-5000-6000"
    folder.mkdir(parents=True)
    corpus = folder / "poet.tang.0.json_poet.tang.1000.json_poet.tang.2000.json.txt"
    corpus.write_text(POEM * 20, encoding="utf-8")
    runs = top / "runs"
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "--corpus",
            str(corpus),
            "--steps",
            "3",
            "--layers",
            "1",
            "--heads",
            "2",
            "--d-model",
            "16",
            "--seed",
            "0",
            "--out",
            str(runs / "tang"),
        ],
    )
    assert result.exit_code == 0, result.output
    with background(create_app(runs_dir=runs)) as url:
        yield url, str(corpus)


@pytest.mark.parametrize("js, lang", [(True, "zh"), (True, "en"), (False, "zh"), (False, "en")])
def test_an_opened_checkpoint_fits_phone_and_desktop(open_page, runs_lab, js, lang):
    url, corpus = runs_lab
    en = "&lang=en" if lang == "en" else ""
    pages = [(f"/runs/tang{OPENED}{en}", "#run-summary")] + [("/runs?" + en[1:], "#runs-table")] * (not js)
    for path, shows in pages:  # the opened checkpoint in all four modes; the listing without JS, in zh and en
        page = open_page(url + path, js=js, viewport={"width": 390, "height": 900})
        assert corpus in page.inner_text(shows).replace("\n", "")  # the long path is shown, whole
        for width in (390, 1280):
            page.set_viewport_size({"width": width, "height": 900})
            m = page.evaluate(MEASURE)
            assert m["width"] <= m["view"], f"{path} at {width} px is {m['width']} px wide: {m['culprits']}"
        if shows == "#run-summary":
            assert page.locator("#gen-steps .gen-step").count() == 6  # opened: ① to ④ and ⑥ are all there
            rows = page.locator("#emb-token tbody th").all_inner_texts()
            assert rows == ["床 (1)", "前 (2)", "明 (3)", "月 (4)", "光 (5)"]  # positions count from 1


def _steps(page) -> list[str]:
    return page.locator("main h2 .step").all_inner_texts()


@pytest.mark.parametrize("js, lang", [(True, "en"), (False, "zh")])
def test_real_numbers_what_it_shows(open_page, live_update, js, lang):
    """Without a head picked the sections are 1 to 5 (they jumped from 2 to 4); a picked head's section is 3."""
    need_minilm()
    page = open_page("/real" + ("?lang=en" if lang == "en" else ""), js=js)
    assert _steps(page) == ["1", "2", "3", "4", "5"]
    if js:
        live_update(page, lambda: page.click("#map-3-5"))
    else:
        with page.expect_navigation():
            page.click("#map-3-5")
    page.wait_for_selector("#head-map")
    assert _steps(page) == ["1", "2", "3", "4", "5", "6"]
    assert page.locator("#head-h .step").inner_text() == "3"
