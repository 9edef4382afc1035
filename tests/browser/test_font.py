"""Pages draw Chinese in the lab's own web font in a Chromium that has no Chinese font (issue 22, item 2).

Chromium is launched with a fontconfig that knows only DejaVu (what a fresh Debian machine has: the system's
font folders are left out, its aliases kept), so without
fonts.css every Chinese character would be an empty box. Chromium itself says which fonts drew a node's text
(DevTools' CSS.getPlatformFontsForNode): that works with JavaScript on and off and fails without the web font.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

DEJAVU = "/usr/share/fonts/truetype/dejavu"
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
CONF = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{dejavu}</dir><cachedir>{cache}</cachedir>
<include ignore_missing="yes">/etc/fonts/conf.d</include></fontconfig>
"""
# (JavaScript, language, a node whose text is Chinese in that language)
CASES = [
    (True, "zh", "main h1, main h2"),
    (False, "zh", "main h1, main h2"),
    (True, "en", "#lang-switch"),
    (False, "en", "#lang-switch"),
]


@pytest.fixture(scope="module")
def bare_chromium(tmp_path_factory, chromium):
    """A second Chromium, launched by the session's Playwright, that sees only DejaVu through fontconfig."""
    from browser_fixtures import CHROMIUM, CHROMIUM_ARGS

    tmp = tmp_path_factory.mktemp("fontconfig")
    conf = tmp / "fonts.conf"
    conf.write_text(CONF.format(dejavu=DEJAVU, cache=tmp / "cache"))
    env = {"FONTCONFIG_FILE": str(conf), "HOME": str(tmp), "PATH": "/usr/bin:/bin"}
    if shutil.which("fc-list"):
        chinese = subprocess.run(["fc-list", ":lang=zh"], env=env, capture_output=True, text=True, timeout=120).stdout
        assert chinese.strip() == "", f"the test's fontconfig was meant to hold no Chinese font: {chinese}"
    browser = chromium.browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, env=env)
    yield browser
    browser.close()


def fonts_drawing(page, selector: str) -> tuple[str, list[dict]]:
    """The node's text and the fonts Chromium drew it with: [{familyName, isCustomFont, glyphCount}, ...]."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    assert node, f"no {selector} on the page"
    text = page.locator(selector).first.inner_text()
    return text, cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]


def test_chinese_text_is_drawn_with_the_lab_font(bare_chromium, lab_url, new_watch, patience_ms, artifacts):
    for js, lang, selector in CASES:
        context = bare_chromium.new_context(
            java_script_enabled=js, base_url=lab_url, viewport={"width": 1000, "height": 700}
        )
        context.set_default_timeout(patience_ms)
        watch = new_watch()
        watch.attach(context)
        fetched: list[str] = []
        context.on("request", lambda r, f=fetched: f.append(r.url.rsplit("/", 1)[-1]) if ".woff" in r.url else None)
        page = context.new_page()
        page.on("console", lambda msg, w=watch: w.console_errors.append(msg.text) if msg.type == "error" else None)
        page.goto(f"/?lang={lang}")
        page.evaluate("() => document.fonts.ready")  # DevTools' evaluation runs with the page's JS off too
        assert fetched == ["AttnlabCJK-00.woff2"], fetched  # the lab's words: one small slice, not the whole font
        text, fonts = fonts_drawing(page, selector)
        chinese = len(CJK.findall(text))
        lab = [f for f in fonts if f["isCustomFont"] and f["familyName"] == "Attnlab CJK"]
        case = f"JS {'on' if js else 'off'}, {lang}: {text!r} drawn with {fonts}"
        assert chinese > 0, case
        assert lab and lab[0]["glyphCount"] >= chinese, case
        assert not any("Attnlab CJK" in f["familyName"] and not f["isCustomFont"] for f in fonts), case
        page.screenshot(path=artifacts / f"font-{lang}-{'js' if js else 'nojs'}.png")
        context.close()
        assert not watch.problems(), case + "\n" + "\n".join(watch.problems())


MARKS = "␃⏎␣✓✗▸▾✔✝"  # the lab's marks (tests/test_fonts.py scans the source for them)


@pytest.mark.parametrize("js", [True, False])
def test_the_marks_are_drawn_with_the_lab_font(bare_chromium, lab_url, new_watch, patience_ms, js):
    """The web font the pages load (the WOFF2) draws ␃ and the other marks itself, in prose and in a number cell
    (the --mono stack), so no machine falls back to a font that may not have them."""
    context = bare_chromium.new_context(java_script_enabled=js, base_url=lab_url)
    context.set_default_timeout(patience_ms)
    watch = new_watch()
    watch.attach(context)
    page = context.new_page()
    page.goto("/?lang=en")
    page.evaluate(  # DevTools' evaluation runs with the page's JS off too
        """(marks) => { for (const [id, tag] of [['marks-prose', 'p'], ['marks-cell', 'code']]) {
             const el = document.createElement(tag); el.id = id; el.textContent = marks;
             document.querySelector('main').append(el); } return document.fonts.ready.then(() => true); }""",
        MARKS,
    )
    for selector in ("#marks-prose", "#marks-cell"):
        text, fonts = fonts_drawing(page, selector)
        assert text == MARKS
        assert fonts == [
            {
                "familyName": "Attnlab CJK",
                "postScriptName": fonts[0].get("postScriptName"),
                "isCustomFont": True,
                "glyphCount": len(MARKS),
            }
        ], (selector, fonts)
    context.close()
    assert not watch.problems()


RARE = "鬱龘"  # in the lab's font (GB2312 and beyond) but in none of its own words: in later slices


@pytest.mark.parametrize("js", [True, False])
def test_a_character_outside_the_labs_words_fetches_its_slice_and_is_drawn(bare_chromium, lab_url, patience_ms, js):
    """Text the lab did not write (a learner's prompt, a generated poem) fetches the slices that hold its
    characters, and the lab's font draws them: the slicing loses no character."""
    context = bare_chromium.new_context(java_script_enabled=js, base_url=lab_url)
    context.set_default_timeout(patience_ms)
    fetched: list[str] = []
    context.on("request", lambda r: fetched.append(r.url.rsplit("/", 1)[-1]) if ".woff" in r.url else None)
    page = context.new_page()
    page.goto("/?lang=zh")
    page.evaluate(
        """(text) => { const el = document.createElement('p'); el.id = 'rare'; el.textContent = text;
             document.querySelector('main').append(el); return document.fonts.ready.then(() => true); }""",
        RARE,
    )
    text, fonts = fonts_drawing(page, "#rare")
    assert text == RARE and fonts == [
        {
            "familyName": "Attnlab CJK",
            "postScriptName": fonts[0].get("postScriptName"),
            "isCustomFont": True,
            "glyphCount": len(RARE),
        }
    ], fonts
    assert fetched[0] == "AttnlabCJK-00.woff2" and len(fetched) >= 2 and len(set(fetched)) == len(fetched), fetched
    context.close()
