"""/toy in a learner's first hour (issue 22 §6): the lab's summary line said which key each head weighs most
("head 1 weighs 猫 most; head 2 weighs 追 most") before prediction ③ asked whether the two heads must agree. It
says so only once ③ is committed, with JavaScript (lab.js swaps the page in) and without (the form reloads it),
in zh and en, and keeps saying it while the learner goes on exploring."""

from __future__ import annotations

import pytest

from attnlab.i18n import t

REVEAL = {"zh": "最看重「猫」", "en": "weighs 猫 most"}  # head 1's strongest key, in the summary line


@pytest.mark.parametrize("js, lang", [(True, "en"), (False, "zh")])
def test_the_summary_keeps_prediction_3_until_it_is_committed(open_page, live_update, js, lang):
    page = open_page(f"/toy?lang={lang}", js=js)
    status = page.locator("#lab-status")
    assert REVEAL[lang] not in status.inner_text()
    assert page.locator("#lab-status-wait").inner_text() == t("toy.lab.status.wait", lang)
    assert page.locator("#verdict-heads").count() == 0

    page.check("#ans-heads-no")
    if js:
        live_update(page, lambda: page.click("#commit-heads"))
    else:
        with page.expect_navigation():
            page.click("#commit-heads")
    assert page.locator("#verdict-heads").count() == 1
    assert REVEAL[lang] in status.inner_text() and page.locator("#lab-status-wait").count() == 0

    if js:  # exploring on (another query) keeps the committed answer, so the line stays complete
        live_update(page, lambda: page.click("#q-2"))
        assert page.locator("#lab-status-wait").count() == 0 and "ans_heads=no" in page.url
