"""The default static site (`attnlab export-site DIR`, shared with the other export tests) in Chromium, from
file:// with JavaScript off: on a sample of pages (/toy in both languages and in a state, /lookup, a light
explain topic, the model trained for /pipeline), every link a learner can click is clicked.
Each lands on a page of the copy (no missing file, nothing asked of another host) with the static-copy
banner, and a state control lands on the state it names: a radio or checkbox is checked (or unchecked) there,
a pressed choice is the current one, a value link is the current value."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from exported_site_support import exported_site

# (page, which links): the links of <main> (the header's are clicked by tests/browser/test_exported_site.py).
SAMPLE = (
    ("toy.html", "main"),
    ("en/toy~causal=1~query=_E7_8C_AB.html", "main"),
    ("lookup.html", "main"),
    ("explain/forms.html", "main"),
    ("en/pipeline~run=poem.html", "main"),
)

# What a link is, read before the click; `state` says what the landed page must show for it.
DESCRIBE = """a => {
  const input = a.querySelector('input[type=radio], input[type=checkbox]');
  const para = a.closest('p.static-links');
  return {
    href: a.href, id: a.id, text: a.textContent.trim(),
    input: input ? {id: input.id, type: input.type, checked: input.checked} : null,
    choice: a.classList.contains('btn') && !!a.id && !!a.parentElement.querySelector('a.btn[aria-current=page]'),
    para: para ? para.id : null,
  };
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return exported_site(tmp_path_factory)


def check_landed(page, link: dict) -> None:
    assert page.locator("#static-copy").is_visible(), link
    if link["input"]:  # a prediction or the mask: its box shows the new state
        box = page.locator(f"#{link['input']['id']}")
        want = not link["input"]["checked"] if link["input"]["type"] == "checkbox" else True
        assert box.is_checked() == want, link
    elif link["choice"]:  # a query word, a head: the current one
        assert page.locator(f"#{link['id']}").get_attribute("aria-current") == "page", link
    elif link["para"]:  # a value of an explain parameter, a generation setting
        current = page.locator(f"#{link['para']} a[aria-current=page]").all_inner_texts()
        assert link["text"] in [c.strip() for c in current], link  # (a default page: every default is current)


def test_a_learner_clicks_every_link_and_state_from_file(chromium, site, patience_ms):
    root = site.as_uri() + "/"
    context = chromium.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(patience_ms)
    outside: list[str] = []
    context.on("request", lambda r: None if r.url.startswith(root) else outside.append(r.url))  # (fails: the proxy)
    page = context.new_page()
    failed: list[str] = []
    page.on(
        "requestfailed",
        lambda req: None if "ERR_ABORTED" in (req.failure or "") else failed.append(f"{req.url} {req.failure}"),
    )
    states: dict[str, int] = {}  # per sample page: how many state controls were clicked
    try:
        for file, scope in SAMPLE:
            page.goto(root + file)
            links = page.locator(f"{scope} a[href]:visible")
            found = [links.nth(i).evaluate(DESCRIBE) for i in range(links.count())]
            assert found, file
            for i, link in enumerate(found):
                want = unquote(link["href"].split("#")[0])
                if want == unquote(page.url.split("#")[0]) and "#" in link["href"]:
                    continue  # an anchor on this page (the skip link): nothing to load
                if i:
                    page.goto(root + file)
                page.locator(f"{scope} a[href]:visible").nth(i).click()
                page.wait_for_url(lambda url: unquote(url.split("#")[0]) == want)
                assert want.startswith(root), link
                check_landed(page, link)
                states[file] = states.get(file, 0) + bool(link["input"] or link["choice"] or link["para"])
    finally:
        context.close()
    assert not outside and not failed, (outside, failed)
    assert all(states.get(file) for file, _ in SAMPLE), states  # each sample page had states to click
