"""The static site's states in Chromium, from file:// with JavaScript off: a learner clicks a query word,
the causal mask and an answer on /toy, the v₂ preset, the trained model on /pipeline and one generation
setting, and an explain value; each click lands on the pre-rendered page. (The test-sized export of
tests/export_states_support.py.)"""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from export_states_support import small_site


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return small_site(tmp_path_factory)[0]


def test_a_learner_clicks_through_the_states_from_file(chromium, site, patience_ms):
    root = site.as_uri() + "/"
    context = chromium.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(patience_ms)
    outside: list[str] = []
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(root)
                  else (outside.append(r.request.url), r.abort()))
    page = context.new_page()
    failed: list[str] = []
    page.on("requestfailed", lambda req: None if "ERR_ABORTED" in (req.failure or "")
            else failed.append(f"{req.url} {req.failure}"))
    try:
        page.goto(root + "toy.html")
        assert page.locator("#static-states").is_visible()

        def click(selector: str, landing: str) -> None:
            page.locator(selector).first.click()
            page.wait_for_url(lambda url: unquote(url).split("#")[0] == root + landing)

        click("#q-1", "toy~query=猫.html".replace("猫", "_E7_8C_AB"))
        assert "猫" in page.locator("#lab-status").inner_text()
        click("a.switch", "toy~causal=1~query=_E7_8C_AB.html")
        assert page.locator("#mask-note").is_visible() and page.locator("#causal").is_checked()
        page.goto(root + "toy.html")
        click("a:has(#ans-keys-4)", "toy~ans_keys=4.html")
        assert page.locator("#verdict-keys.right").is_visible()
        page.goto(root + "toy.html")
        click("#preset-v2", "toy~v2y=4.html")
        assert page.locator("#hand-dout").is_visible()
        assert page.locator("#in-v2y").input_value() == "4" and page.locator("#in-v2y").is_disabled()

        page.goto(root + "pipeline.html")
        click("#static-trained a", "pipeline~run=poem.html")
        page.locator("#static-generations a").nth(1).click()  # temperature 0.5
        page.wait_for_url(lambda url: "temperature=0.5" in url)
        assert page.locator("#gen-text").inner_text().startswith("床前")

        page.goto(root + "explain/forms.html")
        page.locator("#static-values a[href=\"forms~n_tgt=2.html\"]").click()
        page.wait_for_url(lambda url: unquote(url).endswith("explain/forms~n_tgt=2.html"))
        assert page.locator("#explain-figure").evaluate("img => img.complete && img.naturalWidth > 300")
    finally:
        context.close()
    assert not outside and not failed, (outside, failed)
